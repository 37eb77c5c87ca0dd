package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/structs"
)

// fail reports the alloc failed at the given time, as its node would.
func (h *harness) fail(id string, at time.Time) {
	h.t.Helper()
	err := h.service.UpdateAllocs(context.Background(), "n1", []*structs.Allocation{{ID: id,
		ClientStatus: structs.AllocClientStatusFailed,
		TaskStates: map[string]*structs.TaskState{"server": {State: structs.TaskStateDead, Failed: true,
			StartedAt: at.Add(-time.Minute), FinishedAt: at}}}})
	if err != nil {
		h.t.Fatal(err)
	}
}

// pendingEval returns the job's one pending evaluation that may run at
// now.
func (h *harness) pendingEval(jobID string, now time.Time) *structs.Evaluation {
	h.t.Helper()
	evals, err := h.store.EvalsByJob(context.Background(), "default", jobID)
	if err != nil {
		h.t.Fatal(err)
	}
	var due []*structs.Evaluation
	for _, e := range evals {
		if e.Status == structs.EvalStatusPending && !e.WaitUntil.After(now) {
			due = append(due, e)
		}
	}
	if len(due) != 1 {
		h.t.Fatalf("job %s: %d pending evals due at %s, want 1", jobID, len(due), now)
	}
	return due[0]
}

// process runs one evaluation to its end.
func (h *harness) process(ev *structs.Evaluation) {
	h.t.Helper()
	if err := h.eval.Process(context.Background(), ev.ID); err != nil {
		h.t.Fatalf("eval %s (%s): %v", ev.ID, ev.TriggeredBy, err)
	}
}

// register registers a job and processes its evaluation.
func (h *harness) register(j *structs.Job) {
	h.t.Helper()
	resp, err := h.service.RegisterJob(context.Background(), &controlplane.RegisterRequest{Job: j})
	if err != nil {
		h.t.Fatal(err)
	}
	ev, err := h.store.Eval(context.Background(), resp.EvalID)
	if err != nil {
		h.t.Fatal(err)
	}
	h.process(ev)
}

// TestRescheduleWaitsForRoomWithItsTracker is issue 14's first situation
// through the evaluator, on a real embedded store: count 1, 500 MHz,
// reschedule {attempts 3, interval 15m, delay 15s, constant}, one node of
// 1,000 MHz. Alloc B (the first replacement, one tracker event) fails;
// when its follow-up eval runs the node is full. B must stay desired
// run / failed and a blocked eval is created; when room appears the
// blocked eval places the replacement with PreviousAllocation = B and two
// tracker events, and stops B in that same plan. (Before the fix B was
// stopped at once, and the name was later placed afresh with an empty
// tracker, so the attempt count started again.)
func TestRescheduleWaitsForRoomWithItsTracker(t *testing.T) {
	h := newHarness(t)
	clock := time.Now().UTC().Truncate(time.Second)
	h.eval.Now = func() time.Time { return clock }
	h.node("n1", 1000, 4096)
	ctx := context.Background()

	web := job("web", 1, 500)
	web.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 3, Interval: 15 * time.Minute,
		Delay: 15 * time.Second, DelayFunction: structs.DelayFunctionConstant}
	h.register(web)
	h.register(job("filler1", 1, 500)) // the node is full
	first := h.liveAllocs("web")[0]

	// The first alloc fails; its follow-up replaces it with B, which
	// carries one reschedule event.
	h.fail(first.ID, clock)
	h.process(h.pendingEval("web", clock)) // alloc-failure: follow-up in 15 s
	clock = clock.Add(15 * time.Second)
	h.process(h.pendingEval("web", clock))
	live := h.liveAllocs("web")
	if len(live) != 1 || live[0].PreviousAllocation != first.ID || len(live[0].RescheduleTracker.Events) != 1 {
		t.Fatalf("first reschedule: %+v", live)
	}
	b := live[0]

	// B fails at T1; another job takes its room before B's follow-up F2
	// runs at T1+15s.
	clock = clock.Add(time.Minute)
	h.fail(b.ID, clock)
	h.process(h.pendingEval("web", clock))
	h.register(job("filler2", 1, 500))
	if n := len(h.liveAllocs("filler2")); n != 1 {
		t.Fatalf("filler2 placed %d", n)
	}
	clock = clock.Add(15 * time.Second)
	f2 := h.pendingEval("web", clock)
	h.process(f2)

	got, err := h.store.Alloc(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.DesiredStatus != structs.AllocDesiredStatusRun || got.ClientStatus != structs.AllocClientStatusFailed {
		t.Fatalf("B after its reschedule found no room: desired %s, client %s; want run / failed", got.DesiredStatus, got.ClientStatus)
	}
	f2, _ = h.store.Eval(ctx, f2.ID)
	if f2.BlockedEval == "" {
		t.Fatalf("F2 created no blocked eval: %+v", f2)
	}
	blocked, err := h.store.Eval(ctx, f2.BlockedEval)
	if err != nil || blocked.Status != structs.EvalStatusBlocked {
		t.Fatalf("blocked eval: %+v, %v", blocked, err)
	}

	// Room appears: filler2 stops, the blocked eval is re-queued and runs.
	resp, err := h.service.DeregisterJob(ctx, "default", "filler2", false)
	if err != nil {
		t.Fatal(err)
	}
	stopEval, _ := h.store.Eval(ctx, resp.EvalID)
	h.process(stopEval)
	blocked, _ = h.store.Eval(ctx, blocked.ID)
	if blocked.Status != structs.EvalStatusPending {
		t.Fatalf("blocked eval not re-queued when room appeared: %s", blocked.Status)
	}
	h.process(blocked)

	live = h.liveAllocs("web")
	if len(live) != 1 {
		t.Fatalf("web runs %d allocs after the blocked eval, want 1", len(live))
	}
	r := live[0]
	if r.PreviousAllocation != b.ID || r.RescheduleTracker == nil || len(r.RescheduleTracker.Events) != 2 ||
		r.RescheduleTracker.Events[1].PrevAllocID != b.ID || r.EvalID != blocked.ID {
		t.Fatalf("replacement: previous %q, tracker %+v, eval %s; want previous %s, two events, eval %s",
			r.PreviousAllocation, r.RescheduleTracker, r.EvalID, b.ID, blocked.ID)
	}
	got, _ = h.store.Alloc(ctx, b.ID)
	if got.DesiredStatus != structs.AllocDesiredStatusStop || got.DesiredDescription == "" {
		t.Fatalf("B not stopped with its replacement: %s %q", got.DesiredStatus, got.DesiredDescription)
	}
}
