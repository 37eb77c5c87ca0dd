package controlplane

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

// crashFixture is newFixture on a store whose next write, once crash is
// armed, lands and then fails as if the process died before its answer
// (embedded's CrashAfterCommit point).
func crashFixture(t *testing.T) (*fixture, *atomic.Bool) {
	t.Helper()
	crash := &atomic.Bool{}
	store, err := embedded.OpenWith(filepath.Join(t.TempDir(), "state.db"), embedded.Options{CrashPoint: func(point string) error {
		if point == embedded.CrashAfterCommit && crash.CompareAndSwap(true, false) {
			return errors.New("test: the control plane died after the write")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	clk := &clock{now: time.Now().UTC()}
	f := &fixture{t: t, store: store, clk: clk, ctx: t.Context()}
	f.svc = f.coldStart()
	return f, crash
}

// coldStart is a new control plane on the fixture's store: another
// process, or this one restarted (a Lambda's cold start), with nothing in
// memory.
func (f *fixture) coldStart() *Service {
	return New(Config{Store: f.store, Logger: zaptest.NewLogger(f.t), Now: f.clk.Now, HeartbeatTTL: 10 * time.Second})
}

// evalsForN1 counts the node-update evals of job for node n1.
func (f *fixture) evalsForN1(jobID string) int {
	f.t.Helper()
	evals, err := f.store.EvalsByJob(f.ctx, "default", jobID)
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for _, e := range evals {
		if e.TriggeredBy == structs.EvalTriggerNodeUpdate && e.NodeID == "n1" {
			n++
		}
	}
	return n
}

// TestHeartbeatAfterColdStartRedoesLostReactions: the control plane dies
// right after writing a node ready again (its heartbeat's status write
// landed, the reactions did not run). A control plane started afresh
// (nothing in memory) and past a heartbeat TTL after the return gets the
// node's next heartbeat and runs the reactions: an evaluation of the job
// with an alloc on the node, one of the system job for it, the blocked
// eval re-queued; once. The per-process record of the reactions done
// (and its TTL window) that this replaced reacted to nothing here: the
// system job never ran on the node.
func TestHeartbeatAfterColdStartRedoesLostReactions(t *testing.T) {
	f, crash := crashFixture(t)
	f.node("n1")
	sys := testJob("sys", 1)
	sys.Type = structs.JobTypeSystem
	if _, err := f.svc.RegisterJob(f.ctx, &RegisterRequest{Job: sys}); err != nil {
		t.Fatal(err)
	}
	f.place(testJob("web", 1), nil, "n1")
	if err := f.svc.NodeMissedHeartbeat(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	webBefore, sysBefore := f.evalsForN1("web"), f.evalsForN1("sys")
	blocked := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "other", Type: "service",
		TriggeredBy: structs.EvalTriggerQueuedAllocs, Status: structs.EvalStatusBlocked}
	if _, err := f.store.UpsertEvals(f.ctx, blocked); err != nil {
		t.Fatal(err)
	}
	blockedStatus := func() string {
		t.Helper()
		e, err := f.store.Eval(f.ctx, blocked.ID)
		if err != nil {
			t.Fatal(err)
		}
		return e.Status
	}

	f.clk.Add(time.Second)
	crash.Store(true)
	if _, err := f.svc.Heartbeat(f.ctx, "n1"); err == nil {
		t.Fatal("the heartbeat whose status write crashed succeeded")
	}
	if n, _ := f.store.Node(f.ctx, "n1"); n.Status != structs.NodeStatusReady {
		t.Fatalf("after the crash the node is %s, want ready (the write landed)", n.Status)
	}
	if f.evalsForN1("web") != webBefore || f.evalsForN1("sys") != sysBefore || blockedStatus() != structs.EvalStatusBlocked {
		t.Fatal("reactions ran before the crash")
	}

	f.clk.Add(time.Minute)
	svc := f.coldStart()
	if _, err := svc.Heartbeat(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := f.evalsForN1("sys") - sysBefore; got != 1 {
		t.Fatalf("the heartbeat after the cold start: %d node-update evals of the system job for the node, want 1", got)
	}
	if got := f.evalsForN1("web") - webBefore; got != 1 {
		t.Fatalf("the heartbeat after the cold start: %d node-update evals of the job with an alloc on the node, want 1", got)
	}
	if st := blockedStatus(); st != structs.EvalStatusPending {
		t.Fatalf("the blocked eval after the cold start's heartbeat: %s, want pending", st)
	}
	// Done: the next heartbeats, of this process or of another, react to
	// nothing.
	for _, s := range []*Service{svc, f.coldStart()} {
		if _, err := s.Heartbeat(f.ctx, "n1"); err != nil || f.evalsForN1("sys")-sysBefore != 1 || f.evalsForN1("web")-webBefore != 1 {
			t.Fatalf("a steady node's heartbeat reacted (%v): sys %d web %d", err, f.evalsForN1("sys")-sysBefore, f.evalsForN1("web")-webBefore)
		}
	}
}

// downWriteCrashed sets up node n1 with an alloc of job web, and a
// missed heartbeat whose control plane crashed right after writing n1
// down, before its reactions.
func downWriteCrashed(t *testing.T) (*fixture, *atomic.Bool) {
	t.Helper()
	f, crash := crashFixture(t)
	f.node("n1")
	f.place(testJob("web", 1), nil, "n1")
	crash.Store(true)
	if err := f.svc.NodeMissedHeartbeat(f.ctx, "n1"); err == nil {
		t.Fatal("the missed heartbeat whose status write crashed succeeded")
	}
	return f, crash
}

// TestNodeStatusReactionsPendingAfterACrash: a control plane that dies
// right after writing a node down (the missed heartbeat's status write)
// leaves the node marked; RedoNodeReactions (the AWS sweeper's call)
// writes the evaluation of the job with an alloc on the node that was
// lost, once. A registration that dies right after writing a down node
// ready leaves its reactions pending too, and the agent's registration
// sent again runs them.
func TestNodeStatusReactionsPendingAfterACrash(t *testing.T) {
	f, crash := downWriteCrashed(t)
	n, err := f.store.Node(f.ctx, "n1")
	if err != nil || n.Status != structs.NodeStatusDown || n.ReactionsPending == 0 || f.evalsForN1("web") != 0 {
		t.Fatalf("after the crash: %+v (%v), %d evals; want down, marked, none", n, err, f.evalsForN1("web"))
	}
	svc := f.coldStart()
	for range 2 {
		if err := svc.RedoNodeReactions(f.ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if got := f.evalsForN1("web"); got != 1 {
			t.Fatalf("the redo of the down's reactions: %d node-update evals of the job, want 1", got)
		}
	}
	if n, _ := f.store.Node(f.ctx, "n1"); n.ReactionsPending != 0 {
		t.Fatalf("after the redo the node is still marked %d", n.ReactionsPending)
	}

	crash.Store(true)
	node := &structs.Node{ID: "n1", Name: "n1", Datacenter: "dc1",
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 8000}, Memory: structs.NodeMemoryResources{MemoryMB: 8192}},
		Drivers:       map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}}
	if _, err := svc.RegisterNode(f.ctx, node); err == nil {
		t.Fatal("the registration whose write crashed succeeded")
	}
	if n, _ := f.store.Node(f.ctx, "n1"); n.Status != structs.NodeStatusReady || f.evalsForN1("web") != 1 {
		t.Fatalf("after the registration's crash: %s, %d evals; want ready, 1", n.Status, f.evalsForN1("web"))
	}
	if _, err := f.coldStart().RegisterNode(f.ctx, node); err != nil {
		t.Fatal(err)
	}
	if got := f.evalsForN1("web"); got != 2 {
		t.Fatalf("the registration sent again: %d node-update evals of the job, want 2", got)
	}
}

// TestHeartbeatCheckRedoesPendingReactionsOfADownNode: the embedded
// server died right after writing a node down, before the evaluation of
// the job with an alloc on it; the node's agent is gone, so no heartbeat
// will redo them. The server's heartbeat check (restarted: nothing in
// memory) leaves reactions less than a TTL plus grace old alone (they may
// be in flight) and then writes the evaluation, once.
func TestHeartbeatCheckRedoesPendingReactionsOfADownNode(t *testing.T) {
	f, _ := downWriteCrashed(t)
	svc := f.coldStart()
	if _, err := svc.CheckHeartbeats(f.ctx, time.Second); err != nil || f.evalsForN1("web") != 0 {
		t.Fatalf("the check within a TTL of the status change: %d evals (%v), want 0", f.evalsForN1("web"), err)
	}
	f.clk.Add(12 * time.Second)
	for range 2 {
		if _, err := svc.CheckHeartbeats(f.ctx, time.Second); err != nil || f.evalsForN1("web") != 1 {
			t.Fatalf("the check past a TTL plus grace: %d node-update evals of the job (%v), want 1", f.evalsForN1("web"), err)
		}
	}
}
