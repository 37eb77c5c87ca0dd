package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// deleteKeys deletes items in batches of 25 (BatchWriteItem; garbage
// collection is idempotent, so it need not be atomic).
func (s *Store) deleteKeys(ctx context.Context, keys []item) error {
	for len(keys) > 0 {
		n := min(len(keys), 25)
		reqs := make([]types.WriteRequest, n)
		for i, k := range keys[:n] {
			reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key(getS(k, "PK"), getS(k, "SK"))}}
		}
		keys = keys[n:]
		pending := map[string][]types.WriteRequest{s.table: reqs}
		for attempt := 0; len(pending) > 0; attempt++ {
			out, err := s.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				return wrapErr(err, "delete items")
			}
			pending = out.UnprocessedItems
			if len(pending) > 0 {
				if err := s.backoff(ctx, failThrottle, min(attempt, 5)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// GarbageCollect implements storage.Store with the embedded store's rules.
// It reads the listings of the GSIs and deletes in batches: it is meant to
// run from a scheduled function, rarely, and converges if interrupted.
func (s *Store) GarbageCollect(ctx context.Context, olderThan time.Time) (*storage.GCResult, error) {
	gc := &ddbCollector{s: s, cutoff: olderThan.UnixNano(), res: &storage.GCResult{}, nodes: map[string]bool{}, nodeDown: map[string]bool{}}
	if err := gc.run(ctx); err != nil {
		return nil, fmt.Errorf("garbage collect: %w", err)
	}
	return gc.res, nil
}

type ddbCollector struct {
	s        *Store
	cutoff   int64
	res      *storage.GCResult
	nodes    map[string]bool // nodes that lost allocs
	nodeDown map[string]bool // down or missing nodes, by ID
	nodeRecs []*nodeRecord
	idx      uint64
	tables   []string
}

func (gc *ddbCollector) run(ctx context.Context) error {
	var err error
	if gc.nodeRecs, err = gc.s.nodeRecords(ctx, ""); err != nil {
		return err
	}
	known := map[string]bool{}
	for _, r := range gc.nodeRecs {
		known[r.node.ID] = true
		if r.node.Status == structs.NodeStatusDown {
			gc.nodeDown[r.node.ID] = true
		}
	}
	finished := func(a *structs.Allocation) bool {
		if a.ClientTerminalStatus() {
			return true
		}
		return a.ServerTerminalStatus() && a.ClientStatus == structs.AllocClientStatusPending && (!known[a.NodeID] || gc.nodeDown[a.NodeID])
	}
	// Jobs: stopped or batch, everything finished and old.
	heads, err := gc.s.queryIndex(ctx, GSI1, "g1pk", "g1sk", "JOB", "")
	if err != nil {
		return err
	}
	stoppedJobs := map[string]bool{}
	liveJobs := map[string]bool{}
	for _, hk := range heads {
		parts := strings.SplitN(strings.TrimPrefix(getS(hk, "PK"), "JOB#"), "#", 2)
		if len(parts) != 2 {
			continue
		}
		ns, id := parts[0], parts[1]
		j, err := gc.s.Job(ctx, ns, id)
		if err != nil {
			continue
		}
		liveJobs[jobPK(ns, id)] = true
		if j.Stop {
			stoppedJobs[jobPK(ns, id)] = true
		}
		// A periodic or parameterized parent is kept until stopped, as
		// Nomad (it reports such a job running): it has no allocs to go by.
		if (!j.Stop && (j.Type != structs.JobTypeBatch || j.IsParent())) || j.SubmitTime >= gc.cutoff {
			continue
		}
		items, err := gc.s.queryPrefix(ctx, jobPK(ns, id), "", true)
		if err != nil {
			return err
		}
		ok := true
		var keys []item
		for _, it := range items {
			sk := getS(it, "SK")
			switch {
			case strings.HasPrefix(sk, "ALLOC#"):
				r, err := decodeAlloc(it)
				if err != nil {
					return err
				}
				if !finished(r.alloc) || r.alloc.ModifyTime >= gc.cutoff {
					ok = false
				}
				keys = append(keys, key(nodePK(r.alloc.NodeID), sk))
				gc.nodes[r.alloc.NodeID] = true
			case strings.HasPrefix(sk, "EVAL#"):
				e, err := decodeEval(it)
				if err != nil {
					return err
				}
				if !e.TerminalStatus() || e.ModifyTime >= gc.cutoff {
					ok = false
				}
				keys = append(keys, key(evalPtrPK(e.ID), skEvalPtr))
			case strings.HasPrefix(sk, "DEPLOY#"):
				keys = append(keys, key(deployPtrPK(strings.TrimPrefix(sk, "DEPLOY#")), skDeployPtr))
			}
			if !ok {
				break
			}
			if sk != skMeta {
				keys = append(keys, key(getS(it, "PK"), sk))
			}
		}
		if !ok {
			continue
		}
		if isSystemType(j.Type) {
			keys = append(keys, key(jobTypePK(j.Type), ns+"#"+id))
		}
		keys = append(keys, key(jobPK(ns, id), skMeta)) // the head goes last
		if err := gc.s.deleteKeys(ctx, keys); err != nil {
			return err
		}
		if err := gc.deleteServices(ctx, allocIDsOf(items)); err != nil {
			return err
		}
		delete(liveJobs, jobPK(ns, id))
		for _, it := range items {
			switch sk := getS(it, "SK"); {
			case strings.HasPrefix(sk, "ALLOC#"):
				gc.res.Allocs++
			case strings.HasPrefix(sk, "EVAL#"):
				gc.res.Evals++
			case strings.HasPrefix(sk, "DEPLOY#") && has(it, "v"):
				gc.res.Deployments++
			}
		}
		gc.res.Jobs++
		gc.tables = append(gc.tables, storage.TableJobs, storage.TableAllocs, storage.TableEvals, storage.TableDeployments)
	}
	// Allocs nothing will act on again.
	var allocKeys []item
	for _, shard := range allShards {
		ks, err := gc.s.queryIndex(ctx, GSI1, "g1pk", "g1sk", "ALLOC#"+shard, "")
		if err != nil {
			return err
		}
		allocKeys = append(allocKeys, ks...)
	}
	allocs, err := gc.s.batchGet(ctx, allocKeys)
	if err != nil {
		return err
	}
	var doomed []item
	var doomedIDs []string
	placedBy := map[string]bool{}
	for _, it := range allocs {
		r, err := decodeAlloc(it)
		if err != nil {
			return err
		}
		a := r.alloc
		pk := jobPK(a.Namespace, a.JobID)
		done := a.ModifyTime < gc.cutoff && finished(a) &&
			(a.ServerTerminalStatus() || a.NextAllocation != "" || !liveJobs[pk] || stoppedJobs[pk])
		if !done {
			placedBy[a.EvalID] = true
			continue
		}
		doomed = append(doomed, key(pk, allocSK(a.ID)), key(nodePK(a.NodeID), allocSK(a.ID)))
		doomedIDs = append(doomedIDs, a.ID)
		gc.nodes[a.NodeID] = true
		gc.res.Allocs++
		gc.tables = append(gc.tables, storage.TableAllocs)
	}
	if err := gc.s.deleteKeys(ctx, doomed); err != nil {
		return err
	}
	if err := gc.deleteServices(ctx, doomedIDs); err != nil {
		return err
	}
	// Terminal evals no remaining alloc was placed by.
	doomed = doomed[:0]
	for _, shard := range allShards {
		ks, err := gc.s.queryIndex(ctx, GSI1, "g1pk", "g1sk", "EVAL#"+shard, "")
		if err != nil {
			return err
		}
		es, err := gc.s.evalsByKeys(ctx, ks)
		if err != nil {
			return err
		}
		for _, e := range es {
			if !e.TerminalStatus() || e.ModifyTime >= gc.cutoff || placedBy[e.ID] {
				continue
			}
			doomed = append(doomed, key(jobPK(e.Namespace, e.JobID), evalSK(e.ID)), key(evalPtrPK(e.ID), skEvalPtr))
			gc.res.Evals++
			gc.tables = append(gc.tables, storage.TableEvals)
		}
	}
	if err := gc.s.deleteKeys(ctx, doomed); err != nil {
		return err
	}
	// Terminal deployments, except a live job's latest.
	deps, err := gc.s.Deployments(ctx, "*", "")
	if err != nil {
		return err
	}
	latest := map[string]string{}
	for _, d := range deps { // newest first
		if _, ok := latest[jobPK(d.Namespace, d.JobID)]; !ok {
			latest[jobPK(d.Namespace, d.JobID)] = d.ID
		}
	}
	doomed = doomed[:0]
	for _, d := range deps {
		pk := jobPK(d.Namespace, d.JobID)
		if d.Active() || d.ModifyTime >= gc.cutoff || (latest[pk] == d.ID && liveJobs[pk]) {
			continue
		}
		doomed = append(doomed, key(pk, deploySK(d.ID)), key(deployPtrPK(d.ID), skDeployPtr))
		gc.res.Deployments++
		gc.tables = append(gc.tables, storage.TableDeployments)
	}
	if err := gc.s.deleteKeys(ctx, doomed); err != nil {
		return err
	}
	// Job copies no assignment of their node refers to any more.
	if err := gc.collectJobCopies(ctx); err != nil {
		return err
	}
	// Down nodes without allocs.
	for _, r := range gc.nodeRecs {
		n := r.node
		if n.Status != structs.NodeStatusDown || time.Unix(n.StatusUpdatedAt, 0).UnixNano() >= gc.cutoff {
			continue
		}
		// Assignments only: items holding nothing but an agent's
		// heartbeat attributes do not keep a node.
		in := prefixQuery(gc.s.table, nodePK(n.ID), "ALLOC#", true)
		in.FilterExpression, in.Select = aws.String("attribute_exists(v)"), types.SelectCount
		assigned := false
		for p := dynamodb.NewQueryPaginator(gc.s.db, in); p.HasMorePages() && !assigned; {
			page, err := p.NextPage(ctx)
			if err != nil {
				return wrapErr(err, "allocs of node "+n.ID)
			}
			assigned = page.Count > 0
		}
		if assigned {
			continue
		}
		nodeKeys := []item{key(nodePK(n.ID), skMeta), key(nodePK(n.ID), skIdx), key(nodePK(n.ID), skHB)}
		copies, err := gc.s.queryPrefix(ctx, nodePK(n.ID), "JOBV#", true)
		if err != nil {
			return err
		}
		for _, it := range copies {
			nodeKeys = append(nodeKeys, key(getS(it, "PK"), getS(it, "SK")))
		}
		if err := gc.s.deleteKeys(ctx, nodeKeys); err != nil {
			return err
		}
		delete(gc.nodes, n.ID)
		gc.res.Nodes++
		gc.tables = append(gc.tables, storage.TableNodes)
	}
	// Agents of nodes that lost allocs must notice: move their index.
	gc.idx = gc.s.nextIndex()
	for n := range gc.nodes {
		if !known[n] {
			continue
		}
		if _, err := gc.s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &gc.s.table, Key: key(nodePK(n), skIdx),
			UpdateExpression: aws.String("SET idx = :i ADD chg :one"), ExpressionAttributeValues: item{":i": avU(gc.idx), ":one": avN(1)}}); err != nil {
			return wrapErr(err, "move assignment index of node "+n)
		}
	}
	return gc.s.bumpTables(ctx, gc.idx, gc.tables...)
}

// collectJobCopies deletes, on each node that lost allocs, the node's job
// copies that no remaining assignment refers to, unless the copy is of its
// job's current version: a plan placing allocs now places that version and
// writes its copy with them, so only a copy of an older version can be
// known to be unneeded (a new assignment never refers to one).
func (gc *ddbCollector) collectJobCopies(ctx context.Context) error {
	current := map[string]uint64{} // job PK → current version; absent: purged or collected
	known := map[string]bool{}
	var doomed []item
	for nodeID := range gc.nodes {
		items, err := gc.s.queryPrefix(ctx, nodePK(nodeID), "", true)
		if err != nil {
			return err
		}
		used := map[string]bool{}
		var copies []item
		for _, it := range items {
			sk := getS(it, "SK")
			switch {
			case strings.HasPrefix(sk, "ALLOC#") && has(it, "v"):
				a, err := decode[structs.Allocation](getB(it, "v"))
				if err != nil {
					return err
				}
				used[jobCopySK(a.Namespace, a.JobID, a.JobVersion, a.TaskGroup)] = true
			case strings.HasPrefix(sk, "JOBV#"):
				copies = append(copies, it)
			}
		}
		for _, c := range copies {
			if used[getS(c, "SK")] {
				continue
			}
			pk := jobPK(getS(c, "ns"), getS(c, "jid"))
			if !known[pk] {
				known[pk] = true
				if j, err := gc.s.Job(ctx, getS(c, "ns"), getS(c, "jid")); err == nil {
					current[pk] = j.Version
				} else if !errors.Is(err, storage.ErrNotFound) {
					return err
				}
			}
			if v, ok := current[pk]; ok && v == getU(c, "ver") {
				continue
			}
			doomed = append(doomed, key(getS(c, "PK"), getS(c, "SK")))
		}
	}
	return gc.s.deleteKeys(ctx, doomed)
}

// deleteServices removes the service registrations of collected allocs
// (reads never serve them: this only reclaims the items).
func (gc *ddbCollector) deleteServices(ctx context.Context, allocIDs []string) error {
	deleted, err := gc.s.deleteAllocServices(ctx, allocIDs)
	if deleted {
		gc.tables = append(gc.tables, storage.TableServiceRegistrations)
	}
	return err
}

// allocIDsOf lists the alloc IDs of a job partition's items.
func allocIDsOf(items []item) []string {
	var out []string
	for _, it := range items {
		if sk := getS(it, "SK"); strings.HasPrefix(sk, "ALLOC#") {
			out = append(out, strings.TrimPrefix(sk, "ALLOC#"))
		}
	}
	return out
}
