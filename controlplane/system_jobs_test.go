package controlplane

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

func sysJob(id, typ string) *structs.Job {
	j := testJob(id, 1)
	j.Type = typ
	return j
}

// nodeUpdateEvals lists the jobs with a pending node-update eval of node,
// sorted.
func (f *fixture) nodeUpdateEvals(node string) []string {
	f.t.Helper()
	evals, err := f.store.Evals(f.ctx, storage.EvalFilter{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, e := range evals {
		if e.Status == structs.EvalStatusPending && e.TriggeredBy == structs.EvalTriggerNodeUpdate && e.NodeID == node {
			out = append(out, e.JobID)
		}
	}
	slices.Sort(out)
	return out
}

// markDone completes every pending eval, so the next check sees only new
// ones.
func (f *fixture) markDone() {
	f.t.Helper()
	evals, _ := f.store.Evals(f.ctx, storage.EvalFilter{})
	var done []*structs.Evaluation
	for _, e := range evals {
		if e.Status == structs.EvalStatusPending {
			c := e.Copy()
			c.Status = structs.EvalStatusComplete
			done = append(done, c)
		}
	}
	if len(done) > 0 {
		if _, err := f.store.UpsertEvals(f.ctx, done...); err != nil {
			f.t.Fatal(err)
		}
	}
}

// A node that joins, becomes eligible, comes back, or changes its
// fingerprint gets a node-update evaluation of each running system and
// sysbatch job of its pool and datacenter.
func TestNodeEventsEvaluateSystemJobs(t *testing.T) {
	f := newFixture(t)
	for _, j := range []*structs.Job{sysJob("agent", structs.JobTypeSystem), sysJob("scan", structs.JobTypeSysBatch), testJob("web", 1),
		sysJob("old", structs.JobTypeSystem)} {
		if _, err := f.svc.RegisterJob(f.ctx, &RegisterRequest{Job: j}); err != nil {
			t.Fatal(err)
		}
	}
	gpu := sysJob("gpu-agent", structs.JobTypeSystem)
	gpu.NodePool = "gpu"
	other := sysJob("eu-agent", structs.JobTypeSystem)
	other.Datacenters = []string{"eu-*"}
	for _, j := range []*structs.Job{gpu, other} {
		if _, err := f.svc.RegisterJob(f.ctx, &RegisterRequest{Job: j}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.DeregisterJob(f.ctx, "default", "old", false); err != nil {
		t.Fatal(err)
	}
	f.markDone()
	want := []string{"agent", "scan"}

	f.node("n1")
	if got := f.nodeUpdateEvals("n1"); !slices.Equal(got, want) {
		t.Fatalf("a new node: node-update evals of %v, want %v", got, want)
	}
	f.markDone()
	f.node("n1") // the same fingerprint again
	if got := f.nodeUpdateEvals("n1"); len(got) != 0 {
		t.Fatalf("an unchanged re-registration evaluated %v", got)
	}
	if _, err := f.svc.UpdateEligibility(f.ctx, "n1", structs.NodeSchedulingIneligible); err != nil {
		t.Fatal(err)
	}
	if got := f.nodeUpdateEvals("n1"); len(got) != 0 {
		t.Fatalf("a node made ineligible evaluated %v", got)
	}
	if _, err := f.svc.UpdateEligibility(f.ctx, "n1", structs.NodeSchedulingEligible); err != nil {
		t.Fatal(err)
	}
	if got := f.nodeUpdateEvals("n1"); !slices.Equal(got, want) {
		t.Fatalf("a node made eligible: evals of %v, want %v", got, want)
	}
	f.markDone()
	if err := f.svc.NodeMissedHeartbeat(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := f.nodeUpdateEvals("n1"); len(got) != 0 {
		t.Fatalf("a node that went down evaluated %v (it has no allocs)", got)
	}
	if _, err := f.svc.Heartbeat(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if got := f.nodeUpdateEvals("n1"); !slices.Equal(got, want) {
		t.Fatalf("a node back from down: evals of %v, want %v", got, want)
	}
	f.markDone()
	changed := &structs.Node{ID: "n1", Name: "n1", Datacenter: "dc1", Attributes: map[string]string{"kernel.name": "linux"},
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 8000}, Memory: structs.NodeMemoryResources{MemoryMB: 8192}},
		Drivers:       map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}}
	if _, err := f.svc.RegisterNode(f.ctx, changed); err != nil {
		t.Fatal(err)
	}
	if got := f.nodeUpdateEvals("n1"); !slices.Equal(got, want) {
		t.Fatalf("a changed fingerprint: evals of %v, want %v", got, want)
	}
}

// A drain moves system allocs last: only once everything else on the node
// has stopped, and all at once; with IgnoreSystemJobs they keep running
// and the drain completes without them.
func TestDrainMovesSystemJobsLast(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		f := newFixture(t)
		f.node("n1")
		f.node("n2")
		web := f.place(testJob("web", 1), nil, "n1")[0]
		agent := f.place(sysJob("agent", structs.JobTypeSystem), nil, "n1")[0]
		if _, err := f.svc.UpdateDrain(f.ctx, "n1", &DrainSpec{Deadline: time.Hour, IgnoreSystemJobs: ignore}, false); err != nil {
			t.Fatal(err)
		}
		migrating := func(id string) bool {
			a, _ := f.store.Alloc(f.ctx, id)
			return a.DesiredTransition.ShouldMigrate()
		}
		if !migrating(web.ID) || migrating(agent.ID) {
			t.Fatalf("ignore=%v: at the start web migrating %v, agent %v; want web only", ignore, migrating(web.ID), migrating(agent.ID))
		}
		// The service alloc stops on the node; then the system one goes.
		if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{{ID: web.ID, ClientStatus: structs.AllocClientStatusComplete}}); err != nil {
			t.Fatal(err)
		}
		if err := f.svc.RunDrainer(f.ctx); err != nil {
			t.Fatal(err)
		}
		n, _ := f.store.Node(f.ctx, "n1")
		switch {
		case !ignore && (!migrating(agent.ID) || !n.Drain):
			t.Fatalf("after the rest stopped: agent migrating %v, still draining %v; want both", migrating(agent.ID), n.Drain)
		case ignore && (migrating(agent.ID) || n.Drain):
			t.Fatalf("ignore_system_jobs: agent migrating %v, still draining %v; want neither", migrating(agent.ID), n.Drain)
		}
	}
}

// noListingStore is the real store, refusing to list every job.
type noListingStore struct {
	*embedded.Store
	t *testing.T
}

func (s noListingStore) Jobs(ctx context.Context, ns, prefix string) ([]*structs.Job, error) {
	if ns == "" || ns == "*" {
		s.t.Errorf("Jobs(%q, %q): a node event listed every job", ns, prefix)
	}
	return s.Store.Jobs(ctx, ns, prefix)
}

// TestNodeEventsReadOnlySystemJobs: finding the system jobs of a node that
// joins reads the store's list of system and sysbatch jobs, never the
// listing of every job (its cost grows with the system jobs alone).
func TestNodeEventsReadOnlySystemJobs(t *testing.T) {
	f := newFixture(t)
	f.svc = New(Config{Store: noListingStore{Store: f.store, t: t}, Logger: zaptest.NewLogger(t), Now: f.clk.Now, HeartbeatTTL: 10 * time.Second})
	for _, j := range []*structs.Job{sysJob("agent", structs.JobTypeSystem), testJob("web", 1), testJob("api", 1)} {
		if _, err := f.svc.RegisterJob(f.ctx, &RegisterRequest{Job: j}); err != nil {
			t.Fatal(err)
		}
	}
	f.markDone()
	f.node("n1")
	if got := f.nodeUpdateEvals("n1"); !slices.Equal(got, []string{"agent"}) {
		t.Fatalf("a new node: node-update evals of %v, want [agent]", got)
	}
}

// TestEligibleAgainRedoesLostSystemJobEvals: a request making a node
// eligible whose write landed while its reactions were lost (the server
// died after the write, or the answer was lost) is what the operator sends
// again; the node is already eligible then, and the request must still
// evaluate the system jobs for it, or they never run there (found by the
// chaos suite: seed 1219 with system jobs, a crash after the eligibility's
// commit left a system job off an eligible node with room).
func TestEligibleAgainRedoesLostSystemJobEvals(t *testing.T) {
	f := newFixture(t)
	if _, err := f.svc.RegisterJob(f.ctx, &RegisterRequest{Job: sysJob("agent", structs.JobTypeSystem)}); err != nil {
		t.Fatal(err)
	}
	f.node("n1")
	if _, err := f.svc.UpdateEligibility(f.ctx, "n1", structs.NodeSchedulingIneligible); err != nil {
		t.Fatal(err)
	}
	f.markDone()
	// The first request's write, without its reactions.
	if _, err := f.store.UpdateNodeEligibility(f.ctx, "n1", structs.NodeSchedulingEligible); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.UpdateEligibility(f.ctx, "n1", structs.NodeSchedulingEligible); err != nil {
		t.Fatal(err)
	}
	if got := f.nodeUpdateEvals("n1"); !slices.Equal(got, []string{"agent"}) {
		t.Fatalf("the request sent again: node-update evals of %v, want [agent]", got)
	}
}
