package scheduler_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/structs"
)

// A system job through the same queue, evaluator and commit as service
// jobs: one alloc per node, a node that registers gets its alloc from its
// node-update evaluation, a destructive update rolls one node at a time
// through rolling-update evaluations after the stagger, and a redelivered
// evaluation places nothing twice.
func TestSystemJobThroughTheQueue(t *testing.T) {
	h := newHarness(t)
	h.node("n1", 4000, 4096)
	h.node("n2", 4000, 4096)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		scheduler.RunWorkers(ctx, 2, h.broker, h.eval, zaptest.NewLogger(t))
		close(done)
	}()
	defer func() { cancel(); h.broker.Close(); <-done }()

	j := job("agent", 1, 100)
	j.Type = structs.JobTypeSystem
	j.TaskGroups[0].Update = &structs.UpdateStrategy{MaxParallel: 1, Stagger: 50 * time.Millisecond}
	reg, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: j})
	if err != nil {
		t.Fatal(err)
	}
	onNodes := func(version uint64) map[string]int {
		out := map[string]int{}
		for _, a := range h.liveAllocs("agent") {
			if a.JobVersion == version {
				out[a.NodeID]++
			}
		}
		return out
	}
	waitFor(t, "an alloc on each node", func() bool { m := onNodes(0); return m["n1"] == 1 && m["n2"] == 1 })

	h.node("n3", 4000, 4096)
	waitFor(t, "the new node's alloc", func() bool { return onNodes(0)["n3"] == 1 })

	v1 := j.Copy()
	v1.TaskGroups[0].Tasks[0].Env = map[string]string{"V": "1"}
	if _, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: v1}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every node on version 1", func() bool { return len(onNodes(1)) == 3 && len(h.liveAllocs("agent")) == 3 })
	evals, _ := h.store.EvalsByJob(ctx, "default", "agent")
	rolling := 0
	for _, e := range evals {
		if e.TriggeredBy == structs.EvalTriggerRollingUpdate {
			rolling++
		}
	}
	if rolling != 2 {
		t.Fatalf("%d rolling-update evaluations for three nodes at max_parallel 1, want 2", rolling)
	}

	// The first registration's eval, delivered again, changes nothing.
	reset, _ := h.store.Eval(ctx, reg.EvalID)
	reset.Status = structs.EvalStatusPending
	if _, err := h.store.UpsertEvals(ctx, reset); err != nil {
		t.Fatal(err)
	}
	if err := h.eval.Process(ctx, reg.EvalID); err != nil {
		t.Fatal(err)
	}
	if live := h.liveAllocs("agent"); len(live) != 3 {
		t.Fatalf("%d live allocs after a redelivery, want 3", len(live))
	}
}

// A sysbatch job runs once per node: once its allocs complete, evaluating
// it again places nothing; a node that joins later runs it once.
func TestSysBatchRunsOnce(t *testing.T) {
	h := newHarness(t)
	h.node("n1", 4000, 4096)
	h.node("n2", 4000, 4096)
	ctx := context.Background()
	j := job("scan", 1, 100)
	j.Type = structs.JobTypeSysBatch
	reg, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: j})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.eval.Process(ctx, reg.EvalID); err != nil {
		t.Fatal(err)
	}
	for _, a := range h.liveAllocs("scan") {
		if err := h.service.UpdateAllocs(ctx, a.NodeID, []*structs.Allocation{{ID: a.ID, ClientStatus: structs.AllocClientStatusComplete}}); err != nil {
			t.Fatal(err)
		}
	}
	again, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: j})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.eval.Process(ctx, again.EvalID); err != nil {
		t.Fatal(err)
	}
	all, _ := h.store.AllocsByJob(ctx, "default", "scan")
	if len(all) != 2 || len(h.liveAllocs("scan")) != 0 {
		t.Fatalf("%d allocs (%d live) after evaluating a finished sysbatch job again, want the 2 finished ones", len(all), len(h.liveAllocs("scan")))
	}
	h.node("n3", 4000, 4096)
	evals, _ := h.store.EvalsByJob(ctx, "default", "scan")
	for _, e := range evals {
		if e.Status == structs.EvalStatusPending && e.TriggeredBy == structs.EvalTriggerNodeUpdate {
			if err := h.eval.Process(ctx, e.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	live := h.liveAllocs("scan")
	if len(live) != 1 || live[0].NodeID != "n3" {
		t.Fatalf("after n3 joined: live %v, want one alloc on n3", live)
	}
}
