package dynamodb

import (
	"context"
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// JobSnapshot implements storage.Store: the job head, then the job's
// allocs and deployments, all strongly consistent reads of the job's
// partition. Index is the head's plan index: CommitPlan requires it to be
// unchanged, so no plan that landed after the head was read can be missed
// by the reconciler (the allocs are read after the head).
func (s *Store) JobSnapshot(ctx context.Context, ns, jobID string) (*storage.JobSnapshot, error) {
	snap, err := s.jobSnapshot(ctx, ns, jobID)
	if err != nil {
		return nil, fmt.Errorf("snapshot job %s/%s: %w", ns, jobID, err)
	}
	return snap, nil
}

func (s *Store) jobSnapshot(ctx context.Context, ns, jobID string) (*storage.JobSnapshot, error) {
	head, err := s.readHead(ctx, ns, jobID)
	if err != nil {
		return nil, err
	}
	snap := &storage.JobSnapshot{Index: head.pIdx}
	items, err := s.queryPrefix(ctx, jobPK(ns, jobID), "ALLOC#", true)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		r, err := decodeAlloc(it)
		if err != nil {
			return nil, err
		}
		snap.Allocs = append(snap.Allocs, r.alloc)
	}
	deps, err := s.deploymentsOf(ctx, ns, jobID)
	if err != nil {
		return nil, err
	}
	if len(deps) > 0 {
		snap.Deployment = deps[0]
	}
	vc := s.newVersionCache()
	probe := snap.Allocs
	if head.exists {
		probe = append(probe[:len(probe):len(probe)], &structs.Allocation{Namespace: ns, JobID: jobID, JobVersion: head.ver})
	}
	if err := vc.load(ctx, probe); err != nil {
		return nil, err
	}
	for _, a := range snap.Allocs {
		a.Job = vc.get(ns, jobID, a.JobVersion)
	}
	if head.exists {
		if j := vc.get(ns, jobID, head.ver); j != nil {
			snap.Job = j.Copy()
			head.overlay(snap.Job)
		}
	}
	return snap, nil
}

// checkPortsFree refuses, before anything is written, placements whose host
// ports are held on their node (as CommitPlan read it, less what the plan
// releases), taken twice by the plan, or reserved on the node (its
// ReservedResources as CommitPlan read the node item): the transaction's
// conditions would refuse the first too, this names the port and keeps a
// plan from changing one port's entry twice in one transaction.
func checkPortsFree(st *planState, released map[string][]int, placeNodes map[string][]*structs.Allocation) error {
	for nodeID, list := range placeNodes {
		n := st.nodes[nodeID]
		if n == nil {
			continue
		}
		held := map[int]int{}
		for _, p := range n.ports {
			held[p]++
		}
		for _, p := range released[nodeID] {
			held[p]--
		}
		if err := storage.CheckReservedPorts(n.node, list); err != nil {
			return err
		}
		for _, a := range list {
			if !a.HoldsResources() {
				continue
			}
			for _, p := range a.AllocatedResources.HostPorts() {
				if held[p] > 0 {
					return storage.Conflictf("placement of %s on node %s: host port %d is already held by a live alloc", a.Name, nodeID, p)
				}
				held[p]++
			}
		}
	}
	return nil
}

// planState is what CommitPlan read before writing.
type planState struct {
	masters map[string]*allocRecord // alloc ID →
	nodes   map[string]*nodeRecord  // node ID →
	evals   map[string]*structs.Evaluation
	deploys map[string]*readDeployment
	vc      *versionCache
}

// CommitPlan implements storage.Store. See README.md, "Plans": the plan is
// written in atomic chunks; every chunk is guarded by the job version and
// by the plan index the snapshot read (later chunks: this plan's own), each
// node's chunk by its free capacity; the follow-up evals that the plan's
// allocs name are in the first chunk, so no alloc ever names a missing
// eval; the evaluation's own status is in the last chunk, so a crash in
// between leaves it pending and its redelivery completes the plan.
func (s *Store) CommitPlan(ctx context.Context, plan *structs.Plan) (uint64, error) {
	idx, err := s.commitPlan(ctx, plan, nil)
	if err != nil {
		return 0, fmt.Errorf("commit plan for eval %s: %w", plan.EvalID, err)
	}
	s.dropServicesOf(ctx, stoppedByPlan(plan))
	return idx, nil
}

func (s *Store) readPlanState(ctx context.Context, plan *structs.Plan) (*planState, error) {
	st := &planState{masters: map[string]*allocRecord{}, nodes: map[string]*nodeRecord{},
		evals: map[string]*structs.Evaluation{}, deploys: map[string]*readDeployment{}, vc: s.newVersionCache()}
	jpk := jobPK(plan.Namespace, plan.JobID)
	var keys []item
	for _, st := range plan.Stops {
		keys = append(keys, key(jpk, allocSK(st.AllocID)), key(nodePK(st.NodeID), skMeta))
	}
	for _, u := range plan.Updates {
		keys = append(keys, key(jpk, allocSK(u.AllocID)), key(nodePK(u.NodeID), skMeta))
	}
	for _, a := range plan.Placements {
		keys = append(keys, key(nodePK(a.NodeID), skMeta))
		if a.PreviousAllocation != "" {
			keys = append(keys, key(jpk, allocSK(a.PreviousAllocation)))
		}
	}
	for _, e := range plan.Evals {
		keys = append(keys, key(jobPK(e.Namespace, e.JobID), evalSK(e.ID)))
	}
	if plan.EvalID != "" {
		keys = append(keys, key(jpk, evalSK(plan.EvalID)))
	}
	if plan.Deployment != nil {
		keys = append(keys, key(jpk, deploySK(plan.Deployment.ID)))
	}
	for _, u := range plan.DeploymentUpdates {
		keys = append(keys, key(jpk, deploySK(u.DeploymentID)))
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		var err error
		switch sk := getS(it, "SK"); {
		case sk == skMeta:
			var r *nodeRecord
			if r, err = decodeNode(it); err == nil {
				st.nodes[r.node.ID] = r
			}
		case len(sk) > 6 && sk[:6] == "ALLOC#":
			var r *allocRecord
			if r, err = decodeAlloc(it); err == nil {
				st.masters[r.alloc.ID] = r
			}
		case len(sk) > 5 && sk[:5] == "EVAL#":
			var e *structs.Evaluation
			if e, err = decodeEval(it); err == nil {
				st.evals[e.ID] = e
			}
		case len(sk) > 7 && sk[:7] == "DEPLOY#" && has(it, "v"):
			var d *structs.Deployment
			if d, err = decodeDeployment(it); err == nil {
				st.deploys[d.ID] = &readDeployment{d: d, prevMI: getU(it, "mi")}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return st, nil
}

// planNodes is what a commit tells a node cache: the records of the
// plan's nodes as the commit read them (strongly consistent, just before
// its transactions), and, when every chunk committed, with the plan's
// change applied.
type planNodes struct {
	nodes     map[string]*nodeRecord
	committed bool
}

// commitPlan commits plan; with seen set, it reports there the node
// records it read and, after the last chunk, their usage after the plan.
func (s *Store) commitPlan(ctx context.Context, plan *structs.Plan, seen *planNodes) (uint64, error) {
	st, err := s.readPlanState(ctx, plan)
	if err != nil {
		return 0, err
	}
	if seen != nil {
		seen.nodes = st.nodes
	}
	idx := s.nextIndex()
	now := time.Now().UnixNano()
	nowT := time.Unix(0, now).UTC()
	_ = nowT

	// Apply the plan to the allocs read, in memory.
	changed := map[string]*structs.Allocation{} // alloc ID → new state
	holdBefore := map[string]bool{}
	var order []string
	touch := func(id string) (*structs.Allocation, error) {
		if a, ok := changed[id]; ok {
			return a, nil
		}
		r, ok := st.masters[id]
		if !ok {
			return nil, nil
		}
		a := r.alloc.Copy()
		holdBefore[id] = a.HoldsResources()
		changed[id] = a
		order = append(order, id)
		return a, nil
	}
	for _, stop := range plan.Stops {
		a, _ := touch(stop.AllocID)
		if a == nil {
			return 0, storage.Conflictf("stop of alloc %s: alloc does not exist", stop.AllocID)
		}
		storage.ApplyStop(a, stop, now)
		a.ModifyIndex, a.AllocModifyIndex, a.ModifyTime = idx, idx, now
	}
	for _, u := range plan.Updates {
		a, _ := touch(u.AllocID)
		if a == nil {
			return 0, storage.Conflictf("update of alloc %s: alloc does not exist", u.AllocID)
		}
		storage.ApplyUpdate(a, u, now)
		a.ModifyIndex, a.AllocModifyIndex, a.ModifyTime = idx, idx, now
	}
	var placed []*structs.Allocation
	for _, in := range plan.Placements {
		n := st.nodes[in.NodeID]
		if n == nil {
			return 0, storage.Conflictf("placement of %s on node %s: node does not exist", in.Name, in.NodeID)
		}
		if !n.node.Ready() {
			return 0, storage.Conflictf("placement of %s on node %s: node is not ready for placements (status %s, eligibility %s, drain %t)",
				in.Name, in.NodeID, n.node.Status, n.node.SchedulingEligibility, n.node.Drain)
		}
		a := in.Copy()
		a.Job = nil
		a.CreateIndex, a.ModifyIndex, a.AllocModifyIndex = idx, idx, idx
		if a.CreateTime == 0 {
			a.CreateTime = now
		}
		a.ModifyTime = now
		placed = append(placed, a)
		if a.PreviousAllocation != "" {
			if prev, _ := touch(a.PreviousAllocation); prev != nil {
				prev.NextAllocation = a.ID
				prev.ModifyIndex, prev.ModifyTime = idx, now
			}
		}
	}
	// Job versions the written allocs run (assignments carry their group).
	all := append([]*structs.Allocation(nil), placed...)
	for _, id := range order {
		all = append(all, changed[id])
	}
	if err := st.vc.load(ctx, all); err != nil {
		return 0, err
	}

	// Units: per node, releases and updates first, then placements; each
	// unit carries its node's counter change and assignment index.
	var units []*unit
	unitActs := max(3, s.cfg.ChunkActions-3) // a unit's alloc writes and job copies; plus the node's two and the head
	byNode := map[string][]string{}
	released := map[string][]int{} // node ID → host ports the plan's stops give back
	var nodeOrder []string
	for _, id := range order {
		a := changed[id]
		if _, ok := byNode[a.NodeID]; !ok {
			nodeOrder = append(nodeOrder, a.NodeID)
		}
		byNode[a.NodeID] = append(byNode[a.NodeID], id)
	}
	for _, nodeID := range nodeOrder {
		ids := byNode[nodeID]
		ws := make([]allocWrite, len(ids))
		for i, id := range ids {
			a := changed[id]
			ws[i] = s.newAllocWrite(a, st.vc.get(a.Namespace, a.JobID, a.JobVersion), idx,
				"mi = :pmi", item{":pmi": avU(st.masters[id].mi)}, fmt.Sprintf("alloc %s changed since it was read", id))
			if holdBefore[id] && !a.HoldsResources() {
				ws[i].ports = len(a.AllocatedResources.HostPorts())
			}
		}
		for _, run := range splitRuns(ws, unitActs, unitBytes) {
			u := newUnit()
			for i := run[0]; i < run[1]; i++ {
				id, a := ids[i], changed[ids[i]]
				u.add(ws[i])
				if holdBefore[id] && !a.HoldsResources() {
					r := a.AllocatedResources.Comparable()
					if st.nodes[nodeID] != nil {
						d := u.node(nodeID)
						d.cpu -= r.CPU
						d.mem -= r.MemoryMB
						d.disk -= r.DiskMB
						d.allocs--
						d.give = append(d.give, a.AllocatedResources.HostPorts()...)
						released[nodeID] = append(released[nodeID], a.AllocatedResources.HostPorts()...)
					}
					u.head(plan.Namespace, plan.JobID).live--
				}
				// Updated in place into a deployment: placed in it, as a
				// new alloc of it is (Nomad's state store counts both).
				if a.DeploymentID != "" && a.DeploymentID != st.masters[id].alloc.DeploymentID {
					u.deploy(plan.Namespace, plan.JobID, a.DeploymentID).placed[a.TaskGroup]++
				}
			}
			if st.nodes[nodeID] != nil {
				u.node(nodeID).setIdx = idx
			}
			units = append(units, u)
		}
	}
	// The plan's deployment is written (merged over the stored one) with
	// the first chunk.
	var firstUnit *unit
	if d := plan.Deployment; d != nil {
		dep := d.Copy()
		prev := st.deploys[dep.ID]
		var stored *structs.Deployment
		if prev != nil {
			stored = prev.d
		}
		storage.MergePlanDeployment(stored, dep)
		for _, up := range plan.DeploymentUpdates {
			if up.DeploymentID == dep.ID {
				dep.Status, dep.StatusDescription = up.Status, up.StatusDescription
			}
		}
		dep.ModifyIndex, dep.ModifyTime = idx, now
		if stored != nil {
			dep.CreateIndex, dep.CreateTime = stored.CreateIndex, stored.CreateTime
		} else {
			dep.CreateIndex = idx
			if dep.CreateTime == 0 {
				dep.CreateTime = now
			}
		}
		firstUnit = newUnit()
		dd := firstUnit.deploy(plan.Namespace, plan.JobID, dep.ID)
		dd.blob, dd.active, dd.mi, dd.ci, dd.isNew = encode(stripCounters(dep)), dep.Active(), idx, dep.CreateIndex, prev == nil
		if prev != nil {
			dd.prevMI = prev.prevMI
		} else {
			ptr := key(deployPtrPK(dep.ID), skDeployPtr)
			ptr["ns"], ptr["jid"] = avS(dep.Namespace), avS(dep.JobID)
			firstUnit.acts = append(firstUnit.acts, s.put(ptr, "", nil, "deployment pointer "+dep.ID))
		}
		units = append([]*unit{firstUnit}, units...)
	}
	// AllocsByEval finds an eval's allocs through its pointer, written with
	// the eval; a plan whose eval the store does not hold writes it, so
	// that its allocs are found all the same.
	if len(placed) > 0 && plan.EvalID != "" && st.evals[plan.EvalID] == nil {
		ptr := key(evalPtrPK(plan.EvalID), skEvalPtr)
		ptr["ns"], ptr["jid"] = avS(plan.Namespace), avS(plan.JobID)
		u := newUnit()
		u.acts = append(u.acts, s.put(ptr, "", nil, "eval pointer "+plan.EvalID))
		units = append([]*unit{u}, units...)
	}
	placeNodes := map[string][]*structs.Allocation{}
	var placeOrder []string
	for _, a := range placed {
		if _, ok := placeNodes[a.NodeID]; !ok {
			placeOrder = append(placeOrder, a.NodeID)
		}
		placeNodes[a.NodeID] = append(placeNodes[a.NodeID], a)
	}
	if err := checkPortsFree(st, released, placeNodes); err != nil {
		return 0, err
	}
	for _, nodeID := range placeOrder {
		list := placeNodes[nodeID]
		ws := make([]allocWrite, len(list))
		for i, a := range list {
			ws[i] = s.newAllocWrite(a, st.vc.get(a.Namespace, a.JobID, a.JobVersion), idx,
				"attribute_not_exists(PK)", nil, fmt.Sprintf("alloc %s (%s) already exists", a.ID, a.Name))
			if a.HoldsResources() {
				ws[i].ports = len(a.AllocatedResources.HostPorts())
			}
		}
		for _, run := range splitRuns(ws, unitActs, unitBytes) {
			u := newUnit()
			d := u.node(nodeID)
			d.place, d.setIdx = true, idx
			for i := run[0]; i < run[1]; i++ {
				a := list[i]
				u.add(ws[i])
				if a.HoldsResources() {
					r := a.AllocatedResources.Comparable()
					d.cpu += r.CPU
					d.mem += r.MemoryMB
					d.disk += r.DiskMB
					d.allocs++
					if hp := a.AllocatedResources.HostPorts(); len(hp) > 0 {
						d.take = append(d.take, hp...)
					}
					u.head(plan.Namespace, plan.JobID).live++
				}
				if a.DeploymentID != "" {
					u.deploy(plan.Namespace, plan.JobID, a.DeploymentID).placed[a.TaskGroup]++
				}
			}
			units = append(units, u)
		}
	}
	// Deployment status updates and evals close the plan.
	last := newUnit()
	for _, up := range plan.DeploymentUpdates {
		if up.Status == structs.DeploymentStatusSuccessful {
			if prev := st.deploys[up.DeploymentID]; prev != nil {
				last.acts = append(last.acts, s.stableAction(prev.d.Namespace, prev.d.JobID, prev.d.JobVersion))
			} else if plan.Deployment != nil && up.DeploymentID == plan.Deployment.ID {
				last.acts = append(last.acts, s.stableAction(plan.Deployment.Namespace, plan.Deployment.JobID, plan.Deployment.JobVersion))
			}
		}
		if plan.Deployment != nil && up.DeploymentID == plan.Deployment.ID {
			continue
		}
		prev := st.deploys[up.DeploymentID]
		if prev == nil {
			return 0, storage.Conflictf("status update of deployment %s: deployment does not exist", up.DeploymentID)
		}
		dep := prev.d.Copy()
		dep.Status, dep.StatusDescription = up.Status, up.StatusDescription
		dep.ModifyIndex, dep.ModifyTime = idx, now
		dd := last.deploy(plan.Namespace, plan.JobID, dep.ID)
		dd.blob, dd.active, dd.mi, dd.ci, dd.prevMI = encode(stripCounters(dep)), dep.Active(), idx, dep.CreateIndex, prev.prevMI
	}
	// A follow-up eval that the plan's allocs point at (FollowupEvalID) is
	// written in the first chunk, before any alloc names it: were it in
	// the last, a plan cut short after the alloc chunks would leave allocs
	// waiting for an eval that does not exist, never rescheduled. Written
	// early and the rest cut short, it is one spare evaluation.
	pointed := followupsNamed(changed, placed)
	first := newUnit()
	for _, in := range plan.Evals {
		prev := st.evals[in.ID]
		e := in.Copy()
		stampEval(e, prev, idx, now)
		u := last
		if pointed[e.ID] && e.ID != plan.EvalID {
			u = first
		}
		u.acts = append(u.acts, s.evalActions(e, prev)...)
		h := u.head(e.Namespace, e.JobID)
		h.open += openDelta(prev, e)
		h.seen = true
	}
	if first.count() > 0 {
		units = append([]*unit{first}, units...)
	}
	units = append(units, last)

	chunks := pack(units, s.cfg.ChunkActions-1) // one action is the plan's head
	if len(chunks) == 0 {
		chunks = []*unit{newUnit()}
	}
	for k, c := range chunks {
		h := c.head(plan.Namespace, plan.JobID)
		h.planIdx, h.guardJMI, h.jmi, h.seen = idx, true, plan.JobModifyIndex, h.seen || len(placed) > 0
		if k == 0 {
			h.guardPlanIdx = plan.SnapshotIndex
		} else {
			h.guardPlanIdx = idx
		}
		if err := s.transact(ctx, s.render(c)); err != nil {
			if k > 0 {
				s.log.Warn("plan partly committed; the next evaluation completes it", zap.String("eval_id", plan.EvalID),
					zap.String("job_id", plan.JobID), zap.Int("chunks_committed", k), zap.Int("chunks", len(chunks)), zap.Error(err))
			}
			return 0, err
		}
		if s.cfg.AfterChunk != nil {
			if err := s.cfg.AfterChunk(plan, k+1); err != nil {
				return 0, err
			}
		}
	}
	tables := []string{storage.TableJobs}
	if len(order) > 0 || len(placed) > 0 {
		tables = append(tables, storage.TableAllocs)
	}
	if plan.Deployment != nil || len(plan.DeploymentUpdates) > 0 {
		tables = append(tables, storage.TableDeployments)
	}
	if len(plan.Evals) > 0 {
		tables = append(tables, storage.TableEvals)
	}
	if seen != nil {
		seen.nodes, seen.committed = applyNodeDeltas(st.nodes, chunks), true
	}
	sort.Strings(tables)
	if err := s.bumpTables(ctx, idx, tables...); err != nil {
		return 0, err
	}
	return idx, nil
}

// applyNodeDeltas returns copies of the node records read with the
// chunks' usage changes applied: what the node items hold after the plan
// (unless another writer changed them meanwhile).
func applyNodeDeltas(read map[string]*nodeRecord, chunks []*unit) map[string]*nodeRecord {
	out := make(map[string]*nodeRecord, len(read))
	for id, r := range read {
		c := *r
		out[id] = &c
	}
	for _, c := range chunks {
		for id, d := range c.nodes {
			r := out[id]
			if r == nil {
				continue
			}
			r.used.CPU += d.cpu
			r.used.MemoryMB += d.mem
			r.used.DiskMB += d.disk
			r.allocs += d.allocs
			take, give := d.netPorts()
			if len(take) == 0 && len(give) == 0 {
				continue
			}
			held := map[int]bool{}
			for _, p := range r.ports {
				held[p] = true
			}
			for _, p := range give {
				delete(held, p)
			}
			for _, p := range take {
				held[p] = true
			}
			ports := make([]int, 0, len(held))
			for p := range held {
				ports = append(ports, p)
			}
			sort.Ints(ports)
			r.ports = ports
		}
	}
	return out
}

// followupsNamed returns the IDs of the follow-up evals that the plan's
// changed and placed allocs name in FollowupEvalID.
func followupsNamed(changed map[string]*structs.Allocation, placed []*structs.Allocation) map[string]bool {
	ids := map[string]bool{}
	for _, a := range changed {
		if a.FollowupEvalID != "" {
			ids[a.FollowupEvalID] = true
		}
	}
	for _, a := range placed {
		if a.FollowupEvalID != "" {
			ids[a.FollowupEvalID] = true
		}
	}
	return ids
}
