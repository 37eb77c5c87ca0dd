package dynamodb

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// addEvals adds the writes of evals (stamped at idx) and their jobs' open
// counts to u; the stored evals are read first.
func (s *Store) addEvals(ctx context.Context, u *unit, idx uint64, evals []*structs.Evaluation) error {
	if len(evals) == 0 {
		return nil
	}
	keys := make([]item, len(evals))
	for i, e := range evals {
		keys[i] = key(jobPK(e.Namespace, e.JobID), evalSK(e.ID))
	}
	cur, err := s.batchGet(ctx, keys)
	if err != nil {
		return err
	}
	now := time.Now().UnixNano()
	for i, in := range evals {
		var prev *structs.Evaluation
		if it := cur[keyString(keys[i])]; it != nil {
			if prev, err = decodeEval(it); err != nil {
				return err
			}
		}
		e := in.Copy()
		stampEval(e, prev, idx, now)
		u.acts = append(u.acts, s.evalActions(e, prev)...)
		h := u.head(e.Namespace, e.JobID)
		h.open += openDelta(prev, e)
		h.seen = true
	}
	return nil
}

// readDeploymentByID resolves a deployment through its pointer.
func (s *Store) readDeploymentByID(ctx context.Context, id string) (*readDeployment, error) {
	ptr, err := s.get(ctx, deployPtrPK(id), skDeployPtr, true)
	if err != nil {
		return nil, err
	}
	if ptr == nil {
		return nil, storage.NotFoundf("deployment %q", id)
	}
	it, err := s.get(ctx, jobPK(getS(ptr, "ns"), getS(ptr, "jid")), deploySK(id), true)
	if err != nil {
		return nil, err
	}
	if it == nil || !has(it, "v") {
		return nil, storage.NotFoundf("deployment %q", id)
	}
	d, err := decodeDeployment(it)
	if err != nil {
		return nil, err
	}
	return &readDeployment{d: d, prevMI: getU(it, "mi")}, nil
}

// stableAction marks a job version stable (a top-level attribute over the
// version's blob).
func (s *Store) stableAction(ns, job string, version uint64) action {
	return s.update(key(jobPK(ns, job), versionSK(version)), "SET stable = :t", "attribute_exists(PK)", nil,
		item{":t": avBool(true)}, fmt.Sprintf("job %s/%s version %d does not exist", ns, job, version))
}

// writeDeployment writes a changed deployment (and evals) guarded by its
// modify index.
func (s *Store) writeDeployment(ctx context.Context, rd *readDeployment, extra []action, evals []*structs.Evaluation) (uint64, error) {
	idx, err := s.nextIndex(ctx)
	if err != nil {
		return 0, err
	}
	d := rd.d
	d.ModifyIndex, d.ModifyTime = idx, time.Now().UnixNano()
	u := newUnit()
	dd := u.deploy(d.Namespace, d.JobID, d.ID)
	dd.blob, dd.mi, dd.ci, dd.prevMI = encode(stripCounters(d)), idx, d.CreateIndex, rd.prevMI
	u.acts = append(u.acts, extra...)
	if err := s.addEvals(ctx, u, idx, evals); err != nil {
		return 0, err
	}
	for _, c := range pack([]*unit{u}, s.cfg.ChunkActions) {
		if err := s.transact(ctx, s.render(c)); err != nil {
			return 0, raceOnConflict(err)
		}
	}
	return idx, s.bumpTables(ctx, idx, storage.TableDeployments, storage.TableEvals, storage.TableJobs)
}

// UpdateDeploymentStatus implements storage.Store.
func (s *Store) UpdateDeploymentStatus(ctx context.Context, up *structs.DeploymentStatusUpdate, evals ...*structs.Evaluation) (uint64, error) {
	idx, err := withConflictRetry(ctx, s, func() (uint64, error) {
		rd, err := s.readDeploymentByID(ctx, up.DeploymentID)
		if err != nil {
			return 0, err
		}
		rd.d.Status, rd.d.StatusDescription = up.Status, up.StatusDescription
		var extra []action
		if up.Status == structs.DeploymentStatusSuccessful {
			extra = append(extra, s.stableAction(rd.d.Namespace, rd.d.JobID, rd.d.JobVersion))
		}
		return s.writeDeployment(ctx, rd, extra, evals)
	})
	if err != nil {
		return 0, fmt.Errorf("update status of deployment %s: %w", up.DeploymentID, err)
	}
	return idx, nil
}

// PromoteDeployment implements storage.Store.
func (s *Store) PromoteDeployment(ctx context.Context, id string, groups []string, evals ...*structs.Evaluation) (uint64, error) {
	idx, err := withConflictRetry(ctx, s, func() (uint64, error) {
		rd, err := s.readDeploymentByID(ctx, id)
		if err != nil {
			return 0, err
		}
		want := map[string]bool{}
		for _, g := range groups {
			want[g] = true
		}
		for name, g := range rd.d.TaskGroups {
			if g.DesiredCanaries > 0 && (len(groups) == 0 || want[name]) {
				g.Promoted = true
			}
		}
		if rd.d.Status == structs.DeploymentStatusRunning {
			rd.d.StatusDescription = structs.DeploymentStatusDescriptionRunning
		}
		return s.writeDeployment(ctx, rd, nil, evals)
	})
	if err != nil {
		return 0, fmt.Errorf("promote deployment %s: %w", id, err)
	}
	return idx, nil
}

// Deployments implements storage.Store (gsi1, then strongly consistent
// reads).
func (s *Store) Deployments(ctx context.Context, ns, prefix string) ([]*structs.Deployment, error) {
	var keys []item
	for _, shard := range shardsFor(prefix) {
		ks, err := s.queryIndex(ctx, GSI1, "g1pk", "g1sk", "DEPLOY#"+shard, prefix)
		if err != nil {
			return nil, err
		}
		keys = append(keys, ks...)
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	var out []*structs.Deployment
	for _, it := range items {
		if !has(it, "v") {
			continue
		}
		d, err := decodeDeployment(it)
		if err != nil {
			return nil, err
		}
		if ns != "" && ns != "*" && d.Namespace != ns {
			continue
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreateIndex != out[j].CreateIndex {
			return out[i].CreateIndex > out[j].CreateIndex
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// changeNode is a read-modify-write of a node with evals.
func (s *Store) changeNode(ctx context.Context, nodeID string, fn func(n *structs.Node) bool, evals []*structs.Evaluation) (*structs.Node, error) {
	return withConflictRetry(ctx, s, func() (*structs.Node, error) {
		rec, err := s.readNode(ctx, nodeID)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return nil, storage.NotFoundf("node %q", nodeID)
		}
		n := rec.node.Copy()
		if !fn(n) && len(evals) == 0 {
			return n, nil
		}
		idx, err := s.nextIndex(ctx)
		if err != nil {
			return nil, err
		}
		n.ModifyIndex = idx
		if err := s.writeNode(ctx, n, rec, evals...); err != nil {
			return nil, err
		}
		return n, s.bumpTables(ctx, idx, storage.TableNodes, storage.TableEvals)
	})
}

// UpdateNodeDrain implements storage.Store.
func (s *Store) UpdateNodeDrain(ctx context.Context, nodeID string, strategy *structs.DrainStrategy, markEligible bool, evals ...*structs.Evaluation) (*structs.Node, error) {
	return s.changeNode(ctx, nodeID, func(n *structs.Node) bool {
		if strategy != nil {
			d := *strategy
			n.Drain, n.DrainStrategy, n.SchedulingEligibility = true, &d, structs.NodeSchedulingIneligible
		} else {
			n.Drain, n.DrainStrategy = false, nil
			if markEligible {
				n.SchedulingEligibility = structs.NodeSchedulingEligible
			}
		}
		return true
	}, evals)
}

// UpdateNodeEligibility implements storage.Store.
func (s *Store) UpdateNodeEligibility(ctx context.Context, nodeID, eligibility string) (*structs.Node, error) {
	return s.changeNode(ctx, nodeID, func(n *structs.Node) bool {
		if n.SchedulingEligibility == eligibility {
			return false
		}
		n.SchedulingEligibility = eligibility
		return true
	}, nil)
}

// UpdateAllocDesiredTransitions implements storage.Store.
func (s *Store) UpdateAllocDesiredTransitions(ctx context.Context, transitions map[string]*structs.DesiredTransition, evals ...*structs.Evaluation) (uint64, error) {
	idx, err := withConflictRetry(ctx, s, func() (uint64, error) {
		idx, err := s.nextIndex(ctx)
		if err != nil {
			return 0, err
		}
		ids := make([]string, 0, len(transitions))
		for id := range transitions {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var units []*unit
		vc := s.newVersionCache()
		now := time.Now().UnixNano()
		for _, id := range ids {
			tr := transitions[id]
			if tr == nil {
				continue
			}
			rec, err := s.allocRecordByID(ctx, id)
			if err != nil {
				return 0, err
			}
			if rec == nil {
				continue
			}
			a := rec.alloc
			a.DesiredTransition = *tr
			a.ModifyIndex, a.ModifyTime = idx, now
			if err := vc.load(ctx, []*structs.Allocation{a}); err != nil {
				return 0, err
			}
			master, assign := allocItems(a, vc.get(a.Namespace, a.JobID, a.JobVersion))
			u := newUnit()
			u.acts = append(u.acts, s.put(master, "mi = :pmi", item{":pmi": avU(rec.mi)}, fmt.Sprintf("alloc %s changed since it was read", id)),
				s.put(assign, "", nil, "assignment "+id))
			units = append(units, u)
		}
		last := newUnit()
		if err := s.addEvals(ctx, last, idx, evals); err != nil {
			return 0, err
		}
		units = append(units, last)
		for _, c := range pack(units, s.cfg.ChunkActions) {
			if err := s.transact(ctx, s.render(c)); err != nil {
				return 0, raceOnConflict(err)
			}
		}
		return idx, s.bumpTables(ctx, idx, storage.TableAllocs, storage.TableEvals, storage.TableJobs)
	})
	if err != nil {
		return 0, fmt.Errorf("update desired transitions: %w", err)
	}
	return idx, nil
}

// allocRecordByID finds a master alloc by ID (gsi1) and reads it strongly
// consistent; nil when unknown.
func (s *Store) allocRecordByID(ctx context.Context, id string) (*allocRecord, error) {
	keys, err := s.queryIndex(ctx, GSI1, "g1pk", "g1sk", "ALLOC#"+idShard(id), id)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if getS(k, "g1sk") != id {
			continue
		}
		it, err := s.get(ctx, getS(k, "PK"), getS(k, "SK"), true)
		if err != nil || it == nil {
			return nil, err
		}
		return decodeAlloc(it)
	}
	return nil, nil
}

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
	if gc.idx, err = gc.s.nextIndex(ctx); err != nil {
		return err
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
		if (!j.Stop && j.Type != structs.JobTypeBatch) || j.SubmitTime >= gc.cutoff {
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
		keys = append(keys, key(jobPK(ns, id), skMeta)) // the head goes last
		if err := gc.s.deleteKeys(ctx, keys); err != nil {
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
		gc.nodes[a.NodeID] = true
		gc.res.Allocs++
		gc.tables = append(gc.tables, storage.TableAllocs)
	}
	if err := gc.s.deleteKeys(ctx, doomed); err != nil {
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
	// Down nodes without allocs.
	for _, r := range gc.nodeRecs {
		n := r.node
		if n.Status != structs.NodeStatusDown || time.Unix(n.StatusUpdatedAt, 0).UnixNano() >= gc.cutoff {
			continue
		}
		out, err := gc.s.db.Query(ctx, &dynamodb.QueryInput{TableName: &gc.s.table, ConsistentRead: aws.Bool(true), Limit: aws.Int32(1),
			KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :p)"),
			ExpressionAttributeValues: item{":pk": avS(nodePK(n.ID)), ":p": avS("ALLOC#")}})
		if err != nil {
			return wrapErr(err, "allocs of node "+n.ID)
		}
		if len(out.Items) > 0 {
			continue
		}
		if err := gc.s.deleteKeys(ctx, []item{key(nodePK(n.ID), skMeta), key(nodePK(n.ID), skIdx), key(nodePK(n.ID), skHB)}); err != nil {
			return err
		}
		delete(gc.nodes, n.ID)
		gc.res.Nodes++
		gc.tables = append(gc.tables, storage.TableNodes)
	}
	// Agents of nodes that lost allocs must notice: move their index.
	for n := range gc.nodes {
		if !known[n] {
			continue
		}
		if _, err := gc.s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &gc.s.table, Key: key(nodePK(n), skIdx),
			UpdateExpression: aws.String("SET idx = :i"), ExpressionAttributeValues: item{":i": avU(gc.idx)}}); err != nil {
			return wrapErr(err, "move assignment index of node "+n)
		}
	}
	return gc.s.bumpTables(ctx, gc.idx, gc.tables...)
}
