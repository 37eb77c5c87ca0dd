package placement

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/structs"
)

// planFor reconciles job's allocs at now for the evaluation evalID and
// builds the plan over nodes.
func planFor(t *testing.T, job *structs.Job, allocs []*structs.Allocation, nodes []NodeCandidate, evalID string, now time.Time) *PlanResult {
	t.Helper()
	res := reconcile.Reconcile(reconcile.Input{Job: job, Namespace: job.Namespace, JobID: job.ID, Allocs: allocs,
		TaintedNodes: map[string]*structs.Node{}, EvalID: evalID, EvalPriority: 50, Now: now})
	return BuildPlan(&PlanRequest{
		Eval: &structs.Evaluation{ID: evalID, Namespace: job.Namespace, JobID: job.ID, Priority: 50},
		Job:  job, Allocs: allocs, Result: res, Nodes: nodes, Now: now,
		RescheduleTracker: reconcile.NextRescheduleTracker,
	})
}

// TestRescheduleStopDroppedWhenReplacementNotPlaced is issue 14's first
// situation at the plan: the failed alloc B is stopped only to be
// replaced, so when its replacement finds no room the plan neither stops
// B nor places anything, and reports the group as failed to place (the
// evaluator then blocks). Once there is room, the replacement takes over
// from B (previous alloc, one more tracker event) and B is stopped in the
// same plan.
func TestRescheduleStopDroppedWhenReplacementNotPlaced(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 15, 0, time.UTC)
	j := job(1, 500, 64)
	j.Version = 1
	j.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 3, Interval: 15 * time.Minute,
		Delay: 15 * time.Second, DelayFunction: structs.DelayFunctionConstant}
	failedAt := now.Add(-15 * time.Second)
	b := &structs.Allocation{ID: "B", Namespace: "default", Name: "web.g[0]", JobID: "web", Job: j, JobVersion: 1,
		TaskGroup: "g", NodeID: "n1", DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusFailed,
		AllocatedResources: structs.AllocatedResourcesFor(j.TaskGroups[0]), FollowupEvalID: "F2",
		TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateDead, Failed: true, FinishedAt: failedAt}},
		RescheduleTracker: &structs.RescheduleTracker{Events: []*structs.RescheduleEvent{
			{RescheduleTime: now.Add(-5 * time.Minute).UnixNano(), PrevAllocID: "A", PrevNodeID: "n1", Delay: 15 * time.Second}}},
	}
	full := []NodeCandidate{{Node: node("n1", 1000, 4096, nil), Used: structs.ComparableResources{CPU: 600, MemoryMB: 64}}}

	out := planFor(t, j, []*structs.Allocation{b}, full, "F2", now)
	if len(out.Plan.Stops) != 0 || len(out.Plan.Placements) != 0 {
		t.Fatalf("full node: want no stop and no placement, got stops %+v, placements %d", out.Plan.Stops, len(out.Plan.Placements))
	}
	if out.FailedTGAllocs["g"] == nil || out.QueuedAllocations["g"] != 1 {
		t.Fatalf("full node: want the group failed to place (queued 1), got %+v / %v", out.FailedTGAllocs, out.QueuedAllocations)
	}

	roomy := []NodeCandidate{{Node: node("n1", 1000, 4096, nil), Used: structs.ComparableResources{CPU: 400, MemoryMB: 64}}}
	later := now.Add(time.Minute)
	out = planFor(t, j, []*structs.Allocation{b}, roomy, "blocked-F2", later)
	if len(out.Plan.Stops) != 1 || out.Plan.Stops[0].AllocID != "B" || out.Plan.Stops[0].DesiredDescription != reconcile.StatusAllocRescheduled {
		t.Fatalf("room: want B stopped as rescheduled, got %+v", out.Plan.Stops)
	}
	if len(out.Plan.Placements) != 1 {
		t.Fatalf("room: want one placement, got %d", len(out.Plan.Placements))
	}
	p := out.Plan.Placements[0]
	if p.Name != "web.g[0]" || p.PreviousAllocation != "B" || p.RescheduleTracker == nil || len(p.RescheduleTracker.Events) != 2 ||
		p.RescheduleTracker.Events[1].PrevAllocID != "B" {
		t.Fatalf("room: replacement %s prev %q tracker %+v", p.Name, p.PreviousAllocation, p.RescheduleTracker)
	}
}

// TestDroppedRescheduleStopKeepsItsRoom: a running alloc forced to
// reschedule frees its room only for its own replacement. When the
// replacement does not fit even so, the alloc keeps running and keeps its
// room: a later placement of the same plan must not take it (the node
// would be over-committed).
func TestDroppedRescheduleStopKeepsItsRoom(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	j := job(1, 800, 64)
	j.Version = 1
	j.TaskGroups = append(j.TaskGroups, &structs.TaskGroup{Name: "small", Count: 1,
		Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Resources: &structs.Resources{CPU: 300, MemoryMB: 64}}}})
	old := *j
	old.Version = 0
	old.TaskGroups = []*structs.TaskGroup{job(1, 500, 64).TaskGroups[0], j.TaskGroups[1]}
	force := true
	a := &structs.Allocation{ID: "A", Namespace: "default", Name: "web.g[0]", JobID: "web", Job: &old, JobVersion: 0,
		TaskGroup: "g", NodeID: "n1", DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
		AllocatedResources: structs.AllocatedResourcesFor(old.TaskGroups[0]),
		DesiredTransition:  structs.DesiredTransition{ForceReschedule: &force},
	}
	// n1 holds A (500) and 500 of another job's: A's replacement (800)
	// does not fit even with A's room, and "small" (300) fits only in it.
	nodes := []NodeCandidate{{Node: node("n1", 1000, 4096, nil), Used: structs.ComparableResources{CPU: 1000, MemoryMB: 128}}}
	out := planFor(t, j, []*structs.Allocation{a}, nodes, "e1", now)
	if len(out.Plan.Stops) != 0 {
		t.Fatalf("want A kept (its replacement does not fit), got stops %+v", out.Plan.Stops)
	}
	if len(out.Plan.Placements) != 0 {
		t.Fatalf("want nothing placed in A's room, got %s on %s", out.Plan.Placements[0].Name, out.Plan.Placements[0].NodeID)
	}
	if out.QueuedAllocations["g"] != 1 || out.QueuedAllocations["small"] != 1 {
		t.Fatalf("queued: %v", out.QueuedAllocations)
	}
}
