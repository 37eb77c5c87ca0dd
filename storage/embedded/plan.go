package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// JobSnapshot implements storage.Store: one read transaction, so job,
// allocs and deployment are mutually consistent.
func (s *Store) JobSnapshot(ctx context.Context, ns, jobID string) (*storage.JobSnapshot, error) {
	snap := &storage.JobSnapshot{}
	err := s.read(ctx, func(tx *bolt.Tx) error {
		snap.Index = getUint(tx.Bucket(bMeta).Get(keyIndex))
		job, err := getJSON[structs.Job](tx.Bucket(bJobs), key(ns, jobID))
		if err != nil {
			return err
		}
		snap.Job = job
		snap.Allocs, err = allocsByIndex(tx, bAllocsByJob, prefixKey(ns, jobID))
		if err != nil {
			return err
		}
		snap.Deployment, err = latestDeployment(tx, ns, jobID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot job %s/%s: %w", ns, jobID, err)
	}
	return snap, nil
}

// CommitPlan implements storage.Store. Everything happens in one bbolt
// write transaction: either the whole plan lands or nothing does.
func (s *Store) CommitPlan(ctx context.Context, plan *structs.Plan) (uint64, error) {
	// The placements are copied, sorted and encoded before the write:
	// evaluations do that in parallel, and only what needs the
	// transaction happens while other writes wait.
	placements, err := preparePlacements(plan.Placements, time.Now().UnixNano())
	if err != nil {
		return 0, fmt.Errorf("commit plan for eval %s: %w", plan.EvalID, err)
	}
	idx, err := s.write(ctx, func(w *wtx) error {
		return w.commitPlan(plan, placements)
	})
	if err != nil {
		return 0, fmt.Errorf("commit plan for eval %s: %w", plan.EvalID, err)
	}
	return idx, nil
}

func (w *wtx) commitPlan(plan *structs.Plan, placements []*preparedAlloc) error {
	if err := w.checkJobUnchanged(plan); err != nil {
		return err
	}
	now := time.Now().UnixNano()
	touchedNodes := map[string]bool{}

	for _, st := range plan.Stops {
		if err := w.applyStop(st, now); err != nil {
			return err
		}
		touchedNodes[st.NodeID] = true
	}
	var joined []deploymentCount
	for _, u := range plan.Updates {
		a, err := w.applyUpdate(u, now)
		if err != nil {
			return err
		}
		if a != nil {
			joined = append(joined, deploymentCount{a: a, placed: true})
		}
		touchedNodes[u.NodeID] = true
	}
	if plan.Deployment != nil {
		if err := w.upsertPlanDeployment(plan.Deployment.Copy()); err != nil {
			return err
		}
	}
	// An alloc updated in place into a deployment counts as placed in it,
	// as a new one does (Nomad's state store counts every alloc that joins
	// a deployment).
	if err := w.countDeploymentAllocs(joined); err != nil {
		return err
	}
	if err := w.insertAllocs(placements); err != nil {
		return err
	}
	placedOn := map[string][]*structs.Allocation{}
	for _, a := range plan.Placements {
		placedOn[a.NodeID] = append(placedOn[a.NodeID], a)
		touchedNodes[a.NodeID] = true
	}
	if err := w.checkCapacity(placedOn); err != nil {
		return err
	}
	for _, u := range plan.DeploymentUpdates {
		if err := w.updateDeploymentStatus(u); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return storage.Conflictf("status update of deployment %s: deployment does not exist", u.DeploymentID)
			}
			return err
		}
	}
	for _, e := range plan.Evals {
		if err := w.upsertEval(e.Copy()); err != nil {
			return err
		}
	}
	na := w.tx.Bucket(bNodeAssignment)
	for n := range touchedNodes {
		if err := na.Put([]byte(n), putUint(w.index)); err != nil {
			return err
		}
	}
	w.touchJob(plan.Namespace, plan.JobID)
	return nil
}

// checkJobUnchanged enforces invariant 1: a plan commits only if the job
// specification it was computed from is still the current one.
func (w *wtx) checkJobUnchanged(plan *structs.Plan) error {
	job, err := getJSON[structs.Job](w.tx.Bucket(bJobs), key(plan.Namespace, plan.JobID))
	if err != nil {
		return err
	}
	var cur uint64
	if job != nil {
		cur = job.JobModifyIndex
	}
	if cur != plan.JobModifyIndex {
		return storage.Conflictf("job %s/%s changed: job modify index %d, plan computed at %d",
			plan.Namespace, plan.JobID, cur, plan.JobModifyIndex)
	}
	return nil
}

func (w *wtx) applyStop(st *structs.AllocStop, now int64) error {
	a, err := getAlloc(w.tx, st.AllocID)
	if err != nil {
		return err
	}
	if a == nil {
		return storage.Conflictf("stop of alloc %s: alloc does not exist", st.AllocID)
	}
	was := holdingOf(a)
	storage.ApplyStop(a, st, now)
	return w.putServerChange(a, was, now)
}

// applyUpdate applies an in-place update; it returns the alloc when the
// update moved it into another deployment (nil otherwise).
func (w *wtx) applyUpdate(u *structs.AllocUpdate, now int64) (*structs.Allocation, error) {
	a, err := getAlloc(w.tx, u.AllocID)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, storage.Conflictf("update of alloc %s: alloc does not exist", u.AllocID)
	}
	was := holdingOf(a)
	before := a.DeploymentID
	storage.ApplyUpdate(a, u, now)
	if err := w.putServerChange(a, was, now); err != nil {
		return nil, err
	}
	if a.DeploymentID != "" && a.DeploymentID != before {
		return a, nil
	}
	return nil, nil
}

// putServerChange writes an alloc changed by the control plane: it moves
// the alloc's AllocModifyIndex, which the node agent acts on.
func (w *wtx) putServerChange(a *structs.Allocation, was holding, now int64) error {
	a.ModifyIndex = w.index
	a.AllocModifyIndex = w.index
	a.ModifyTime = now
	w.touch(storage.TableAllocs)
	w.touchJob(a.Namespace, a.JobID)
	return w.saveAlloc(was, a)
}

// preparedAlloc is a placement made ready outside the write transaction:
// the alloc as it will be stored (indexes not yet known) and its encoding
// without them.
type preparedAlloc struct {
	a    *structs.Allocation
	body []byte
}

// preparePlacements copies the placements (Job left out, times set at
// now), sorts them by ID and encodes them, and lists their node index
// keys sorted.
func preparePlacements(placements []*structs.Allocation, now int64) ([]*preparedAlloc, error) {
	out := make([]*preparedAlloc, len(placements))
	for i, in := range placements {
		a := in.Copy()
		a.Job = nil
		a.CreateIndex, a.ModifyIndex, a.AllocModifyIndex = 0, 0, 0
		if a.CreateTime == 0 {
			a.CreateTime = now
		}
		a.ModifyTime = now
		body, err := encodeAlloc(a)
		if err != nil {
			return nil, fmt.Errorf("encode alloc %s: %w", a.ID, err)
		}
		out[i] = &preparedAlloc{a: a, body: body}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].a.ID < out[j].a.ID })
	return out, nil
}

// insertAllocs writes a plan's placements. bbolt keeps a transaction's
// new keys in memory, one sorted slice per page, until it commits: keys
// that land on one page (a new job's or eval's index entries) are put in
// ascending order, so each is an append rather than a move of the whole
// slice.
func (w *wtx) insertAllocs(placements []*preparedAlloc) error {
	counts := make([]deploymentCount, 0, len(placements))
	for _, p := range placements {
		if err := w.insertAlloc(p); err != nil {
			return err
		}
		counts = append(counts, deploymentCount{a: p.a, placed: true})
	}
	byNode := make([][]byte, len(placements))
	for i, p := range placements {
		byNode[i] = key(p.a.NodeID, p.a.ID)
	}
	sort.Slice(byNode, func(i, j int) bool { return bytes.Compare(byNode[i], byNode[j]) < 0 })
	nodeIndex := w.tx.Bucket(bAllocsByNode)
	for _, k := range byNode {
		if err := nodeIndex.Put(k, nil); err != nil {
			return err
		}
	}
	return w.countDeploymentAllocs(counts)
}

// insertAlloc writes a new placement and its job and eval index entries
// (insertAllocs adds the node index entries and the deployment counts).
// Its ID is deterministic for the placement, so an existing ID means this
// placement was already committed: a conflict, never a second alloc.
func (w *wtx) insertAlloc(p *preparedAlloc) error {
	in := p.a
	if w.tx.Bucket(bAllocs).Get([]byte(in.ID)) != nil {
		return storage.Conflictf("alloc %s (%s) already exists", in.ID, in.Name)
	}
	node, err := w.node(in.NodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return storage.Conflictf("placement of %s on node %s: node does not exist", in.Name, in.NodeID)
	}
	if !node.Ready() {
		return storage.Conflictf("placement of %s on node %s: node is not ready for placements (status %s, eligibility %s, drain %t)",
			in.Name, in.NodeID, node.Status, node.SchedulingEligibility, node.Drain)
	}
	a := in
	a.CreateIndex, a.ModifyIndex, a.AllocModifyIndex = w.index, w.index, w.index
	data, err := withIndexes(p.body, w.index)
	if err != nil {
		return fmt.Errorf("encode alloc %s: %w", a.ID, err)
	}
	if err := w.saveAllocData(holding{}, a, data); err != nil {
		return err
	}
	if err := w.tx.Bucket(bAllocsByJob).Put(key(a.Namespace, a.JobID, a.ID), nil); err != nil {
		return err
	}
	if err := w.tx.Bucket(bAllocsByEval).Put(key(a.EvalID, a.ID), nil); err != nil {
		return err
	}
	if a.PreviousAllocation != "" {
		prev, err := getAlloc(w.tx, a.PreviousAllocation)
		if err != nil {
			return err
		}
		if prev != nil {
			was := holdingOf(prev)
			prev.NextAllocation = a.ID
			prev.ModifyIndex = w.index
			prev.ModifyTime = a.ModifyTime
			if err := w.saveAlloc(was, prev); err != nil {
				return err
			}
		}
	}
	w.touch(storage.TableAllocs)
	w.touchJob(a.Namespace, a.JobID)
	return nil
}

// checkCapacity enforces invariant 2 at commit time: on every node that
// receives placements, its usage record (after this plan's stops, with
// this plan's placements already counted) fits the node, and no placement
// takes one of the node's reserved host ports.
func (w *wtx) checkCapacity(placedOn map[string][]*structs.Allocation) error {
	nodes := make([]string, 0, len(placedOn))
	for n := range placedOn {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, id := range nodes {
		node, err := w.node(id)
		if err != nil {
			return err
		}
		u, err := w.usageOf(id)
		if err != nil {
			return err
		}
		if ok, dim := node.Capacity().Superset(u.res); !ok && !brokenCapacityCheck {
			return storage.Conflictf("node %s over-committed: %s exhausted", id, dim)
		}
		if len(u.clashes) > 0 {
			return storage.Conflictf("node %s over-committed: host port %d is already held by a live alloc", id, u.clashes[0])
		}
		if err := storage.CheckReservedPorts(node, placedOn[id]); err != nil {
			return err
		}
	}
	return nil
}

// latestDeployment returns the job's deployment with the highest
// CreateIndex, or nil.
func latestDeployment(tx *bolt.Tx, ns, jobID string) (*structs.Deployment, error) {
	var latest *structs.Deployment
	b := tx.Bucket(bDeployments)
	err := scanIndex(tx.Bucket(bDeploysByJob), prefixKey(ns, jobID), func(id string) error {
		d, err := getJSON[structs.Deployment](b, []byte(id))
		if err != nil || d == nil {
			return err
		}
		if latest == nil || d.CreateIndex > latest.CreateIndex ||
			(d.CreateIndex == latest.CreateIndex && bytes.Compare([]byte(d.ID), []byte(latest.ID)) > 0) {
			latest = d
		}
		return nil
	})
	return latest, err
}
