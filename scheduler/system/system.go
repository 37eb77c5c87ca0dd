// Package system is drover's scheduler for system and sysbatch jobs, as
// Nomad's system scheduler (which is not the reconciler): every eligible
// node runs one alloc of each of the job's groups (count of them for a
// sysbatch group), so the question is never where to place but, node by
// node, what the node lacks, what it runs that it should not, and what
// must move to the job's new version.
//
// It decides, for each node and each required alloc name:
//   - place an alloc on a ready node of the job's pool and datacenters that
//     passes the group's constraints and has room (the same feasibility,
//     resource and port checks as service placement, on that node only); a
//     node where the group is infeasible is left out silently, a node where
//     it does not fit is a failed placement (FailedTGAllocs, and a blocked
//     eval that retries when capacity appears);
//   - a sysbatch alloc that finished is not run again while the job is
//     unchanged; a new node gets one;
//   - stop the allocs a node should not run: names the job no longer has, a
//     stopped or purged job, nodes that left the job's pool or datacenters;
//     an alloc marked for migration (a drain) is stopped and not replaced;
//     an alloc on a down or missing node is lost;
//   - keep the allocs of nodes that are not ready but not gone (ineligible,
//     draining): until the drainer marks them, or until the job changes
//     (then they are stopped, not replaced), as Nomad's node reconciler;
//   - move allocs to a new job version in place when nothing their tasks
//     were started with changed, else replace them on their node, at most
//     the group's update max_parallel per evaluation, the rest by a
//     rolling-update evaluation after the update's stagger (Nomad's system
//     rolling update, which has no deployment).
//
// It is a pure function of its Input: no I/O, no wall clock (Input.Now).
// Nodes are visited in ID order and alloc IDs derive from (eval, name,
// node, previous alloc), so the same input gives the same plan and a
// replayed commit cannot place twice. The plan goes through the same
// commit as a service job's (capacity and port checks, job version guard).
package system

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/drover-sched/drover/placement"
	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/structs"
)

// Stop descriptions, Nomad's wording.
const (
	DescNotNeeded    = reconcile.StatusAllocNotNeeded
	DescMigrating    = reconcile.StatusAllocMigrating
	DescLost         = reconcile.StatusAllocLost
	DescUpdating     = placement.DescAllocUpdating
	DescRollingEval  = "created to continue a rolling update"
	DescDisconnected = reconcile.FollowupDescDisconnectTimeout
)

// Input is everything the system scheduler reads.
type Input struct {
	// Eval is the evaluation being processed.
	Eval *structs.Evaluation
	// Job is the current job version; nil when purged. A stopped job
	// stops everything.
	Job *structs.Job
	// Allocs are every alloc of the job, terminal ones included, each with
	// Job set to the version it runs.
	Allocs []*structs.Allocation
	// Nodes are the candidate nodes (the job's pool and datacenters) and
	// the nodes the job's allocs are on, with their usage.
	Nodes []placement.NodeCandidate
	// Update decides whether an alloc moves to the new job version in
	// place or is replaced (placement.UpdateType's rules).
	Update reconcile.UpdateFunc
	// SnapshotIndex is the state index the input was read at.
	SnapshotIndex uint64
	// Now is the clock.
	Now time.Time
}

// Result is the plan and what it could not do.
type Result struct {
	*placement.PlanResult
	// Annotations are the decisions per group (Nomad's DesiredTGUpdates).
	Annotations *structs.PlanAnnotations
	// Exhausted reports that a placement failed for lack of room or ports
	// (not only infeasible nodes): the evaluation blocks until capacity
	// appears.
	Exhausted bool
}

// nodeView is one node as the scheduler sees it.
type nodeView struct {
	node     *structs.Node // nil: the node no longer exists
	eligible bool          // ready, in the job's pool and datacenters
	tainted  bool          // missing, down, disconnected or draining
}

// run is one evaluation's state.
type run struct {
	in      *Input
	job     *structs.Job
	plan    *structs.Plan
	res     *Result
	placer  *placement.Placer
	nodes   map[string]*nodeView
	updates map[string]*structs.DesiredUpdates
	// destructive holds, per group, the allocs to replace, node order.
	destructive map[string][]*structs.Allocation
	// placed and live count, per group, the allocs placed by the plan and
	// those kept; filtered merges the metrics of infeasible nodes.
	placed, kept map[string]int
	filtered     map[string]*structs.AllocMetric
	released     map[string]bool
	followups    map[string]*structs.Evaluation
}

// BuildPlan computes the plan of one evaluation of a system or sysbatch
// job.
func BuildPlan(in *Input) *Result {
	r := &run{in: in, job: in.Job, nodes: map[string]*nodeView{}, updates: map[string]*structs.DesiredUpdates{},
		destructive: map[string][]*structs.Allocation{}, placed: map[string]int{}, kept: map[string]int{},
		filtered: map[string]*structs.AllocMetric{}, released: map[string]bool{}, followups: map[string]*structs.Evaluation{}}
	ev := in.Eval
	r.plan = &structs.Plan{EvalID: ev.ID, Namespace: ev.Namespace, JobID: ev.JobID, Priority: ev.Priority, SnapshotIndex: in.SnapshotIndex}
	r.res = &Result{PlanResult: &placement.PlanResult{Plan: r.plan, FailedTGAllocs: map[string]*structs.AllocMetric{}, QueuedAllocations: map[string]int{}}}
	running := r.job != nil && !r.job.Stop
	if r.job != nil {
		r.plan.JobModifyIndex = r.job.JobModifyIndex
		for _, tg := range r.job.TaskGroups {
			r.res.QueuedAllocations[tg.Name] = 0
			r.updates[tg.Name] = &structs.DesiredUpdates{}
		}
	}
	var live []*structs.Allocation
	for _, a := range in.Allocs {
		if !a.TerminalStatus() {
			live = append(live, a)
		}
	}
	for _, c := range in.Nodes {
		n := c.Node
		v := &nodeView{node: n, eligible: running && placement.Eligible(r.job, n)}
		v.tainted = n.Status == structs.NodeStatusDown || n.Status == structs.NodeStatusDisconnected || n.Drain
		r.nodes[n.ID] = v
	}
	if running {
		r.placer = placement.NewPlacer(r.job, in.Nodes, live, placement.Options{EvalID: ev.ID})
	}

	// What each node runs, and what it lacks.
	required := r.requiredNames()
	liveOn := map[string][]*structs.Allocation{}
	lastTerminal := map[[2]string]*structs.Allocation{} // (node, name) → newest terminal alloc
	for _, a := range in.Allocs {
		if !a.TerminalStatus() {
			liveOn[a.NodeID] = append(liveOn[a.NodeID], a)
			continue
		}
		k := [2]string{a.NodeID, a.Name}
		if prev := lastTerminal[k]; prev == nil || a.CreateIndex > prev.CreateIndex || (a.CreateIndex == prev.CreateIndex && a.ID > prev.ID) {
			lastTerminal[k] = a
		}
	}
	nodeIDs := make([]string, 0, len(r.nodes)+len(liveOn))
	for id := range r.nodes {
		nodeIDs = append(nodeIDs, id)
	}
	for id := range liveOn {
		if _, ok := r.nodes[id]; !ok {
			r.nodes[id] = &nodeView{tainted: true} // garbage collected
			nodeIDs = append(nodeIDs, id)
		}
	}
	sort.Strings(nodeIDs)

	var places []placeOn
	for _, id := range nodeIDs {
		v := r.nodes[id]
		allocs := liveOn[id]
		// By name; among allocs of one name, the current version's
		// first, then the newest.
		sort.Slice(allocs, func(i, j int) bool {
			a, b := allocs[i], allocs[j]
			if a.Name != b.Name {
				return a.Name < b.Name
			}
			if ca, cb := r.job != nil && sameVersion(a, r.job), r.job != nil && sameVersion(b, r.job); ca != cb {
				return ca
			}
			if a.CreateIndex != b.CreateIndex {
				return a.CreateIndex > b.CreateIndex
			}
			return a.ID < b.ID
		})
		have := map[string]bool{}
		for _, a := range allocs {
			if have[a.Name] {
				// A second live alloc of the name on the node (one of an
				// incarnation purged meanwhile, whose stop was not
				// evaluated yet): only the first is kept or replaced.
				r.stop(a, DescNotNeeded, "")
				if u := r.updates[a.TaskGroup]; u != nil {
					u.Stop++
				}
				continue
			}
			have[a.Name] = true
			r.existing(a, v, required[a.Name])
		}
		if !v.eligible || v.tainted {
			continue
		}
		for _, name := range sortedNames(required) {
			if have[name] {
				continue
			}
			tg := required[name]
			prev := lastTerminal[[2]string{id, name}]
			if r.job.Type == structs.JobTypeSysBatch && prev != nil && sameVersion(prev, r.job) {
				r.updates[tg.Name].Ignore++ // ran once; not again while the job is unchanged
				continue
			}
			places = append(places, placeOn{tg: tg, name: name, node: id, prev: prev})
		}
	}

	// Stops free their room first, then the replacements and new allocs
	// are placed, node by node.
	if running {
		r.rollDestructive(&places)
		for _, p := range places {
			r.place(p)
		}
		r.reportFiltered()
	}
	r.plan.Evals = r.followupEvals()
	r.res.Placed = len(r.plan.Placements)
	r.res.Annotations = &structs.PlanAnnotations{DesiredTGUpdates: r.updates}
	if len(r.updates) == 0 {
		r.res.Annotations = nil
	}
	return r.res
}

// placeOn is one alloc to place on one node; prev is the alloc it
// replaces (stopped in this plan, or finished before).
type placeOn struct {
	tg   *structs.TaskGroup
	name string
	node string
	prev *structs.Allocation
}

// requiredNames are the alloc names every eligible node runs: count names
// per group (Nomad's materialized system task groups).
func (r *run) requiredNames() map[string]*structs.TaskGroup {
	out := map[string]*structs.TaskGroup{}
	if r.job == nil || r.job.Stop {
		return out
	}
	for _, tg := range r.job.TaskGroups {
		for i := 0; i < tg.Count; i++ {
			out[structs.AllocName(r.job.ID, tg.Name, uint(i))] = tg
		}
	}
	return out
}

func sortedNames(m map[string]*structs.TaskGroup) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sameVersion reports whether alloc a runs the job's current version.
func sameVersion(a *structs.Allocation, job *structs.Job) bool {
	if a.Job != nil {
		return a.Job.Version == job.Version && a.Job.CreateIndex == job.CreateIndex
	}
	return a.JobVersion == job.Version
}

// existing decides what becomes of one live alloc on node v; tg is the
// group its name belongs to in the current job (nil: none).
func (r *run) existing(a *structs.Allocation, v *nodeView, tg *structs.TaskGroup) {
	group := a.TaskGroup
	count := func(f func(u *structs.DesiredUpdates)) {
		if u := r.updates[group]; u != nil {
			f(u)
		}
	}
	n := v.node
	switch {
	case n == nil || n.Status == structs.NodeStatusDown:
		r.stop(a, DescLost, structs.AllocClientStatusLost)
		count(func(u *structs.DesiredUpdates) { u.Stop++ })
		return
	case tg == nil:
		r.stop(a, DescNotNeeded, "")
		count(func(u *structs.DesiredUpdates) { u.Stop++ })
		return
	case a.DesiredTransition.ShouldMigrate():
		// Marked by the drainer: stopped, not replaced (the node is not
		// eligible, so nothing is placed there).
		r.stop(a, DescMigrating, "")
		count(func(u *structs.DesiredUpdates) { u.Migrate++ })
		return
	}
	lostAfter := tg.MaxClientDisconnect
	switch {
	case n.Status == structs.NodeStatusDisconnected && lostAfter == nil:
		r.stop(a, DescLost, structs.AllocClientStatusLost)
		count(func(u *structs.DesiredUpdates) { u.Stop++ })
		return
	case n.Status == structs.NodeStatusDisconnected && a.ClientStatus == structs.AllocClientStatusUnknown:
		expires := a.LastUnknown().Add(*lostAfter)
		if !r.in.Now.Before(expires) {
			r.stop(a, DescLost, structs.AllocClientStatusLost)
			count(func(u *structs.DesiredUpdates) { u.Stop++ })
			return
		}
		// Revisited when it expires, whatever evaluated it meanwhile.
		r.followup(structs.EvalTriggerMaxDisconnectTimeout, DescDisconnected, expires)
		r.kept[group]++
		count(func(u *structs.DesiredUpdates) { u.Ignore++ })
		return
	case n.Status == structs.NodeStatusDisconnected:
		// Unknown until the node comes back or lost_after passes, when
		// a follow-up evaluation marks it lost.
		f := r.followup(structs.EvalTriggerMaxDisconnectTimeout, DescDisconnected, r.in.Now.Add(*lostAfter))
		r.plan.Updates = append(r.plan.Updates, &structs.AllocUpdate{AllocID: a.ID, NodeID: a.NodeID,
			ClientStatus: structs.AllocClientStatusUnknown, FollowupEvalID: &f})
		r.kept[group]++
		count(func(u *structs.DesiredUpdates) { u.Ignore++ })
		return
	case a.ClientStatus == structs.AllocClientStatusUnknown:
		// The node is back: the alloc reconnects.
		r.plan.Updates = append(r.plan.Updates, &structs.AllocUpdate{AllocID: a.ID, NodeID: a.NodeID, ClientStatus: structs.AllocClientStatusRunning})
	}
	switch {
	case v.tainted || (!v.eligible && !n.Ready()):
		// Draining (the drainer marks it when its turn comes) or not
		// ready (ineligible): kept, unless the job changed.
		if !sameVersion(a, r.job) {
			r.stop(a, DescNotNeeded, "")
			count(func(u *structs.DesiredUpdates) { u.Stop++ })
			return
		}
		r.kept[group]++
		count(func(u *structs.DesiredUpdates) { u.Ignore++ })
		return
	case !v.eligible:
		// Ready, but no longer in the job's pool or datacenters.
		r.stop(a, DescNotNeeded, "")
		count(func(u *structs.DesiredUpdates) { u.Stop++ })
		return
	}
	r.kept[group]++
	if sameVersion(a, r.job) {
		count(func(u *structs.DesiredUpdates) { u.Ignore++ })
		return
	}
	kind, _ := r.in.Update(a, r.job, tg)
	switch kind {
	case reconcile.UpdateIgnore:
		count(func(u *structs.DesiredUpdates) { u.Ignore++ })
	case reconcile.UpdateInPlace:
		v := r.job.Version
		r.plan.Updates = append(r.plan.Updates, &structs.AllocUpdate{AllocID: a.ID, NodeID: a.NodeID, JobVersion: &v})
		count(func(u *structs.DesiredUpdates) { u.InPlaceUpdate++ })
	default:
		r.kept[group]--
		r.destructive[group] = append(r.destructive[group], a)
	}
}

// stop adds a stop of live alloc a to the plan and frees what it held.
func (r *run) stop(a *structs.Allocation, desc, clientStatus string) {
	r.plan.Stops = append(r.plan.Stops, &structs.AllocStop{AllocID: a.ID, NodeID: a.NodeID,
		DesiredStatus: structs.AllocDesiredStatusStop, DesiredDescription: desc, ClientStatus: clientStatus})
	if r.placer != nil && !r.released[a.ID] {
		r.released[a.ID] = true
		r.placer.Release(a)
	}
}

// rollDestructive replaces, per group, at most update max_parallel allocs
// (all when the group has no update strategy): each is stopped and a new
// alloc placed on its node. When some are left, a rolling-update
// evaluation continues after the stagger.
func (r *run) rollDestructive(places *[]placeOn) {
	var more []placeOn
	var stagger time.Duration
	for _, tg := range r.job.TaskGroups {
		list := r.destructive[tg.Name]
		if len(list) == 0 {
			continue
		}
		limit := len(list)
		if u := tg.Update; !u.IsEmpty() && u.MaxParallel < limit {
			limit = u.MaxParallel
			stagger = max(stagger, u.Stagger)
		}
		for i, a := range list {
			if i >= limit {
				r.kept[tg.Name]++
				r.updates[tg.Name].Ignore++
				continue
			}
			r.stop(a, DescUpdating, "")
			r.updates[tg.Name].DestructiveUpdate++
			more = append(more, placeOn{tg: tg, name: a.Name, node: a.NodeID, prev: a})
		}
		if limit < len(list) && stagger <= 0 {
			stagger = time.Second
		}
	}
	if stagger > 0 {
		r.followup(structs.EvalTriggerRollingUpdate, DescRollingEval, r.in.Now.Add(stagger))
	}
	// Replacements go first: their room is the one their stop freed.
	*places = append(more, *places...)
}

// place tries one alloc on its node.
func (r *run) place(p placeOn) {
	start := time.Now()
	opt, m := r.placer.PlaceOn(p.tg, p.node)
	m.AllocationTime = time.Since(start)
	u := r.updates[p.tg.Name]
	if opt == nil {
		if m.NodesFiltered > 0 {
			// Infeasible here: the node is not one of the group's. Only
			// reported when the group runs nowhere (reportFiltered).
			r.filtered[p.tg.Name] = mergeFiltered(r.filtered[p.tg.Name], m)
			return
		}
		r.res.QueuedAllocations[p.tg.Name]++
		r.res.Exhausted = true
		if first, ok := r.res.FailedTGAllocs[p.tg.Name]; ok {
			first.CoalescedFailures++
		} else {
			r.res.FailedTGAllocs[p.tg.Name] = m
		}
		return
	}
	prevID := ""
	if p.prev != nil {
		prevID = p.prev.ID
	}
	now := r.in.Now.UnixNano()
	a := &structs.Allocation{
		ID:        structs.AllocIDForNodePlacement(r.in.Eval.ID, p.name, p.node, prevID),
		Namespace: r.job.Namespace, EvalID: r.in.Eval.ID, Name: p.name, NodeID: opt.Node.ID, NodeName: opt.Node.Name,
		JobID: r.job.ID, JobVersion: r.job.Version, TaskGroup: p.tg.Name,
		AllocatedResources: opt.Resources(p.tg), Metrics: m,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
		PreviousAllocation: prevID, CreateTime: now, ModifyTime: now,
	}
	r.plan.Placements = append(r.plan.Placements, a)
	r.placed[p.tg.Name]++
	if p.prev == nil || p.prev.TerminalStatus() {
		u.Place++
	}
}

// reportFiltered reports, as Nomad, a group that runs on no node because
// every node it was tried on is infeasible: its merged filter metrics are
// its failed placement. It does not block the evaluation.
func (r *run) reportFiltered() {
	for _, tg := range r.job.TaskGroups {
		m := r.filtered[tg.Name]
		if m == nil || r.placed[tg.Name] > 0 || r.kept[tg.Name] > 0 {
			continue
		}
		if _, failed := r.res.FailedTGAllocs[tg.Name]; !failed {
			r.res.FailedTGAllocs[tg.Name] = m
		}
	}
}

// mergeFiltered adds the filter counts of m into acc (nil: a copy of m).
func mergeFiltered(acc, m *structs.AllocMetric) *structs.AllocMetric {
	if acc == nil {
		c := *m
		c.ConstraintFiltered = copyCounts(m.ConstraintFiltered)
		c.ClassFiltered = copyCounts(m.ClassFiltered)
		c.ScoreMetaData = nil
		return &c
	}
	acc.NodesEvaluated += m.NodesEvaluated
	acc.NodesFiltered += m.NodesFiltered
	acc.AllocationTime += m.AllocationTime
	for k, v := range m.ConstraintFiltered {
		if acc.ConstraintFiltered == nil {
			acc.ConstraintFiltered = map[string]int{}
		}
		acc.ConstraintFiltered[k] += v
	}
	for k, v := range m.ClassFiltered {
		if acc.ClassFiltered == nil {
			acc.ClassFiltered = map[string]int{}
		}
		acc.ClassFiltered[k] += v
	}
	return acc
}

func copyCounts(m map[string]int) map[string]int {
	if m == nil {
		return nil
	}
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// followup returns the ID of the evaluation of trigger at waitUntil that
// this evaluation creates: one rolling-update evaluation (at the latest
// stagger of the groups it limited), one disconnect-timeout evaluation per
// time.
func (r *run) followup(trigger, desc string, waitUntil time.Time) string {
	key := trigger
	if trigger != structs.EvalTriggerRollingUpdate {
		key += "@" + waitUntil.UTC().Format(time.RFC3339Nano)
	}
	if e, ok := r.followups[key]; ok {
		if waitUntil.After(e.WaitUntil) {
			e.WaitUntil = waitUntil
		}
		return e.ID
	}
	ev := r.in.Eval
	e := &structs.Evaluation{
		ID: structs.DeterministicID("followup", ev.ID, key), Namespace: ev.Namespace, JobID: ev.JobID,
		Type: ev.Type, Priority: ev.Priority, TriggeredBy: trigger, Status: structs.EvalStatusPending,
		StatusDescription: desc, WaitUntil: waitUntil, PreviousEval: ev.ID,
	}
	if r.job != nil {
		e.JobModifyIndex = r.job.JobModifyIndex
	}
	r.followups[key] = e
	return e.ID
}

func (r *run) followupEvals() []*structs.Evaluation {
	keys := make([]string, 0, len(r.followups))
	for k := range r.followups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []*structs.Evaluation
	for _, k := range keys {
		out = append(out, r.followups[k])
	}
	return out
}

// String names a placement for logs and tests.
func (p placeOn) String() string { return fmt.Sprintf("%s on %s", p.name, p.node) }
