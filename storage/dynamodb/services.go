package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Service registrations (Nomad's native service discovery). Items:
//
//	registration   SVC#<ns>             <name>#<id>   v: the registration; aid, jid, nid, mi
//	alloc's list   SVCALLOC#<alloc id>  <id>          ns, svc (its service name), nid
//
// A registration is written together with its alloc's list entry, in one
// transaction that checks the alloc's master item is unchanged since it
// was read live (mi): a registration is never written for an alloc that
// is not live. The writes that later make the alloc terminal or unknown
// (plan chunks, client reports) do not carry the registrations' deletes,
// which would not fit their chunk budget; instead every read serves a
// registration only while its alloc is live and its node is not down,
// reading the masters and nodes it names (strongly consistent), and
// deletes the stale ones it found. So a stale registration is never
// served, whichever write made it stale. Right after a plan or a node's
// report stops allocs, their registrations are deleted and the table
// index moves (dropServicesOf; a crash in between leaves items reads
// never serve and garbage collection removes); the node agent deletes its
// own when the task stops.

const (
	pkServicePrefix      = "SVC#"
	pkServiceAllocPrefix = "SVCALLOC#"
)

func servicePK(ns string) string           { return pkServicePrefix + ns }
func serviceSK(name, id string) string     { return name + "#" + id }
func serviceAllocPK(allocID string) string { return pkServiceAllocPrefix + allocID }
func registrationAllocID(id string) string {
	rest, ok := strings.CutPrefix(id, "_nomad-task-")
	if !ok || len(rest) < 36 {
		return ""
	}
	return rest[:36]
}

// UpsertServiceRegistrations implements storage.Store.
func (s *Store) UpsertServiceRegistrations(ctx context.Context, nodeID string, regs []*structs.ServiceRegistration) (uint64, error) {
	var wrote uint64
	for _, in := range regs {
		idx, err := withConflictRetry(ctx, s, func() (uint64, error) { return s.upsertService(ctx, nodeID, in) })
		if err != nil {
			return 0, fmt.Errorf("upsert service registration %s of node %s: %w", in.ID, nodeID, err)
		}
		wrote = max(wrote, idx)
	}
	if wrote > 0 {
		if err := s.bumpTables(ctx, wrote, storage.TableServiceRegistrations); err != nil {
			return 0, err
		}
	}
	return wrote, nil
}

// upsertService writes one registration; 0 when nothing was written.
func (s *Store) upsertService(ctx context.Context, nodeID string, in *structs.ServiceRegistration) (uint64, error) {
	a, err := s.Alloc(ctx, in.AllocID)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if !structs.ServiceRegistrationLive(a) {
		return 0, nil
	}
	if a.NodeID != nodeID || in.NodeID != nodeID {
		return 0, fmt.Errorf("alloc %s is on node %s, not %s: %w", a.ID, a.NodeID, nodeID, storage.ErrWrongNode)
	}
	master, err := s.get(ctx, jobPK(a.Namespace, a.JobID), allocSK(a.ID), true)
	if err != nil {
		return 0, err
	}
	if master == nil {
		return 0, nil
	}
	r := in.Copy()
	r.Namespace, r.JobID = a.Namespace, a.JobID
	prev, err := s.get(ctx, servicePK(r.Namespace), serviceSK(r.ServiceName, r.ID), true)
	if err != nil {
		return 0, err
	}
	idx := s.nextIndex()
	r.CreateIndex, r.ModifyIndex = idx, idx
	regCond := aws.String("attribute_not_exists(PK)")
	vals := item{}
	if prev != nil {
		old, err := decode[structs.ServiceRegistration](getB(prev, "v"))
		if err != nil {
			return 0, err
		}
		if old.SameInstance(r) {
			return 0, nil
		}
		r.CreateIndex = old.CreateIndex
		regCond = aws.String("mi = :pmi")
		vals[":pmi"] = avU(getU(prev, "mi"))
	}
	regItem := key(servicePK(r.Namespace), serviceSK(r.ServiceName, r.ID))
	regItem["v"], regItem["mi"] = avB(encode(r)), avU(idx)
	regItem["aid"], regItem["jid"], regItem["nid"] = avS(r.AllocID), avS(r.JobID), avS(r.NodeID)
	put := &types.Put{TableName: &s.table, Item: regItem, ConditionExpression: regCond}
	if len(vals) > 0 {
		put.ExpressionAttributeValues = vals
	}
	listItem := key(serviceAllocPK(r.AllocID), r.ID)
	listItem["ns"], listItem["svc"], listItem["nid"] = avS(r.Namespace), avS(r.ServiceName), avS(r.NodeID)
	acts := []action{
		{item: types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: &s.table,
			Key: key(jobPK(a.Namespace, a.JobID), allocSK(a.ID)), ConditionExpression: aws.String("mi = :ami"),
			ExpressionAttributeValues: item{":ami": avU(getU(master, "mi"))}}},
			desc: "alloc " + a.ID + " changed while its service was registered"},
		{item: types.TransactWriteItem{Put: put}, desc: "service registration " + r.ID + " changed meanwhile"},
		{item: types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: listItem}}, desc: "alloc's registration list"},
	}
	if err := s.transact(ctx, acts); err != nil {
		return 0, raceOnConflict(err)
	}
	return idx, nil
}

// DeleteServiceRegistrations implements storage.Store.
func (s *Store) DeleteServiceRegistrations(ctx context.Context, nodeID string, ids []string) (uint64, error) {
	var wrote uint64
	for _, id := range ids {
		allocID := registrationAllocID(id)
		if allocID == "" {
			continue
		}
		entry, err := s.get(ctx, serviceAllocPK(allocID), id, true)
		if err != nil {
			return 0, fmt.Errorf("delete service registration %s: %w", id, err)
		}
		if entry == nil || getS(entry, "nid") != nodeID {
			continue // gone already, or another node's
		}
		idx := s.nextIndex()
		if err := s.deleteService(ctx, getS(entry, "ns"), getS(entry, "svc"), id, allocID); err != nil {
			return 0, fmt.Errorf("delete service registration %s: %w", id, err)
		}
		wrote = idx
	}
	if wrote > 0 {
		if err := s.bumpTables(ctx, wrote, storage.TableServiceRegistrations); err != nil {
			return 0, err
		}
	}
	return wrote, nil
}

// deleteService removes a registration and its alloc's list entry.
func (s *Store) deleteService(ctx context.Context, ns, name, id, allocID string) error {
	return s.transact(ctx, []action{
		{item: types.TransactWriteItem{Delete: &types.Delete{TableName: &s.table, Key: key(servicePK(ns), serviceSK(name, id))}}, desc: "service registration " + id},
		{item: types.TransactWriteItem{Delete: &types.Delete{TableName: &s.table, Key: key(serviceAllocPK(allocID), id)}}, desc: "alloc's registration list"},
	})
}

// DeleteServiceRegistration implements storage.Store.
func (s *Store) DeleteServiceRegistration(ctx context.Context, ns, name, id string) (uint64, error) {
	it, err := s.get(ctx, servicePK(ns), serviceSK(name, id), true)
	if err != nil {
		return 0, fmt.Errorf("delete service registration %s: %w", id, err)
	}
	if it == nil {
		return 0, storage.NotFoundf("service registration %q of service %q in namespace %q", id, name, ns)
	}
	idx := s.nextIndex()
	if err := s.deleteService(ctx, ns, name, id, getS(it, "aid")); err != nil {
		return 0, fmt.Errorf("delete service registration %s: %w", id, err)
	}
	return idx, s.bumpTables(ctx, idx, storage.TableServiceRegistrations)
}

// ServiceRegistrations implements storage.Store. All namespaces: the
// stored namespaces and "default".
func (s *Store) ServiceRegistrations(ctx context.Context, ns string) ([]*structs.ServiceRegistration, error) {
	names := []string{ns}
	if ns == "" || ns == "*" {
		stored, err := s.Namespaces(ctx)
		if err != nil {
			return nil, err
		}
		names = []string{structs.DefaultNamespace}
		for _, n := range stored {
			if n.Name != structs.DefaultNamespace {
				names = append(names, n.Name)
			}
		}
		sort.Strings(names)
	}
	out := []*structs.ServiceRegistration{}
	for _, n := range names {
		items, err := s.query(ctx, &dynamodb.QueryInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("PK = :pk"),
			ExpressionAttributeValues: item{":pk": avS(servicePK(n))}})
		if err != nil {
			return nil, fmt.Errorf("list service registrations of namespace %s: %w", n, err)
		}
		regs, err := s.liveServices(ctx, items)
		if err != nil {
			return nil, err
		}
		out = append(out, regs...)
	}
	return out, nil
}

// ServiceRegistrationsByName implements storage.Store.
func (s *Store) ServiceRegistrationsByName(ctx context.Context, ns, name string) ([]*structs.ServiceRegistration, error) {
	items, err := s.queryPrefix(ctx, servicePK(ns), name+"#", true)
	if err != nil {
		return nil, fmt.Errorf("list service %s in namespace %s: %w", name, ns, err)
	}
	return s.liveServices(ctx, items)
}

// liveServices decodes registration items (in key order: name, then ID),
// keeps those whose alloc is live and whose node is not down, and deletes
// the others.
func (s *Store) liveServices(ctx context.Context, items []item) ([]*structs.ServiceRegistration, error) {
	out := []*structs.ServiceRegistration{}
	if len(items) == 0 {
		return out, nil
	}
	regs := make([]*structs.ServiceRegistration, 0, len(items))
	var keys []item
	seen := map[string]bool{}
	for _, it := range items {
		r, err := decode[structs.ServiceRegistration](getB(it, "v"))
		if err != nil {
			return nil, fmt.Errorf("service registration %s: %w", getS(it, "SK"), err)
		}
		regs = append(regs, r)
		for _, k := range []item{key(jobPK(r.Namespace, r.JobID), allocSK(r.AllocID)), key(nodePK(r.NodeID), "META")} {
			if ks := keyString(k); !seen[ks] {
				seen[ks] = true
				keys = append(keys, k)
			}
		}
	}
	got, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("read the allocs and nodes of service registrations: %w", err)
	}
	for _, r := range regs {
		if s.serviceLive(got, r) {
			out = append(out, r)
			continue
		}
		if err := s.deleteService(ctx, r.Namespace, r.ServiceName, r.ID, r.AllocID); err != nil {
			s.log.Warn("stale service registration not deleted", zap.String("registration_id", r.ID),
				zap.String("alloc_id", r.AllocID), zap.Error(err))
		}
	}
	return out, nil
}

func (s *Store) serviceLive(got map[string]item, r *structs.ServiceRegistration) bool {
	m, ok := got[keyString(key(jobPK(r.Namespace, r.JobID), allocSK(r.AllocID)))]
	if !ok {
		return false
	}
	rec, err := decodeAlloc(m)
	if err != nil || !structs.ServiceRegistrationLive(rec.alloc) {
		return false
	}
	n, ok := got[keyString(key(nodePK(r.NodeID), "META"))]
	if !ok {
		return false
	}
	node, err := decode[structs.Node](getB(n, "v"))
	return err == nil && node.Status != structs.NodeStatusDown
}

// deleteAllocServices removes the registrations of allocs garbage
// collection removed (one query of each alloc's registration list; most
// have none). It reports whether it deleted any.
func (s *Store) deleteAllocServices(ctx context.Context, allocIDs []string) (bool, error) {
	deleted := false
	for _, id := range allocIDs {
		entries, err := s.query(ctx, &dynamodb.QueryInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("PK = :pk"),
			ExpressionAttributeValues: item{":pk": avS(serviceAllocPK(id))}})
		if err != nil {
			return deleted, fmt.Errorf("registrations of alloc %s: %w", id, err)
		}
		for _, e := range entries {
			if err := s.deleteService(ctx, getS(e, "ns"), getS(e, "svc"), getS(e, "SK"), id); err != nil {
				return deleted, fmt.Errorf("delete registration %s of alloc %s: %w", getS(e, "SK"), id, err)
			}
			deleted = true
		}
	}
	return deleted, nil
}

// dropServicesConcurrency bounds the registration-list queries after a
// write that stopped many allocs.
const dropServicesConcurrency = 16

// dropServicesOf removes, right after the write that made them terminal
// or unknown, the registrations of allocIDs, and moves the registry's
// index so that blocking reads and template watches see it. Best effort:
// a failure (or a crash before it) leaves items that reads never serve
// and garbage collection removes.
func (s *Store) dropServicesOf(ctx context.Context, allocIDs []string) {
	if len(allocIDs) == 0 {
		return
	}
	var (
		mu      sync.Mutex
		deleted bool
		wg      sync.WaitGroup
	)
	ids := make(chan string)
	for range min(dropServicesConcurrency, len(allocIDs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				d, err := s.deleteAllocServices(ctx, []string{id})
				if err != nil {
					s.log.Warn("service registrations of a stopped alloc not deleted", zap.String("alloc_id", id), zap.Error(err))
				}
				if d {
					mu.Lock()
					deleted = true
					mu.Unlock()
				}
			}
		}()
	}
	for _, id := range allocIDs {
		ids <- id
	}
	close(ids)
	wg.Wait()
	if deleted {
		if err := s.bumpTables(ctx, s.nextIndex(), storage.TableServiceRegistrations); err != nil {
			s.log.Warn("move the service registrations index", zap.Error(err))
		}
	}
}

// stoppedByPlan lists the allocs a plan makes terminal or unknown.
func stoppedByPlan(plan *structs.Plan) []string {
	var out []string
	for _, st := range plan.Stops {
		out = append(out, st.AllocID)
	}
	for _, u := range plan.Updates {
		if u.ClientStatus == structs.AllocClientStatusUnknown {
			out = append(out, u.AllocID)
		}
	}
	return out
}

// stoppedByReport lists the allocs a node's report made terminal.
func stoppedByReport(changes []*storage.ClientAllocChange) []string {
	var out []string
	for _, c := range changes {
		was := (&structs.Allocation{ClientStatus: c.PrevClientStatus}).ClientTerminalStatus()
		if c.Alloc != nil && !structs.ServiceRegistrationLive(c.Alloc) && !was {
			out = append(out, c.Alloc.ID)
		}
	}
	return out
}
