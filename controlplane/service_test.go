package controlplane

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	t     *testing.T
	ctx   context.Context
	store *embedded.Store
	svc   *Service
	clk   *clock
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	clk := &clock{now: time.Now().UTC()}
	svc := New(Config{Store: store, Logger: zaptest.NewLogger(t), Now: clk.Now, HeartbeatTTL: 10 * time.Second})
	return &fixture{t: t, ctx: context.Background(), store: store, svc: svc, clk: clk}
}

func (f *fixture) node(id string) {
	f.t.Helper()
	if _, err := f.svc.RegisterNode(f.ctx, &structs.Node{ID: id, Name: id, Datacenter: "dc1",
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 8000}, Memory: structs.NodeMemoryResources{MemoryMB: 8192}},
		Drivers:       map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}}); err != nil {
		f.t.Fatal(err)
	}
}

func testJob(id string, count int) *structs.Job {
	return &structs.Job{Region: "global", Namespace: "default", ID: id, Name: id, Type: structs.JobTypeService, Priority: 50,
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: count,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
}

// place registers job and commits allocs of it on the given nodes (one
// per entry), running, in deployment dep ("" for none).
func (f *fixture) place(job *structs.Job, dep *structs.Deployment, nodes ...string) []*structs.Allocation {
	f.t.Helper()
	res, err := f.svc.RegisterJob(f.ctx, &RegisterRequest{Job: job})
	if err != nil {
		f.t.Fatal(err)
	}
	cur, _ := f.store.Job(f.ctx, job.Namespace, job.ID)
	var allocs []*structs.Allocation
	for i, n := range nodes {
		name := structs.AllocName(job.ID, "web", uint(i))
		a := &structs.Allocation{ID: structs.AllocIDForPlacement(res.EvalID, name, false, ""), Namespace: job.Namespace,
			EvalID: res.EvalID, Name: name, NodeID: n, JobID: job.ID, JobVersion: cur.Version, TaskGroup: "web",
			AllocatedResources: structs.AllocatedResourcesFor(job.TaskGroups[0]),
			DesiredStatus:      structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending}
		if dep != nil {
			a.DeploymentID = dep.ID
		}
		allocs = append(allocs, a)
	}
	done := &structs.Evaluation{ID: res.EvalID, Namespace: job.Namespace, JobID: job.ID, Status: structs.EvalStatusComplete}
	p := &structs.Plan{EvalID: res.EvalID, Namespace: job.Namespace, JobID: job.ID, JobModifyIndex: cur.JobModifyIndex,
		Placements: allocs, Deployment: dep, Evals: []*structs.Evaluation{done}}
	if _, err := f.store.CommitPlan(f.ctx, p); err != nil {
		f.t.Fatal(err)
	}
	for _, a := range allocs {
		if err := f.svc.UpdateAllocs(f.ctx, a.NodeID, []*structs.Allocation{{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning,
			TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, StartedAt: f.clk.Now().Add(-time.Hour)}}}}); err != nil {
			f.t.Fatal(err)
		}
	}
	return allocs
}

func (f *fixture) pendingEvals(jobID, trigger string) []*structs.Evaluation {
	evals, _ := f.store.EvalsByJob(f.ctx, "default", jobID)
	var out []*structs.Evaluation
	for _, e := range evals {
		if e.Status == structs.EvalStatusPending && e.TriggeredBy == trigger {
			out = append(out, e)
		}
	}
	return out
}

func TestMissedHeartbeatMarksDownOrDisconnected(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	f.node("n2")
	f.node("n3")
	f.place(testJob("plain", 1), nil, "n1")
	tolerant := testJob("tolerant", 1)
	d := time.Minute
	tolerant.TaskGroups[0].MaxClientDisconnect = &d
	f.place(tolerant, nil, "n2")

	// Everyone is within the TTL: nothing happens.
	f.clk.Add(5 * time.Second)
	if n, err := f.svc.CheckHeartbeats(f.ctx, 10*time.Second); err != nil || n != 0 {
		t.Fatalf("marked %d (%v) within the TTL", n, err)
	}
	// n3 keeps heartbeating; n1 and n2 fall silent past TTL + grace.
	f.clk.Add(16 * time.Second)
	if _, err := f.svc.Heartbeat(f.ctx, "n3"); err != nil {
		t.Fatal(err)
	}
	if n, err := f.svc.CheckHeartbeats(f.ctx, 10*time.Second); err != nil || n != 2 {
		t.Fatalf("marked %d (%v), want n1 and n2", n, err)
	}
	for id, want := range map[string]string{"n1": structs.NodeStatusDown, "n2": structs.NodeStatusDisconnected, "n3": structs.NodeStatusReady} {
		if n, _ := f.store.Node(f.ctx, id); n.Status != want {
			t.Fatalf("node %s is %s, want %s", id, n.Status, want)
		}
	}
	if len(f.pendingEvals("plain", structs.EvalTriggerNodeUpdate)) != 1 || len(f.pendingEvals("tolerant", structs.EvalTriggerNodeUpdate)) != 1 {
		t.Fatal("each job on a missed node gets a node-update evaluation")
	}
	// n2 heartbeats again: ready, and its jobs are evaluated (reconnect).
	if _, err := f.svc.Heartbeat(f.ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.store.Node(f.ctx, "n2"); n.Status != structs.NodeStatusReady {
		t.Fatalf("n2 after heartbeat: %s", n.Status)
	}
	if len(f.pendingEvals("tolerant", structs.EvalTriggerNodeUpdate)) != 2 {
		t.Fatal("a node coming back evaluates its jobs")
	}
}

func deploymentFor(job *structs.Job, version uint64, g structs.DeploymentState) *structs.Deployment {
	gs := g
	return &structs.Deployment{ID: structs.GenerateUUID(), Namespace: "default", JobID: job.ID, JobVersion: version,
		Status: structs.DeploymentStatusRunning, StatusDescription: structs.DeploymentStatusDescriptionRunning,
		TaskGroups: map[string]*structs.DeploymentState{"web": &gs}}
}

func health(ok bool, at time.Time) *structs.AllocDeploymentStatus {
	return &structs.AllocDeploymentStatus{Healthy: &ok, Timestamp: at}
}

func TestHealthReportsDriveTheDeployment(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	job := testJob("web", 2)
	dep := deploymentFor(job, 0, structs.DeploymentState{DesiredTotal: 2, ProgressDeadline: 10 * time.Minute})
	allocs := f.place(job, dep, "n1", "n1")
	before := len(f.pendingEvals("web", structs.EvalTriggerDeploymentWatcher))
	if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{{ID: allocs[0].ID, ClientStatus: "running",
		DeploymentID: allocs[0].DeploymentID, DeploymentStatus: health(true, f.clk.Now())}}); err != nil {
		t.Fatal(err)
	}
	evs := f.pendingEvals("web", structs.EvalTriggerDeploymentWatcher)
	if len(evs) != before+1 || evs[len(evs)-1].DeploymentID != dep.ID {
		t.Fatalf("a health report must create a deployment-watcher eval: %d", len(evs))
	}
	if d, _ := f.store.Deployment(f.ctx, dep.ID); d.TaskGroups["web"].HealthyAllocs != 1 || d.Status != structs.DeploymentStatusRunning {
		t.Fatalf("deployment after a healthy report: %+v", d.TaskGroups["web"])
	}
	// The same report again creates nothing new.
	if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{{ID: allocs[0].ID, ClientStatus: "running", ClientDescription: "x",
		DeploymentID: allocs[0].DeploymentID, DeploymentStatus: health(true, f.clk.Now())}}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.pendingEvals("web", structs.EvalTriggerDeploymentWatcher)); n != before+1 {
		t.Fatalf("a repeated report created evals: %d", n)
	}
	// With a progress deadline, an unhealthy alloc is marked for
	// rescheduling and the deployment goes on (Nomad's progress_deadline).
	if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{{ID: allocs[1].ID, ClientStatus: "failed",
		DeploymentID: allocs[1].DeploymentID, DeploymentStatus: health(false, f.clk.Now())}}); err != nil {
		t.Fatal(err)
	}
	d, _ := f.store.Deployment(f.ctx, dep.ID)
	if d.Status != structs.DeploymentStatusRunning {
		t.Fatalf("deployment with a progress deadline after an unhealthy alloc: %s %q", d.Status, d.StatusDescription)
	}
	if a, _ := f.store.Alloc(f.ctx, allocs[1].ID); !a.DesiredTransition.ShouldReschedule() {
		t.Fatal("the unhealthy alloc must be marked for rescheduling")
	}

	// Without one, the first unhealthy alloc fails the running deployment.
	other := testJob("other", 1)
	dep0 := deploymentFor(other, 0, structs.DeploymentState{DesiredTotal: 1})
	oa := f.place(other, dep0, "n1")
	if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{{ID: oa[0].ID, ClientStatus: "failed",
		DeploymentID: oa[0].DeploymentID, DeploymentStatus: health(false, f.clk.Now())}}); err != nil {
		t.Fatal(err)
	}
	d, _ = f.store.Deployment(f.ctx, dep0.ID)
	if d.Status != structs.DeploymentStatusFailed || d.StatusDescription != structs.DeploymentStatusDescriptionFailedAllocations {
		t.Fatalf("deployment without a progress deadline after an unhealthy alloc: %s %q", d.Status, d.StatusDescription)
	}
}

// placeStable places job's one alloc on node in a deployment of version
// 0 and marks the deployment successful: a stable version to revert to.
func (f *fixture) placeStable(job *structs.Job, node string) {
	f.t.Helper()
	dep := deploymentFor(job, 0, structs.DeploymentState{DesiredTotal: 1})
	f.place(job, dep, node)
	if _, err := f.store.UpdateDeploymentStatus(f.ctx, &structs.DeploymentStatusUpdate{DeploymentID: dep.ID,
		Status: structs.DeploymentStatusSuccessful}); err != nil {
		f.t.Fatal(err)
	}
}

// TestAutoRevertOnFailure: a failing deployment with auto_revert
// registers the latest stable version again.
func TestAutoRevertOnFailure(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	v0 := testJob("web", 1)
	f.placeStable(v0, "n1")
	v1 := testJob("web", 1)
	v1.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/false"}
	dep1 := deploymentFor(v1, 1, structs.DeploymentState{DesiredTotal: 1, AutoRevert: true})
	allocs := f.place(v1, dep1, "n1")
	if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{{ID: allocs[0].ID, ClientStatus: "failed",
		DeploymentID: allocs[0].DeploymentID, DeploymentStatus: health(false, f.clk.Now())}}); err != nil {
		t.Fatal(err)
	}
	d, _ := f.store.Deployment(f.ctx, dep1.ID)
	if d.Status != structs.DeploymentStatusFailed || d.StatusDescription != "Failed due to unhealthy allocations - rolling back to job version 0" {
		t.Fatalf("failed deployment: %s %q", d.Status, d.StatusDescription)
	}
	cur, _ := f.store.Job(f.ctx, "default", "web")
	if cur.Version != 2 || cur.TaskGroups[0].Tasks[0].Config["command"] != "/bin/true" {
		t.Fatalf("job after auto-revert: version %d config %v", cur.Version, cur.TaskGroups[0].Tasks[0].Config)
	}
}

func TestProgressDeadlineAndAutoPromote(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	slow := testJob("slow", 1)
	dep := deploymentFor(slow, 0, structs.DeploymentState{DesiredTotal: 1, ProgressDeadline: time.Minute})
	f.place(slow, dep, "n1")
	if err := f.svc.CheckDeployments(f.ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := f.store.Deployment(f.ctx, dep.ID); d.Status != structs.DeploymentStatusRunning {
		t.Fatalf("failed before its deadline: %s", d.Status)
	}
	// The store set the deadline at the first placement, on the wall
	// clock; move the service's clock past it.
	f.clk.Add(2 * time.Minute)
	if err := f.svc.CheckDeployments(f.ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := f.store.Deployment(f.ctx, dep.ID); d.Status != structs.DeploymentStatusFailed ||
		d.StatusDescription != structs.DeploymentStatusDescriptionProgressDeadline {
		t.Fatalf("after the progress deadline: %s %q", d.Status, d.StatusDescription)
	}

	canary := testJob("canary", 2)
	cdep := deploymentFor(canary, 0, structs.DeploymentState{DesiredTotal: 2, DesiredCanaries: 1, AutoPromote: true})
	f.place(canary, cdep)
	c := f.placeCanary("canary", cdep.ID, "n1")
	// Not yet healthy: no promotion; and a manual promotion is refused.
	if err := f.svc.CheckDeployments(f.ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := f.store.Deployment(f.ctx, cdep.ID); d.TaskGroups["web"].Promoted {
		t.Fatal("promoted before the canary was healthy")
	}
	if _, err := f.svc.PromoteDeployment(f.ctx, cdep.ID, nil); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("promotion with an unhealthy canary: %v", err)
	}
	if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{{ID: c.ID, ClientStatus: "running",
		DeploymentID: c.DeploymentID, DeploymentStatus: health(true, f.clk.Now())}}); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.CheckDeployments(f.ctx); err != nil {
		t.Fatal(err)
	}
	if d, _ := f.store.Deployment(f.ctx, cdep.ID); !d.TaskGroups["web"].Promoted {
		t.Fatal("healthy canaries with auto_promote were not promoted")
	}
	if _, err := f.svc.PromoteDeployment(f.ctx, cdep.ID, nil); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("promoting twice: %v", err)
	}
	if _, err := f.svc.PromoteDeployment(f.ctx, "nope", nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("promoting an unknown deployment: %v", err)
	}
}

func mustJob(f *fixture, id string) *structs.Job {
	f.t.Helper()
	j, err := f.store.Job(f.ctx, "default", id)
	if err != nil {
		f.t.Fatal(err)
	}
	return j
}

// placeCanary commits a canary alloc of job's group "web" in deployment
// depID on node, as a canary placement's plan does, and returns it.
func (f *fixture) placeCanary(jobID, depID, node string) *structs.Allocation {
	f.t.Helper()
	job := mustJob(f, jobID)
	name := structs.AllocName(jobID, "web", 0)
	c := &structs.Allocation{ID: structs.AllocIDForPlacement("canary-eval", name, true, ""), Namespace: "default",
		EvalID: "canary-eval", Name: name, NodeID: node, JobID: jobID, JobVersion: job.Version, TaskGroup: "web",
		AllocatedResources: structs.AllocatedResourcesFor(job.TaskGroups[0]), DesiredStatus: "run", ClientStatus: "pending",
		DeploymentID: depID, DeploymentStatus: &structs.AllocDeploymentStatus{Canary: true}}
	if _, err := f.store.CommitPlan(f.ctx, &structs.Plan{EvalID: "canary-eval", Namespace: "default", JobID: jobID,
		JobModifyIndex: job.JobModifyIndex, Placements: []*structs.Allocation{c}}); err != nil {
		f.t.Fatal(err)
	}
	return c
}

func TestDrainerRespectsMaxParallel(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	f.node("n2")
	job := testJob("web", 3)
	job.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 1, MinHealthyTime: time.Second}
	allocs := f.place(job, nil, "n1", "n1", "n1")
	if _, err := f.svc.UpdateEligibility(f.ctx, "n1", "sometimes"); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("bad eligibility: %v", err)
	}
	n, err := f.svc.UpdateDrain(f.ctx, "n1", &DrainSpec{Deadline: time.Hour}, false)
	if err != nil || !n.Drain || n.SchedulingEligibility != structs.NodeSchedulingIneligible {
		t.Fatalf("drain: %+v %v", n, err)
	}
	marked := func() int {
		c := 0
		for _, a := range allocs {
			got, _ := f.store.Alloc(f.ctx, a.ID)
			if got.DesiredTransition.ShouldMigrate() {
				c++
			}
		}
		return c
	}
	if m := marked(); m != 1 {
		t.Fatalf("marked %d allocs for migration at once, max_parallel is 1", m)
	}
	if len(f.pendingEvals("web", structs.EvalTriggerNodeDrain)) != 1 {
		t.Fatal("no node-drain evaluation")
	}
	// Nothing moves on until a replacement is healthy.
	if err := f.svc.RunDrainer(f.ctx); err != nil {
		t.Fatal(err)
	}
	if m := marked(); m != 1 {
		t.Fatalf("marked %d before the first replacement was healthy", m)
	}
	if _, err := f.svc.UpdateEligibility(f.ctx, "n1", structs.NodeSchedulingEligible); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("a draining node made eligible: %v", err)
	}
	// The deadline forces the rest.
	f.clk.Add(2 * time.Hour)
	if err := f.svc.RunDrainer(f.ctx); err != nil {
		t.Fatal(err)
	}
	if m := marked(); m != 3 {
		t.Fatalf("marked %d after the deadline", m)
	}
	// Once nothing is left, the drain completes and the node stays
	// ineligible.
	for _, a := range allocs {
		p := &structs.Plan{EvalID: "stop-" + a.ID, Namespace: "default", JobID: "web", JobModifyIndex: mustJob(f, "web").JobModifyIndex,
			Stops: []*structs.AllocStop{{AllocID: a.ID, NodeID: "n1", DesiredStatus: structs.AllocDesiredStatusStop}}}
		if _, err := f.store.CommitPlan(f.ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.svc.RunDrainer(f.ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.store.Node(f.ctx, "n1"); n.Drain || n.SchedulingEligibility != structs.NodeSchedulingIneligible {
		t.Fatalf("after the drain: drain %v eligibility %s", n.Drain, n.SchedulingEligibility)
	}
}

func TestRevertJob(t *testing.T) {
	f := newFixture(t)
	v0 := testJob("web", 1)
	if _, err := f.svc.RegisterJob(f.ctx, &RegisterRequest{Job: v0}); err != nil {
		t.Fatal(err)
	}
	v1 := testJob("web", 5)
	v1.Priority = 70
	if _, err := f.svc.RegisterJob(f.ctx, &RegisterRequest{Job: v1}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.RevertJob(f.ctx, "default", "web", 1, nil); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("revert to the current version: %v", err)
	}
	wrong := uint64(7)
	if _, err := f.svc.RevertJob(f.ctx, "default", "web", 0, &wrong); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("enforced prior version mismatch: %v", err)
	}
	if _, err := f.svc.RevertJob(f.ctx, "default", "web", 9, nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("revert to a missing version: %v", err)
	}
	resp, err := f.svc.RevertJob(f.ctx, "default", "web", 0, nil)
	if err != nil || resp.EvalID == "" {
		t.Fatalf("revert: %v", err)
	}
	cur := mustJob(f, "web")
	if cur.Version != 2 || cur.Priority != 50 || cur.TaskGroups[0].Count != 1 {
		t.Fatalf("after revert: version %d priority %d count %d", cur.Version, cur.Priority, cur.TaskGroups[0].Count)
	}
}

// TestDrainDeadlineEncoding: Nomad's drain deadline: 0 is no deadline, a
// negative one forces everything off at once.
func TestDrainDeadlineEncoding(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	f.node("n2")
	job := testJob("web", 3)
	job.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 1, MinHealthyTime: time.Second}
	allocs := f.place(job, nil, "n1", "n1", "n1")
	marked := func() int {
		c := 0
		for _, a := range allocs {
			if got, _ := f.store.Alloc(f.ctx, a.ID); got.DesiredTransition.ShouldMigrate() {
				c++
			}
		}
		return c
	}
	n, err := f.svc.UpdateDrain(f.ctx, "n1", &DrainSpec{Deadline: 0}, false)
	if err != nil || !n.DrainStrategy.ForceDeadline.IsZero() {
		t.Fatalf("no-deadline drain: %+v %v", n.DrainStrategy, err)
	}
	f.clk.Add(48 * time.Hour)
	if err := f.svc.RunDrainer(f.ctx); err != nil {
		t.Fatal(err)
	}
	if m := marked(); m != 1 {
		t.Fatalf("a drain without deadline marked %d allocs, max_parallel is 1", m)
	}
	if _, err := f.svc.UpdateDrain(f.ctx, "n1", &DrainSpec{Deadline: -1}, false); err != nil {
		t.Fatal(err)
	}
	if m := marked(); m != 3 {
		t.Fatalf("a forced drain marked %d allocs, want all 3 at once", m)
	}
}

// TestResentReportRedoesLostReactions: a node sends a report again when
// the first sending failed, and the first may have been written before
// the control plane died (or its answer was lost): the resent report
// changes nothing in the store, and still the reactions run, so a failed
// alloc is rescheduled and freed room unblocks evaluations (found by the
// chaos suite: `go test ./chaos -run TestChaos/embedded -seed 973`).
func TestResentReportRedoesLostReactions(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	allocs := f.place(testJob("web", 2), nil, "n1", "n1")
	blocked := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "other", Type: "service",
		TriggeredBy: structs.EvalTriggerQueuedAllocs, Status: structs.EvalStatusBlocked}
	if _, err := f.store.UpsertEvals(f.ctx, blocked); err != nil {
		t.Fatal(err)
	}
	failed := &structs.Allocation{ID: allocs[0].ID, ClientStatus: structs.AllocClientStatusFailed,
		TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateDead, Failed: true, FinishedAt: f.clk.Now()}}}
	// The first sending: written, then the process died before reacting.
	if _, err := f.store.UpdateAllocsFromClient(f.ctx, "n1", []*structs.Allocation{failed}); err != nil {
		t.Fatal(err)
	}
	if got := f.pendingEvals("web", structs.EvalTriggerRetryFailedAlloc); len(got) != 0 {
		t.Fatalf("reaction ran before the resend: %v", got)
	}
	// The node sends it again.
	if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{failed}); err != nil {
		t.Fatal(err)
	}
	if got := f.pendingEvals("web", structs.EvalTriggerRetryFailedAlloc); len(got) != 1 {
		t.Fatalf("the resent failure created %d alloc-failure evals, want 1", len(got))
	}
	if e, err := f.store.Eval(f.ctx, blocked.ID); err != nil || e.Status != structs.EvalStatusPending {
		t.Fatalf("the blocked eval after the resent terminal report: %+v %v", e, err)
	}

	// A resent running report (nothing terminal) reacts to nothing.
	running := &structs.Allocation{ID: allocs[1].ID, ClientStatus: structs.AllocClientStatusRunning}
	before, _ := f.store.EvalsByJob(f.ctx, "default", "web")
	if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{running}); err != nil {
		t.Fatal(err)
	}
	if after, _ := f.store.EvalsByJob(f.ctx, "default", "web"); len(after) != len(before) {
		t.Fatalf("a resent running report created evals: %d → %d", len(before), len(after))
	}
}

// TestResentHealthReportRedoesLostReactions: a health report whose first
// sending was written but whose reactions never ran (the answer lost, or
// the control plane died) is sent again and changes nothing in the store;
// its health reactions run all the same. Without a progress deadline the
// unhealthy alloc fails its running deployment (else the reconciler holds
// the failed alloc back for the deployment, which nothing fails: a job
// short of its count for good; chaos seed 538 on kumo); with one, the
// alloc is marked for replacement; a healthy one gets the deployment its
// evaluation, so the rollout goes on.
func TestResentHealthReportRedoesLostReactions(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	report := func(a *structs.Allocation, status string, healthy bool) *structs.Allocation {
		return &structs.Allocation{ID: a.ID, ClientStatus: status, DeploymentID: a.DeploymentID, DeploymentStatus: health(healthy, f.clk.Now()),
			TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateDead, Failed: status == "failed", FinishedAt: f.clk.Now()}}}
	}
	// written is the first sending: stored, its reactions never run.
	written := func(u *structs.Allocation) {
		t.Helper()
		if _, err := f.store.UpdateAllocsFromClient(f.ctx, "n1", []*structs.Allocation{u}); err != nil {
			t.Fatal(err)
		}
	}

	job := testJob("web", 2)
	dep := deploymentFor(job, 0, structs.DeploymentState{DesiredTotal: 2})
	allocs := f.place(job, dep, "n1", "n1")
	failed := report(allocs[0], "failed", false)
	written(failed)
	if d, _ := f.store.Deployment(f.ctx, dep.ID); d.Status != structs.DeploymentStatusRunning || d.TaskGroups["web"].UnhealthyAllocs != 1 {
		t.Fatalf("deployment before the resend: %s %+v", d.Status, d.TaskGroups["web"])
	}
	if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{failed}); err != nil {
		t.Fatal(err)
	}
	d, _ := f.store.Deployment(f.ctx, dep.ID)
	if d.Status != structs.DeploymentStatusFailed || d.StatusDescription != structs.DeploymentStatusDescriptionFailedAllocations {
		t.Fatalf("deployment after the resent unhealthy report: %s %q", d.Status, d.StatusDescription)
	}
	// Sent once more: the failed deployment is left as it is.
	evals, _ := f.store.EvalsByJob(f.ctx, "default", "web")
	if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{failed}); err != nil {
		t.Fatal(err)
	}
	if again, _ := f.store.EvalsByJob(f.ctx, "default", "web"); len(again) != len(evals)+1 {
		// The one new eval is the failed alloc's reschedule (redone too).
		t.Fatalf("a third sending: %d evals → %d, want one more (the reschedule)", len(evals), len(again))
	}

	paced := testJob("paced", 2)
	pdep := deploymentFor(paced, 0, structs.DeploymentState{DesiredTotal: 2, ProgressDeadline: 10 * time.Minute})
	pa := f.place(paced, pdep, "n1", "n1")
	pf := report(pa[0], "failed", false)
	written(pf)
	if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{pf}); err != nil {
		t.Fatal(err)
	}
	if a, _ := f.store.Alloc(f.ctx, pa[0].ID); !a.DesiredTransition.ShouldReschedule() {
		t.Fatal("the resent unhealthy alloc of a group with a progress deadline must be marked for replacement")
	}
	if d, _ := f.store.Deployment(f.ctx, pdep.ID); d.Status != structs.DeploymentStatusRunning {
		t.Fatalf("deployment with a progress deadline: %s", d.Status)
	}
	ok := report(pa[1], "running", true)
	ok.TaskStates = map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, StartedAt: f.clk.Now()}}
	written(ok)
	before := len(f.pendingEvals("paced", structs.EvalTriggerDeploymentWatcher))
	if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{ok}); err != nil {
		t.Fatal(err)
	}
	if evs := f.pendingEvals("paced", structs.EvalTriggerDeploymentWatcher); len(evs) != before+1 || evs[len(evs)-1].DeploymentID != pdep.ID {
		t.Fatalf("a resent healthy report must create the deployment's eval: %d → %d", before, len(evs))
	}
}

// TestCheckDeploymentsFailsUnhealthyWithoutDeadline: the watcher's timed
// check fails a running deployment that counts an unhealthy alloc in a
// group without a progress deadline, whatever became of the report's own
// reactions; a group with a deadline is left to its deadline.
func TestCheckDeploymentsFailsUnhealthyWithoutDeadline(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	unhealthy := func(a *structs.Allocation) {
		t.Helper()
		// Written by the store alone: the reactions never ran.
		if _, err := f.store.UpdateAllocsFromClient(f.ctx, "n1", []*structs.Allocation{{ID: a.ID, ClientStatus: "failed",
			DeploymentID: a.DeploymentID, DeploymentStatus: health(false, f.clk.Now())}}); err != nil {
			t.Fatal(err)
		}
	}
	job := testJob("web", 2)
	dep := deploymentFor(job, 0, structs.DeploymentState{DesiredTotal: 2})
	unhealthy(f.place(job, dep, "n1", "n1")[0])
	paced := testJob("paced", 1)
	pdep := deploymentFor(paced, 0, structs.DeploymentState{DesiredTotal: 1, ProgressDeadline: 10 * time.Minute})
	unhealthy(f.place(paced, pdep, "n1")[0])
	if err := f.svc.CheckDeployments(f.ctx); err != nil {
		t.Fatal(err)
	}
	d, _ := f.store.Deployment(f.ctx, dep.ID)
	if d.Status != structs.DeploymentStatusFailed || d.StatusDescription != structs.DeploymentStatusDescriptionFailedAllocations {
		t.Fatalf("deployment counting an unhealthy alloc after the check: %s %q", d.Status, d.StatusDescription)
	}
	if evs := f.pendingEvals("web", structs.EvalTriggerDeploymentWatcher); len(evs) == 0 || evs[len(evs)-1].DeploymentID != dep.ID {
		t.Fatal("failing the deployment must evaluate its job")
	}
	if d, _ := f.store.Deployment(f.ctx, pdep.ID); d.Status != structs.DeploymentStatusRunning {
		t.Fatalf("a group with a progress deadline is failed by its deadline only: %s %q", d.Status, d.StatusDescription)
	}
}

// TestAutoRevertIgnoresPurgedVersions: a job purged and registered again
// does not roll back to a stable version of the purged job when its
// first deployment fails: in Nomad those versions went with the purge.
func TestAutoRevertIgnoresPurgedVersions(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	v0 := testJob("web", 1)
	f.placeStable(v0, "n1")
	if _, err := f.svc.DeregisterJob(f.ctx, "default", "web", true); err != nil {
		t.Fatal(err)
	}
	vs, err := f.store.JobVersions(f.ctx, "default", "web")
	if err != nil || len(vs) == 0 || !vs[len(vs)-1].Stable {
		t.Fatalf("the store keeps the purged job's stable version for its allocs: %v %v", vs, err)
	}
	again := testJob("web", 1)
	again.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/false"}
	dep1 := deploymentFor(again, vs[0].Version+1, structs.DeploymentState{DesiredTotal: 1, AutoRevert: true})
	allocs := f.place(again, dep1, "n1")
	if err := f.svc.UpdateAllocs(f.ctx, "n1", []*structs.Allocation{{ID: allocs[0].ID, ClientStatus: "failed",
		DeploymentID: allocs[0].DeploymentID, DeploymentStatus: health(false, f.clk.Now())}}); err != nil {
		t.Fatal(err)
	}
	d, _ := f.store.Deployment(f.ctx, dep1.ID)
	if d.Status != structs.DeploymentStatusFailed ||
		d.StatusDescription != structs.DeploymentStatusDescriptionFailedAllocations+" - no stable job version to auto revert to" {
		t.Fatalf("failed deployment: %s %q, want no rollback", d.Status, d.StatusDescription)
	}
	cur, _ := f.store.Job(f.ctx, "default", "web")
	if cur.Version != vs[0].Version+1 || cur.TaskGroups[0].Tasks[0].Config["command"] != "/bin/false" {
		t.Fatalf("job after the failed deployment: version %d config %v", cur.Version, cur.TaskGroups[0].Tasks[0].Config)
	}
}
