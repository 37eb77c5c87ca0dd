package scheduler_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/drover-sched/drover/controlplane"
	evqueue "github.com/drover-sched/drover/events/embedded"
	"github.com/drover-sched/drover/placement"
	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

// harness is the embedded home without HTTP or node agent: a real bbolt
// file, the real broker, the control-plane service and the evaluator.
type harness struct {
	t       *testing.T
	store   *embedded.Store
	broker  *evqueue.Broker
	service *controlplane.Service
	eval    *scheduler.Evaluator
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	log := zaptest.NewLogger(t)
	broker := evqueue.New(evqueue.Config{NackDelay: 10 * time.Millisecond})
	t.Cleanup(broker.Close)
	h := &harness{t: t, store: store, broker: broker,
		service: controlplane.New(controlplane.Config{Store: store, Queue: broker, Logger: log}),
		eval: &scheduler.Evaluator{State: store, Queue: broker, Reconcile: reconcile.Reconcile,
			Update: placement.UpdateType, RescheduleTracker: reconcile.NextRescheduleTracker, Logger: log}}
	return h
}

func (h *harness) node(id string, cpu, mem int64) {
	h.t.Helper()
	_, err := h.service.RegisterNode(context.Background(), &structs.Node{
		ID: id, Name: id, Datacenter: "dc1", NodePool: "default", Attributes: map[string]string{"kernel.name": "linux"},
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: cpu},
			Memory: structs.NodeMemoryResources{MemoryMB: mem}, Disk: structs.NodeDiskResources{DiskMB: 10000}},
		Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

func job(id string, count, cpu int) *structs.Job {
	return &structs.Job{
		Region: "global", Namespace: "default", ID: id, Name: id, Type: structs.JobTypeService, Priority: 50,
		NodePool: "default",
		TaskGroups: []*structs.TaskGroup{{
			Name: "web", Count: count, EphemeralDisk: &structs.EphemeralDisk{SizeMB: 100},
			Tasks: []*structs.Task{{Name: "server", Driver: "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{"1000"}},
				Resources: &structs.Resources{CPU: cpu, MemoryMB: 64}}},
		}},
	}
}

func (h *harness) liveAllocs(jobID string) []*structs.Allocation {
	h.t.Helper()
	allocs, err := h.store.AllocsByJob(context.Background(), "default", jobID)
	if err != nil {
		h.t.Fatal(err)
	}
	var live []*structs.Allocation
	for _, a := range allocs {
		if !a.TerminalStatus() {
			live = append(live, a)
		}
	}
	return live
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestConcurrentEvaluationsNeverOverCommit: two workers hold their
// evaluations between snapshot and commit; both planned onto the one node
// that has room for one job. Exactly one commits; the other conflicts,
// re-evaluates on fresh state and ends blocked; stopping the first job
// frees the room and the blocked eval places the second.
func TestConcurrentEvaluationsNeverOverCommit(t *testing.T) {
	h := newHarness(t)
	h.node("n1", 1000, 4096)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	held := map[string]bool{}
	release := make(chan struct{})
	h.eval.BeforeCommit = func(_ context.Context, ev *structs.Evaluation, attempt int) {
		if attempt != 1 || ev.TriggeredBy != structs.EvalTriggerJobRegister {
			return
		}
		mu.Lock()
		held[ev.JobID] = true
		mu.Unlock()
		<-release
	}
	done := make(chan struct{})
	go func() {
		scheduler.RunWorkers(ctx, 2, h.broker, h.eval, zaptest.NewLogger(t))
		close(done)
	}()

	respA, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job("a", 1, 800)})
	if err != nil {
		t.Fatal(err)
	}
	respB, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job("b", 1, 800)})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both evaluations to reach the commit point", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return held["a"] && held["b"]
	})
	close(release)

	evalDone := func(id string) bool {
		e, err := h.store.Eval(ctx, id)
		return err == nil && e.TerminalStatus()
	}
	waitFor(t, "both evaluations to finish", func() bool { return evalDone(respA.EvalID) && evalDone(respB.EvalID) })

	placedA, placedB := len(h.liveAllocs("a")), len(h.liveAllocs("b"))
	if placedA+placedB != 1 {
		t.Fatalf("placed a=%d b=%d: exactly one job fits", placedA, placedB)
	}
	winner, loser, loserEval := "a", "b", respB.EvalID
	if placedB == 1 {
		winner, loser, loserEval = "b", "a", respA.EvalID
	}
	le, _ := h.store.Eval(ctx, loserEval)
	if le.Status != structs.EvalStatusComplete || le.BlockedEval == "" || le.FailedTGAllocs["web"] == nil {
		t.Fatalf("losing eval: status %s blocked %q failed %v", le.Status, le.BlockedEval, le.FailedTGAllocs)
	}
	if le.FailedTGAllocs["web"].DimensionExhausted["cpu"] != 1 {
		t.Fatalf("the failure reason must name the exhausted dimension: %+v", le.FailedTGAllocs["web"])
	}
	blocked, _ := h.store.Eval(ctx, le.BlockedEval)
	if blocked.Status != structs.EvalStatusBlocked {
		t.Fatalf("blocked eval status %s", blocked.Status)
	}
	usage, _ := h.store.NodesWithUsage(ctx)
	if usage[0].Used.CPU > 1000 {
		t.Fatalf("node over-committed: %d MHz", usage[0].Used.CPU)
	}

	if _, err := h.service.DeregisterJob(ctx, "default", winner, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the blocked job to be placed once room is freed", func() bool { return len(h.liveAllocs(loser)) == 1 })
	waitFor(t, "the blocked eval to complete", func() bool {
		b, _ := h.store.Eval(ctx, le.BlockedEval)
		return b.Status == structs.EvalStatusComplete
	})
	cancel()
	h.broker.Close()
	<-done
}

// TestRedeliveredEvaluationPlacesOnce: an evaluation processed twice
// (crash after commit, before ack) leaves exactly the allocs of one run.
func TestRedeliveredEvaluationPlacesOnce(t *testing.T) {
	h := newHarness(t)
	h.node("n1", 4000, 4096)
	ctx := context.Background()
	resp, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job("web", 3, 100)})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.eval.Process(ctx, resp.EvalID); err != nil {
		t.Fatal(err)
	}
	first := h.liveAllocs("web")
	if len(first) != 3 {
		t.Fatalf("first run placed %d", len(first))
	}
	// The broker redelivers the same eval: it is terminal, so nothing
	// happens.
	if err := h.eval.Process(ctx, resp.EvalID); err != nil {
		t.Fatal(err)
	}
	// Worse: the eval is seen pending again (as if its status write were
	// lost); the re-run computes against the committed state and adds
	// nothing.
	ev, _ := h.store.Eval(ctx, resp.EvalID)
	ev.Status = structs.EvalStatusPending
	if _, err := h.store.UpsertEvals(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if err := h.eval.Process(ctx, resp.EvalID); err != nil {
		t.Fatal(err)
	}
	all, _ := h.store.AllocsByJob(ctx, "default", "web")
	if len(all) != 3 {
		t.Fatalf("after redelivery: %d allocs, want the 3 of one run", len(all))
	}
	names := map[string]bool{}
	for _, a := range all {
		names[a.Name] = true
	}
	if len(names) != 3 {
		t.Fatalf("names: %v", names)
	}
	// And a replayed commit of the very same plan (same deterministic
	// alloc IDs) conflicts rather than duplicating.
	p := &structs.Plan{EvalID: resp.EvalID, Namespace: "default", JobID: "web", JobModifyIndex: first[0].Job.JobModifyIndex,
		Placements: []*structs.Allocation{first[0]}}
	if _, err := h.store.CommitPlan(ctx, p); err == nil {
		t.Fatal("a replayed placement committed twice")
	}
}

// TestEarlyDeliveryIsPutBack: an eval delivered before its WaitUntil is
// not run (invariant 4).
func TestEarlyDeliveryIsPutBack(t *testing.T) {
	h := newHarness(t)
	h.node("n1", 4000, 4096)
	ctx := context.Background()
	if _, err := h.store.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job("web", 1, 100),
		Eval: &structs.Evaluation{ID: "registered", Namespace: "default", JobID: "web", Status: structs.EvalStatusComplete}}); err != nil {
		t.Fatal(err)
	}
	later := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "web", Type: "service",
		Status: structs.EvalStatusPending, WaitUntil: time.Now().Add(time.Hour)}
	if _, err := h.store.UpsertEvals(ctx, later); err != nil {
		t.Fatal(err)
	}
	err := h.eval.Process(ctx, later.ID)
	if err == nil || !errorsIs(err, scheduler.ErrNotYet) {
		t.Fatalf("early delivery: %v", err)
	}
	if n := len(h.liveAllocs("web")); n != 0 {
		t.Fatalf("an early eval placed %d allocs", n)
	}
}

// TestDeliveryLimitFailsWithFollowUp: an eval that fails every delivery is
// marked failed with the reason, and a delayed follow-up is created.
func TestDeliveryLimitFailsWithFollowUp(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	ev := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "web", Type: "service", Status: structs.EvalStatusPending}
	if _, err := h.store.UpsertEvals(ctx, ev); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	follow, err := scheduler.FailEval(ctx, h.store, h.broker, ev, "boom", now)
	if err != nil {
		t.Fatal(err)
	}
	failed, _ := h.store.Eval(ctx, ev.ID)
	if failed.Status != structs.EvalStatusFailed || failed.NextEval != follow.ID || failed.StatusDescription == "" {
		t.Fatalf("failed eval: %+v", failed)
	}
	f, _ := h.store.Eval(ctx, follow.ID)
	if f.Status != structs.EvalStatusPending || f.TriggeredBy != structs.EvalTriggerFailedFollowUp || f.WaitUntil.Before(now.Add(scheduler.FailedFollowUpDelay)) {
		t.Fatalf("follow-up: %+v", f)
	}
	if s := h.broker.Stats(); s.Delayed != 1 {
		t.Fatalf("follow-up not waiting in the queue: %+v", s)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// TestBlockedEvalPlacedWhenNodeRegisters: with no room anywhere the eval
// ends with a blocked eval carrying the reason; a node registering
// re-queues it and the job is placed. At most one blocked eval per job.
func TestBlockedEvalPlacedWhenNodeRegisters(t *testing.T) {
	h := newHarness(t)
	h.node("small", 100, 4096) // too small for the job
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		scheduler.RunWorkers(ctx, 2, h.broker, h.eval, zaptest.NewLogger(t))
		close(done)
	}()
	defer func() { cancel(); h.broker.Close(); <-done }()

	resp, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job("web", 2, 500)})
	if err != nil {
		t.Fatal(err)
	}
	var first *structs.Evaluation
	waitFor(t, "the eval to finish with a blocked eval", func() bool {
		first, _ = h.store.Eval(ctx, resp.EvalID)
		return first.TerminalStatus()
	})
	m := first.FailedTGAllocs["web"]
	if first.BlockedEval == "" || m == nil || m.CoalescedFailures != 1 || m.NodesExhausted != 1 || first.QueuedAllocations["web"] != 2 {
		t.Fatalf("eval: blocked %q metrics %+v queued %v", first.BlockedEval, m, first.QueuedAllocations)
	}
	// A second registration that still cannot place replaces the blocked
	// eval (the newer wins).
	resp2, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job("web", 3, 500)})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second eval to finish", func() bool {
		e, _ := h.store.Eval(ctx, resp2.EvalID)
		return e.TerminalStatus()
	})
	blocked, _ := h.store.Evals(ctx, storage.EvalFilter{Status: structs.EvalStatusBlocked})
	if len(blocked) != 1 {
		t.Fatalf("%d blocked evals for one job", len(blocked))
	}
	h.node("big", 4000, 4096)
	waitFor(t, "the job placed on the new node", func() bool { return len(h.liveAllocs("web")) == 3 })
	waitFor(t, "no blocked eval left", func() bool {
		b, _ := h.store.Evals(ctx, storage.EvalFilter{Status: structs.EvalStatusBlocked})
		return len(b) == 0
	})
}
