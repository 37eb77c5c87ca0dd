package controlplane

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

// TestResentHeartbeatRedoesLostReactions: a node back from a missed
// heartbeat sends its heartbeat again when the first sending failed, and
// the first may have written the node ready before the control plane died
// (or its answer was lost), before its reactions ran: the resent
// heartbeat finds the node ready with its reactions still marked pending
// (the store writes the mark with the status) and evaluates the system
// jobs for it and re-queues blocked evaluations, once (found by the chaos
// suite: `go test ./chaos -run TestChaos/embedded -seed 1309`, a system
// job that never ran on the node back). A steady node's heartbeats and a
// freshly registered node's react to nothing, in this process or another.
func TestResentHeartbeatRedoesLostReactions(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	sys := testJob("sys", 1)
	sys.Type = structs.JobTypeSystem
	if _, err := f.svc.RegisterJob(f.ctx, &RegisterRequest{Job: sys}); err != nil {
		t.Fatal(err)
	}
	nodeEvals := func() int {
		n := 0
		for _, e := range f.pendingEvals("sys", structs.EvalTriggerNodeUpdate) {
			if e.NodeID == "n1" {
				n++
			}
		}
		return n
	}
	if _, err := f.svc.Heartbeat(f.ctx, "n1"); err != nil || nodeEvals() != 0 {
		t.Fatalf("a freshly registered node's heartbeat: %d node evals (%v), want 0", nodeEvals(), err)
	}
	if err := f.svc.NodeMissedHeartbeat(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	for _, e := range f.pendingEvals("sys", structs.EvalTriggerNodeUpdate) {
		if _, err := f.store.UpsertEvals(f.ctx, &structs.Evaluation{ID: e.ID, Namespace: e.Namespace, JobID: e.JobID,
			Type: e.Type, TriggeredBy: e.TriggeredBy, NodeID: e.NodeID, Status: structs.EvalStatusComplete}); err != nil {
			t.Fatal(err)
		}
	}
	blocked := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "other", Type: "service",
		TriggeredBy: structs.EvalTriggerQueuedAllocs, Status: structs.EvalStatusBlocked}
	if _, err := f.store.UpsertEvals(f.ctx, blocked); err != nil {
		t.Fatal(err)
	}
	f.clk.Add(time.Second)
	// The first sending: the node written ready, then the process died.
	if _, err := f.store.UpdateNodeStatus(f.ctx, "n1", structs.NodeStatusReady, f.clk.Now().Unix()); err != nil {
		t.Fatal(err)
	}
	if nodeEvals() != 0 {
		t.Fatal("reaction ran before the resend")
	}
	// The node sends it again.
	f.clk.Add(time.Second)
	if _, err := f.svc.Heartbeat(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := nodeEvals(); got != 1 {
		t.Fatalf("the resent heartbeat created %d node-update evals of the system job for the node, want 1", got)
	}
	if e, err := f.store.Eval(f.ctx, blocked.ID); err != nil || e.Status != structs.EvalStatusPending {
		t.Fatalf("the blocked eval after the resent heartbeat: %+v %v", e, err)
	}
	// Its reactions done, the next heartbeats react to nothing.
	for range 2 {
		if _, err := f.svc.Heartbeat(f.ctx, "n1"); err != nil || nodeEvals() != 1 {
			t.Fatalf("a steady node's heartbeat: %d node evals (%v), want 1", nodeEvals(), err)
		}
	}

	// A control plane that never saw the return (another process, or
	// restarted) finds the reactions done: nothing more.
	other := New(Config{Store: f.store, Logger: f.svc.log, Now: f.clk.Now, HeartbeatTTL: 10 * time.Second})
	f.clk.Add(20 * time.Second)
	if _, err := other.Heartbeat(f.ctx, "n1"); err != nil || nodeEvals() != 1 {
		t.Fatalf("a heartbeat past a TTL after the return: %d node evals (%v), want 1", nodeEvals(), err)
	}
}
