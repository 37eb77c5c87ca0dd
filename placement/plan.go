package placement

import (
	"sort"
	"time"

	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/structs"
)

// Stop descriptions, Nomad's wording.
const (
	DescAllocUpdating = "alloc is being updated due to job update"
)

// PlanRequest is what BuildPlan turns into a plan.
type PlanRequest struct {
	Eval *structs.Evaluation
	// Job is the current job version; nil when purged.
	Job *structs.Job
	// Allocs are the job's allocations as the reconciler saw them.
	Allocs []*structs.Allocation
	// Deployment is the job's latest deployment as the reconciler saw it.
	Deployment *structs.Deployment
	Result     *reconcile.Result
	// Nodes are every node with its usage; only ready ones get placements.
	Nodes         []NodeCandidate
	SnapshotIndex uint64
	Now           time.Time
	// RescheduleTracker returns the tracker a rescheduled replacement of
	// prev carries (prev's events plus this reschedule). Required when the
	// result reschedules.
	RescheduleTracker func(prev *structs.Allocation, now time.Time) *structs.RescheduleTracker
	// SchedulerAlgorithm is the cluster's scoring: binpack (default,
	// fullest fitting node first) or spread (emptiest first).
	SchedulerAlgorithm string
}

// PlanResult is the plan and what could not be placed.
type PlanResult struct {
	Plan *structs.Plan
	// FailedTGAllocs holds, per task group, the metrics of the first
	// failed placement (later failures of the group are coalesced into
	// CoalescedFailures), as Nomad reports them on the eval.
	FailedTGAllocs map[string]*structs.AllocMetric
	// QueuedAllocations counts, per task group, the placements that could
	// not be made.
	QueuedAllocations map[string]int
	// Placed counts the allocations the plan places.
	Placed int
	// DeploymentID is the deployment the plan creates or continues (the
	// evaluation records it, as Nomad's), or "".
	DeploymentID string
}

// BuildPlan turns the reconciler's decisions into a plan: stops and
// destructive updates first (their room is free for the placements that
// follow), then in-place and attribute updates, then placements chosen by
// a Placer, and the deployment and follow-up evals.
func BuildPlan(req *PlanRequest) *PlanResult {
	res := req.Result
	plan := &structs.Plan{
		EvalID: req.Eval.ID, Namespace: req.Eval.Namespace, JobID: req.Eval.JobID,
		Priority: req.Eval.Priority, SnapshotIndex: req.SnapshotIndex,
	}
	if req.Job != nil {
		plan.JobModifyIndex = req.Job.JobModifyIndex
	}
	out := &PlanResult{Plan: plan, FailedTGAllocs: map[string]*structs.AllocMetric{}, QueuedAllocations: map[string]int{}}
	if req.Job != nil {
		for _, tg := range req.Job.TaskGroups {
			out.QueuedAllocations[tg.Name] = 0
		}
	}

	// A stop tied to a placement (a rescheduled alloc) is decided with
	// that placement: until then its alloc still counts as live. The
	// other stops are released before any placement.
	roomFor := map[*reconcile.Placement]*reconcile.Stop{}
	for _, st := range res.Stop {
		if st.ForPlacement != nil {
			roomFor[st.ForPlacement] = st
		}
	}
	var live []*structs.Allocation
	for _, a := range req.Allocs {
		if !a.TerminalStatus() {
			live = append(live, a)
		}
	}
	var placer *Placer
	if req.Job != nil {
		placer = NewPlacer(req.Job, req.Nodes, live, Options{EvalID: req.Eval.ID,
			Spread: req.SchedulerAlgorithm == structs.SchedulerAlgorithmSpread})
	}

	addStops(plan, placer, res)
	deployment := activeDeployment(req)
	addUpdates(plan, res, req.Job, deployment)

	b := &placementBuilder{req: req, plan: plan, out: out, placer: placer, deployment: deployment, roomFor: roomFor,
		failedAt: map[string]int{}}
	for _, du := range res.DestructiveUpdate {
		b.place(&reconcile.Placement{Name: du.PlaceName, TaskGroup: du.PlaceTaskGroup, PreviousAlloc: du.StopAlloc})
	}
	for _, p := range res.Place {
		b.place(p)
	}

	if res.Deployment != nil {
		plan.Deployment = res.Deployment.Copy()
	} else if b.deploymentChanged && deployment != nil {
		plan.Deployment = deployment
	}
	if plan.Deployment != nil && b.deployment != nil && plan.Deployment.ID == b.deployment.ID {
		plan.Deployment = b.deployment
	}
	plan.DeploymentUpdates = append(plan.DeploymentUpdates, res.DeploymentUpdates...)
	plan.Evals = append(plan.Evals, followupEvals(req)...)
	switch {
	case plan.Deployment != nil:
		out.DeploymentID = plan.Deployment.ID
	case b.deployment != nil:
		out.DeploymentID = b.deployment.ID
	}
	return out
}

// addStops turns the reconciler's stops and the stop half of destructive
// updates into plan stops, and frees their room in the placer. Stops tied
// to a placement wait for it (see placementBuilder.place).
func addStops(plan *structs.Plan, placer *Placer, res *reconcile.Result) {
	released := map[string]bool{}
	release := func(a *structs.Allocation) {
		if placer != nil && !released[a.ID] {
			released[a.ID] = true
			placer.Release(a)
		}
	}
	for _, st := range res.Stop {
		if st.ForPlacement != nil {
			continue
		}
		addStop(plan, st)
		release(st.Alloc)
	}
	for _, du := range res.DestructiveUpdate {
		desc := du.StopStatusDescription
		if desc == "" {
			desc = DescAllocUpdating
		}
		plan.Stops = append(plan.Stops, &structs.AllocStop{
			AllocID: du.StopAlloc.ID, NodeID: du.StopAlloc.NodeID, DesiredStatus: structs.AllocDesiredStatusStop,
			DesiredDescription: desc,
		})
		release(du.StopAlloc)
	}
}

// addStop adds one of the reconciler's stops to the plan.
func addStop(plan *structs.Plan, st *reconcile.Stop) {
	plan.Stops = append(plan.Stops, &structs.AllocStop{
		AllocID: st.Alloc.ID, NodeID: st.Alloc.NodeID, DesiredStatus: structs.AllocDesiredStatusStop,
		DesiredDescription: st.StatusDescription, ClientStatus: st.ClientStatus, FollowupEvalID: st.FollowupEvalID,
	})
}

// activeDeployment returns (a copy of) the deployment new and updated
// allocs join: the one the reconciler created, else the job's current one
// if it is active and for the current job version and not being cancelled.
func activeDeployment(req *PlanRequest) *structs.Deployment {
	res := req.Result
	if res.Deployment != nil {
		return res.Deployment.Copy()
	}
	d := req.Deployment
	if d == nil || req.Job == nil || !d.Active() || d.JobVersion != req.Job.Version || d.JobCreateIndex != req.Job.CreateIndex {
		return nil
	}
	for _, u := range res.DeploymentUpdates {
		if u.DeploymentID == d.ID && u.Status == structs.DeploymentStatusCancelled {
			return nil
		}
	}
	return d.Copy()
}

// addUpdates adds in-place, attribute, disconnect and reconnect updates.
// Map-keyed results are added in alloc ID order, for a deterministic plan.
func addUpdates(plan *structs.Plan, res *reconcile.Result, job *structs.Job, deployment *structs.Deployment) {
	for _, a := range res.InPlaceUpdate {
		u := &structs.AllocUpdate{AllocID: a.ID, NodeID: a.NodeID}
		if job != nil {
			v := job.Version
			u.JobVersion = &v
		}
		if deployment != nil {
			id := deployment.ID
			u.DeploymentID = &id
		}
		plan.Updates = append(plan.Updates, u)
	}
	for _, id := range sortedKeys(res.AttributeUpdates) {
		a := res.AttributeUpdates[id]
		f := a.FollowupEvalID
		plan.Updates = append(plan.Updates, &structs.AllocUpdate{AllocID: a.ID, NodeID: a.NodeID, FollowupEvalID: &f})
	}
	for _, id := range sortedKeys(res.DisconnectUpdates) {
		a := res.DisconnectUpdates[id]
		f := a.FollowupEvalID
		plan.Updates = append(plan.Updates, &structs.AllocUpdate{AllocID: a.ID, NodeID: a.NodeID,
			ClientStatus: structs.AllocClientStatusUnknown, FollowupEvalID: &f})
	}
	for _, id := range sortedKeys(res.ReconnectUpdates) {
		a := res.ReconnectUpdates[id]
		plan.Updates = append(plan.Updates, &structs.AllocUpdate{AllocID: a.ID, NodeID: a.NodeID,
			ClientStatus: structs.AllocClientStatusRunning})
	}
}

func sortedKeys(m map[string]*structs.Allocation) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

type placementBuilder struct {
	req               *PlanRequest
	plan              *structs.Plan
	out               *PlanResult
	placer            *Placer
	deployment        *structs.Deployment
	deploymentChanged bool
	// roomFor holds the stops that exist only for a placement (Stop.
	// ForPlacement), by placement.
	roomFor map[*reconcile.Placement]*reconcile.Stop
	// tiedStops counts the tied stops committed so far; failedAt holds,
	// per group that failed to place, the count at its last failure.
	tiedStops int
	failedAt  map[string]int
}

// place chooses a node for one new alloc and adds it to the plan, or
// records why it could not be placed. A stop tied to the placement frees
// its alloc's room for it and joins the plan only when the placement is
// made; otherwise the alloc keeps its room and stays as it is.
func (b *placementBuilder) place(p *reconcile.Placement) {
	tg, name, canary, prev, reschedule := p.TaskGroup, p.Name, p.Canary, p.PreviousAlloc, p.Reschedule
	job := b.req.Job
	if job == nil || b.placer == nil || tg == nil {
		return
	}
	// Once a group failed to place, its later placements fail too, as
	// long as no room came back since: placements only take room, and
	// the untied stops were released before the first placement. Only a
	// stop tied to a placement gives room back later (its own, or, once
	// committed, what its alloc held beyond the replacement). Nomad
	// coalesces such failures without a search as well.
	tied := b.roomFor[p]
	if first, ok := b.out.FailedTGAllocs[tg.Name]; ok && tied == nil && b.failedAt[tg.Name] == b.tiedStops {
		first.CoalescedFailures++
		b.out.QueuedAllocations[tg.Name]++
		return
	}
	preferNode := ""
	var penalize map[string]bool
	if prev != nil {
		if tg.EphemeralDisk != nil && tg.EphemeralDisk.Sticky {
			preferNode = prev.NodeID
		}
		if reschedule {
			penalize = map[string]bool{prev.NodeID: true}
			if prev.RescheduleTracker != nil {
				for _, e := range prev.RescheduleTracker.Events {
					penalize[e.PrevNodeID] = true
				}
			}
		}
	}
	if tied != nil {
		b.placer.Release(tied.Alloc)
	}
	start := time.Now()
	opt, metric := b.placer.PlaceAlloc(tg, preferNode, penalize)
	metric.AllocationTime = time.Since(start)
	var node *structs.Node
	if opt != nil {
		node = opt.Node
	}
	if tied != nil {
		if node == nil {
			b.placer.Reserve(tied.Alloc)
		} else {
			addStop(b.plan, tied)
			b.tiedStops++
		}
	}
	if node == nil {
		b.out.QueuedAllocations[tg.Name]++
		if first, ok := b.out.FailedTGAllocs[tg.Name]; ok {
			first.CoalescedFailures++
		} else {
			b.out.FailedTGAllocs[tg.Name] = metric
		}
		b.failedAt[tg.Name] = b.tiedStops
		return
	}
	prevID := ""
	if prev != nil {
		prevID = prev.ID
	}
	jobVersion := job.Version
	if p.DowngradeNonCanary {
		jobVersion = p.MinJobVersion
	}
	a := &structs.Allocation{
		ID:        structs.AllocIDForPlacement(b.req.Eval.ID, name, canary, prevID),
		Namespace: job.Namespace, EvalID: b.req.Eval.ID, Name: name,
		NodeID: node.ID, NodeName: node.Name, JobID: job.ID, JobVersion: jobVersion, TaskGroup: tg.Name,
		AllocatedResources: opt.Resources(tg), Metrics: metric,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
		PreviousAllocation: prevID,
		CreateTime:         b.req.Now.UnixNano(), ModifyTime: b.req.Now.UnixNano(),
	}
	if prev != nil && reschedule && b.req.RescheduleTracker != nil {
		a.RescheduleTracker = b.req.RescheduleTracker(prev, b.req.Now)
	}
	if d := b.deployment; d != nil && !p.DowngradeNonCanary {
		a.DeploymentID = d.ID
		if canary {
			a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
			if st, ok := d.TaskGroups[tg.Name]; ok {
				st.PlacedCanaries = append(st.PlacedCanaries, a.ID)
				b.deploymentChanged = true
			}
		}
	}
	b.plan.Placements = append(b.plan.Placements, a)
	b.out.Placed++
}

// followupEvals completes the reconciler's follow-up evals with the job's
// identity and links them to the eval that created them.
func followupEvals(req *PlanRequest) []*structs.Evaluation {
	res := req.Result
	groups := make([]string, 0, len(res.DesiredFollowupEvals))
	for g := range res.DesiredFollowupEvals {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var out []*structs.Evaluation
	for _, g := range groups {
		for _, fe := range res.DesiredFollowupEvals[g] {
			e := fe.Copy()
			e.Namespace = req.Eval.Namespace
			e.JobID = req.Eval.JobID
			e.Type = req.Eval.Type
			e.Priority = req.Eval.Priority
			e.Status = structs.EvalStatusPending
			e.PreviousEval = req.Eval.ID
			if req.Job != nil {
				e.JobModifyIndex = req.Job.JobModifyIndex
			}
			out = append(out, e)
		}
	}
	return out
}
