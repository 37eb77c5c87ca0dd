// Package storagetest is the ONE conformance suite every storage.Store
// backend must pass (design invariant 7). A backend's test calls Run with a
// factory returning a fresh, empty store.
package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Factory returns a fresh, empty store; the suite closes it.
type Factory func(t *testing.T) storage.Store

// Option changes how Run runs the suite.
type Option func(*options)

type options struct{ parallel bool }

// Parallel runs the suite's tests in parallel (each has its own store): for
// backends whose calls wait on a server, such as DynamoDB on an emulator.
func Parallel() Option { return func(o *options) { o.parallel = true } }

// Run runs every conformance test against stores made by newStore.
func Run(t *testing.T, newStore Factory, opts ...Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s storage.Store)
	}{
		{"RegisterJobWritesVersionAndEval", testRegisterJob},
		{"ReRegisterSameSpecKeepsVersion", testReRegisterSameSpec},
		{"EnforceIndex", testEnforceIndex},
		{"JobListingAndVersions", testJobListing},
		{"DeregisterStopAndPurge", testDeregister},
		{"NodesRegisterKeepOperatorSettings", testNodes},
		{"CommitPlanPlacesAndLinks", testCommitPlan},
		{"CommitPlanStaleJobConflicts", testCommitPlanStaleJob},
		{"CommitPlanReplayConflicts", testCommitPlanReplay},
		{"CommitPlanCapacity", testCommitPlanCapacity},
		{"CommitPlanNodeNotReady", testCommitPlanNodeNotReady},
		{"CommitPlanStopsUpdatesDeploymentsEvals", testCommitPlanStopsAndUpdates},
		{"ConcurrentPlansNeverOverCommit", testConcurrentPlans},
		{"DeploymentCounters", testDeploymentCounters},
		{"DeploymentStatusPromotionStability", testDeploymentLifecycle},
		{"NodeDrainAndEligibility", testNodeDrain},
		{"AllocDesiredTransitions", testDesiredTransitions},
		{"GarbageCollect", testGarbageCollect},
		{"ParentJobs", testParentJobs},
		{"UpdateAllocsFromClient", testClientUpdates},
		{"JobStatus", testJobStatus},
		{"EvalsListing", testEvals},
		{"TableIndexes", testIndexes},
		{"UsageMaintained", testUsageMaintained},
		{"CandidateNodes", testCandidateNodes},
		{"ClientHealthCountsForItsDeploymentOnly", testHealthOfAnotherDeployment},
		{"ClientTerminalReportReplacesLost", testTerminalReportReplacesLost},
		{"EvalStatusFilter", testEvalStatusFilter},
		{"ActiveDeployments", testActiveDeployments},
		{"JobSubmissions", testJobSubmissions},
		{"NodeEvents", testNodeEvents},
		{"Namespaces", testNamespaces},
		{"SchedulerConfig", testSchedulerConfig},
		{"ACLTokens", testACLTokens},
		{"ACLPolicies", testACLPolicies},
		{"ACLBootstrap", testACLBootstrap},
		{"NodeSecrets", testNodeSecrets},
		{"PortUsage", testPortUsage},
		{"ConcurrentPlansNeverShareAPort", testConcurrentPortPlans},
		{"PlansNeverTakeReservedPorts", testReservedPortPlans},
		{"SystemJobs", testSystemJobs},
		{"ServiceRegistrations", testServiceRegistrations},
		{"ServiceRegistrationsFollowAllocs", testServiceRegistrationsFollowAllocs},
		{"NodeReactionsPending", testNodeReactionsPending},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if o.parallel {
				t.Parallel()
			}
			s := newStore(t)
			defer s.Close()
			defer func() {
				if r := recover(); r != nil {
					if me, ok := r.(mustError); ok {
						t.Fatalf("unexpected error: %v", me.err)
					}
					panic(r)
				}
			}()
			tc.fn(t, s)
		})
	}
}

var ctx = context.Background()

// Fixtures.

func testJob(id string) *structs.Job {
	return &structs.Job{
		Region: "global", Namespace: structs.DefaultNamespace, ID: id, Name: id,
		Type: structs.JobTypeService, Priority: 50, NodePool: structs.DefaultNodePool,
		TaskGroups: []*structs.TaskGroup{{
			Name: "web", Count: 1,
			EphemeralDisk: &structs.EphemeralDisk{SizeMB: 100},
			Tasks: []*structs.Task{{
				Name: "server", Driver: "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{"100"}},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 128},
			}},
		}},
	}
}

func testEval(job *structs.Job, trigger string) *structs.Evaluation {
	return &structs.Evaluation{
		ID: structs.GenerateUUID(), Namespace: job.Namespace, JobID: job.ID, Priority: job.Priority,
		Type: job.Type, TriggeredBy: trigger, Status: structs.EvalStatusPending,
	}
}

func testNode(id string, cpu, mem int64) *structs.Node {
	return &structs.Node{
		ID: id, Name: id, Datacenter: "dc1", NodePool: structs.DefaultNodePool,
		Attributes:            map[string]string{"kernel.name": "linux"},
		NodeResources:         &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: cpu}, Memory: structs.NodeMemoryResources{MemoryMB: mem}, Disk: structs.NodeDiskResources{DiskMB: 10000}},
		Drivers:               map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		SchedulingEligibility: structs.NodeSchedulingEligible, Status: structs.NodeStatusReady,
	}
}

func register(t *testing.T, s storage.Store, job *structs.Job) *storage.RegisterJobResult {
	t.Helper()
	res, err := s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, Eval: testEval(job, structs.EvalTriggerJobRegister), SubmitTime: time.Now().UnixNano()})
	if err != nil {
		t.Fatalf("register job %s: %v", job.ID, err)
	}
	return res
}

func addNode(t *testing.T, s storage.Store, n *structs.Node) *structs.Node {
	t.Helper()
	out, err := s.UpsertNode(ctx, n)
	if err != nil {
		t.Fatalf("upsert node %s: %v", n.ID, err)
	}
	return out
}

// placement builds a new alloc of job's first group named index on node.
func placement(job *structs.Job, evalID string, index uint, nodeID string) *structs.Allocation {
	tg := job.TaskGroups[0]
	name := structs.AllocName(job.ID, tg.Name, index)
	return &structs.Allocation{
		ID: structs.AllocIDForPlacement(evalID, name, false, ""), Namespace: job.Namespace, EvalID: evalID,
		Name: name, NodeID: nodeID, JobID: job.ID, JobVersion: job.Version, TaskGroup: tg.Name,
		AllocatedResources: structs.AllocatedResourcesFor(tg),
		DesiredStatus:      structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
	}
}

func planFor(job *structs.Job, evalID string, places ...*structs.Allocation) *structs.Plan {
	return &structs.Plan{EvalID: evalID, Namespace: job.Namespace, JobID: job.ID, Priority: job.Priority,
		JobModifyIndex: job.JobModifyIndex, Placements: places}
}

// mustError carries an unexpected error from must to the subtest, which
// fails with it (must is only called on the test's own goroutine).
type mustError struct{ err error }

func must[T any](v T, err error) T {
	if err != nil {
		panic(mustError{err})
	}
	return v
}

// Tests.

func testRegisterJob(t *testing.T, s storage.Store) {
	res := register(t, s, testJob("web"))
	if res.Job.Version != 0 || res.Job.CreateIndex == 0 || res.Job.JobModifyIndex == 0 || res.Index == 0 {
		t.Fatalf("first registration: version %d create %d jmi %d index %d", res.Job.Version, res.Job.CreateIndex, res.Job.JobModifyIndex, res.Index)
	}
	if res.Eval.JobModifyIndex != res.Job.JobModifyIndex {
		t.Fatalf("eval job modify index %d, job %d", res.Eval.JobModifyIndex, res.Job.JobModifyIndex)
	}
	got := must(s.Job(ctx, "default", "web"))
	if got.ID != "web" || got.Version != 0 || got.TaskGroups[0].Tasks[0].Config["command"] != "/bin/sleep" {
		t.Fatalf("stored job: %+v", got)
	}
	ev := must(s.Eval(ctx, res.Eval.ID))
	if ev.Status != structs.EvalStatusPending || ev.CreateIndex != res.Index {
		t.Fatalf("stored eval: status %s create index %d (want %d)", ev.Status, ev.CreateIndex, res.Index)
	}
	changed := testJob("web")
	changed.TaskGroups[0].Count = 3
	res2 := register(t, s, changed)
	if res2.Job.Version != 1 || res2.Job.JobModifyIndex <= res.Job.JobModifyIndex || res2.Job.CreateIndex != res.Job.CreateIndex {
		t.Fatalf("changed spec: version %d jmi %d create %d", res2.Job.Version, res2.Job.JobModifyIndex, res2.Job.CreateIndex)
	}
	if _, err := s.Job(ctx, "default", "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown job: want ErrNotFound, got %v", err)
	}
}

func testReRegisterSameSpec(t *testing.T, s storage.Store) {
	first := register(t, s, testJob("web"))
	again := register(t, s, testJob("web"))
	if again.Job.Version != first.Job.Version || again.Job.JobModifyIndex != first.Job.JobModifyIndex {
		t.Fatalf("same spec: version %d→%d, jmi %d→%d", first.Job.Version, again.Job.Version, first.Job.JobModifyIndex, again.Job.JobModifyIndex)
	}
	if again.Eval.ID == first.Eval.ID || again.Index <= first.Index {
		t.Fatal("same spec must still write a new eval at a new index")
	}
	if n := len(must(s.JobVersions(ctx, "default", "web"))); n != 1 {
		t.Fatalf("versions after same-spec registration: %d, want 1", n)
	}
}

func testEnforceIndex(t *testing.T, s storage.Store) {
	job := testJob("web")
	_, err := s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, Eval: testEval(job, structs.EvalTriggerJobRegister), EnforceIndex: true, JobModifyIndex: 7})
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("enforce index on a missing job: want ErrConflict, got %v", err)
	}
	if _, err := s.Job(ctx, "default", "web"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal("a refused registration must write nothing")
	}
	res := must(s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, Eval: testEval(job, structs.EvalTriggerJobRegister), EnforceIndex: true, JobModifyIndex: 0}))
	changed := testJob("web")
	changed.Priority = 70
	ev := testEval(changed, structs.EvalTriggerJobRegister)
	_, err = s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: changed, Eval: ev, EnforceIndex: true, JobModifyIndex: res.Job.JobModifyIndex + 100})
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale enforce index: want ErrConflict, got %v", err)
	}
	if _, err := s.Eval(ctx, ev.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal("a refused registration must not write its eval")
	}
	must(s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: changed, Eval: testEval(changed, structs.EvalTriggerJobRegister), EnforceIndex: true, JobModifyIndex: res.Job.JobModifyIndex}))
	if got := must(s.Job(ctx, "default", "web")); got.Priority != 70 {
		t.Fatalf("priority %d after enforced registration", got.Priority)
	}
}

func testJobListing(t *testing.T, s storage.Store) {
	for _, id := range []string{"web", "web-api", "batch1"} {
		register(t, s, testJob(id))
	}
	other := testJob("web-other-ns")
	other.Namespace = "prod"
	register(t, s, other)
	ids := func(js []*structs.Job) []string {
		var out []string
		for _, j := range js {
			out = append(out, j.Namespace+"/"+j.ID)
		}
		return out
	}
	if got := ids(must(s.Jobs(ctx, "default", "web"))); fmt.Sprint(got) != "[default/web default/web-api]" {
		t.Fatalf("prefix web in default: %v", got)
	}
	if got := ids(must(s.Jobs(ctx, "*", "web"))); len(got) != 3 {
		t.Fatalf("prefix web in all namespaces: %v", got)
	}
	for i := 1; i <= 8; i++ {
		j := testJob("web")
		j.TaskGroups[0].Count = i + 1
		register(t, s, j)
	}
	vs := must(s.JobVersions(ctx, "default", "web"))
	if len(vs) == 0 || vs[0].Version != 8 {
		t.Fatalf("newest version first: got %d versions, first %+v", len(vs), vs[0].Version)
	}
	for i := 1; i < len(vs); i++ {
		if vs[i].Version >= vs[i-1].Version {
			t.Fatalf("versions not newest first: %d after %d", vs[i].Version, vs[i-1].Version)
		}
	}
	v8 := must(s.JobVersion(ctx, "default", "web", 8))
	if v8.TaskGroups[0].Count != 9 {
		t.Fatalf("version 8 count %d", v8.TaskGroups[0].Count)
	}
	if _, err := s.JobVersion(ctx, "default", "web", 99); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("missing version: %v", err)
	}
}

func testDeregister(t *testing.T, s storage.Store) {
	res := register(t, s, testJob("web"))
	stop := must(s.DeregisterJob(ctx, &storage.DeregisterJobRequest{Namespace: "default", JobID: "web", Eval: testEval(res.Job, structs.EvalTriggerJobDeregister)}))
	if !stop.Job.Stop || stop.Job.Version != 1 || stop.Eval.JobModifyIndex != stop.Job.JobModifyIndex {
		t.Fatalf("stop: %+v", stop.Job)
	}
	if got := must(s.Job(ctx, "default", "web")); !got.Stop {
		t.Fatal("stopped job not marked Stop")
	}
	purge := must(s.DeregisterJob(ctx, &storage.DeregisterJobRequest{Namespace: "default", JobID: "web", Purge: true, Eval: testEval(res.Job, structs.EvalTriggerJobDeregister)}))
	if _, err := s.Job(ctx, "default", "web"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("purged job still readable: %v", err)
	}
	if _, err := s.Eval(ctx, purge.Eval.ID); err != nil {
		t.Fatalf("purge eval: %v", err)
	}
	if _, err := s.JobVersion(ctx, "default", "web", 1); err != nil {
		t.Fatalf("versions are kept after purge for the allocs of the old incarnation: %v", err)
	}
	again := register(t, s, testJob("web"))
	if again.Job.Version != 2 || again.Job.CreateIndex == res.Job.CreateIndex {
		t.Fatalf("registration after purge: version %d (want 2), create index %d (old %d)", again.Job.Version, again.Job.CreateIndex, res.Job.CreateIndex)
	}
	if _, err := s.DeregisterJob(ctx, &storage.DeregisterJobRequest{Namespace: "default", JobID: "nope", Eval: testEval(res.Job, structs.EvalTriggerJobDeregister)}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deregister unknown job: %v", err)
	}
}

func testNodes(t *testing.T, s storage.Store) {
	n := addNode(t, s, testNode("node-b", 1000, 1024))
	addNode(t, s, testNode("node-a", 1000, 1024))
	if n.Status != structs.NodeStatusReady || n.SchedulingEligibility != structs.NodeSchedulingEligible || n.CreateIndex == 0 {
		t.Fatalf("registered node: %+v", n)
	}
	nodes := must(s.Nodes(ctx, ""))
	if len(nodes) != 2 || nodes[0].ID != "node-a" {
		t.Fatalf("nodes sorted by ID: %v", nodes)
	}
	if got := must(s.Nodes(ctx, "node-b")); len(got) != 1 {
		t.Fatalf("prefix: %d", len(got))
	}
	down := must(s.UpdateNodeStatus(ctx, "node-b", structs.NodeStatusDown, 123))
	if down.Status != structs.NodeStatusDown || down.StatusUpdatedAt != 123 {
		t.Fatalf("status update: %+v", down)
	}
	// An operator's ineligibility survives a re-registration (simulated
	// by writing it through a plan-independent path: re-register after
	// marking). Backends keep it from the existing record.
	n2 := testNode("node-b", 2000, 2048)
	n2.SchedulingEligibility = structs.NodeSchedulingEligible
	got := addNode(t, s, n2)
	if got.NodeResources.Cpu.CpuShares != 2000 || got.CreateIndex != n.CreateIndex {
		t.Fatalf("re-registration: %+v", got)
	}
	if _, err := s.Node(ctx, "zzz"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown node: %v", err)
	}
	if _, err := s.UpdateNodeStatus(ctx, "zzz", structs.NodeStatusDown, 1); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("status of unknown node: %v", err)
	}
}

func testCommitPlan(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	job := register(t, s, testJob("web")).Job
	before := must(s.NodeAssignmentIndex(ctx, "n1"))
	a0 := placement(job, "eval-1", 0, "n1")
	a1 := placement(job, "eval-1", 1, "n1")
	idx := must(s.CommitPlan(ctx, planFor(job, "eval-1", a0, a1)))
	got := must(s.Alloc(ctx, a0.ID))
	if got.Job == nil || got.Job.Version != job.Version || got.CreateIndex != idx || got.AllocModifyIndex != idx {
		t.Fatalf("stored alloc: job %v create %d ami %d (commit index %d)", got.Job, got.CreateIndex, got.AllocModifyIndex, idx)
	}
	for name, list := range map[string][]*structs.Allocation{
		"by job":  must(s.AllocsByJob(ctx, "default", "web")),
		"by node": must(s.AllocsByNode(ctx, "n1")),
		"by eval": must(s.AllocsByEval(ctx, "eval-1")),
	} {
		if len(list) != 2 || list[0].Job == nil {
			t.Fatalf("allocs %s: %d", name, len(list))
		}
	}
	if n := len(must(s.AllocsByPrefix(ctx, "default", a0.ID[:6]))); n < 1 {
		t.Fatalf("alloc prefix lookup found %d", n)
	}
	if after := must(s.NodeAssignmentIndex(ctx, "n1")); after <= before || after != idx {
		t.Fatalf("node assignment index %d → %d, commit %d", before, after, idx)
	}
	usage := must(s.NodesWithUsage(ctx))
	if len(usage) != 1 || usage[0].Used.CPU != 200 || usage[0].Used.MemoryMB != 256 || usage[0].Allocs != 2 {
		t.Fatalf("usage: %+v", usage[0])
	}
	// A replacement links both ways.
	repl := placement(job, "eval-2", 0, "n1")
	repl.ID = structs.AllocIDForPlacement("eval-2", repl.Name, false, a0.ID)
	repl.PreviousAllocation = a0.ID
	stop := &structs.AllocStop{AllocID: a0.ID, NodeID: "n1", DesiredStatus: structs.AllocDesiredStatusStop, DesiredDescription: "replaced"}
	p := planFor(job, "eval-2", repl)
	p.Stops = []*structs.AllocStop{stop}
	must(s.CommitPlan(ctx, p))
	if prev := must(s.Alloc(ctx, a0.ID)); prev.NextAllocation != repl.ID || prev.DesiredStatus != structs.AllocDesiredStatusStop || prev.DesiredDescription != "replaced" {
		t.Fatalf("previous alloc after replacement: next %q desired %s %q", prev.NextAllocation, prev.DesiredStatus, prev.DesiredDescription)
	}
	snap := must(s.JobSnapshot(ctx, "default", "web"))
	if snap.Job == nil || len(snap.Allocs) != 3 || snap.Index < idx {
		t.Fatalf("snapshot: job %v allocs %d index %d", snap.Job, len(snap.Allocs), snap.Index)
	}
	for _, a := range snap.Allocs {
		if a.Job == nil {
			t.Fatalf("snapshot alloc %s without Job", a.ID)
		}
	}
}

func allocCount(t *testing.T, s storage.Store, jobID string) int {
	t.Helper()
	return len(must(s.AllocsByJob(ctx, "default", jobID)))
}

func testCommitPlanStaleJob(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	job := register(t, s, testJob("web")).Job
	changed := testJob("web")
	changed.TaskGroups[0].Count = 2
	register(t, s, changed)
	_, err := s.CommitPlan(ctx, planFor(job, "eval-1", placement(job, "eval-1", 0, "n1")))
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("plan of an older job version: want ErrConflict, got %v", err)
	}
	if n := allocCount(t, s, "web"); n != 0 {
		t.Fatalf("a refused plan wrote %d allocs", n)
	}
	// A plan computed for a purged job (JobModifyIndex 0) conflicts once
	// the job exists again.
	p := planFor(job, "eval-2", placement(job, "eval-2", 0, "n1"))
	p.JobModifyIndex = 0
	if _, err := s.CommitPlan(ctx, p); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("plan for a missing job while the job exists: %v", err)
	}
}

func testCommitPlanReplay(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	job := register(t, s, testJob("web")).Job
	ev := testEval(job, structs.EvalTriggerJobRegister)
	ev.Status = structs.EvalStatusComplete
	p := planFor(job, "eval-1", placement(job, "eval-1", 0, "n1"), placement(job, "eval-1", 1, "n1"))
	p.Evals = []*structs.Evaluation{ev}
	must(s.CommitPlan(ctx, p))
	_, err := s.CommitPlan(ctx, p)
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("replayed plan: want ErrConflict, got %v", err)
	}
	if n := allocCount(t, s, "web"); n != 2 {
		t.Fatalf("replayed plan left %d allocs, want 2", n)
	}
}

func testCommitPlanCapacity(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 250, 4096)) // room for two 100 MHz allocs
	job := register(t, s, testJob("web")).Job
	p := planFor(job, "eval-1", placement(job, "eval-1", 0, "n1"), placement(job, "eval-1", 1, "n1"), placement(job, "eval-1", 2, "n1"))
	_, err := s.CommitPlan(ctx, p)
	var ce *storage.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("over-commit: want *ConflictError, got %v", err)
	}
	if n := allocCount(t, s, "web"); n != 0 {
		t.Fatalf("over-committing plan wrote %d allocs (must be all-or-nothing)", n)
	}
	a0, a1 := placement(job, "eval-2", 0, "n1"), placement(job, "eval-2", 1, "n1")
	must(s.CommitPlan(ctx, planFor(job, "eval-2", a0, a1)))
	// Stopping one frees room for a replacement in the same plan.
	repl := placement(job, "eval-3", 0, "n1")
	p3 := planFor(job, "eval-3", repl)
	p3.Stops = []*structs.AllocStop{{AllocID: a0.ID, NodeID: "n1", DesiredStatus: structs.AllocDesiredStatusStop}}
	must(s.CommitPlan(ctx, p3))
	// A client-terminal alloc no longer holds resources.
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{{ID: a1.ID, ClientStatus: structs.AllocClientStatusComplete}}))
	must(s.CommitPlan(ctx, planFor(job, "eval-4", placement(job, "eval-4", 1, "n1"))))
	if _, err := s.CommitPlan(ctx, planFor(job, "eval-5", placement(job, "eval-5", 2, "n1"))); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("third alloc on a two-alloc node: %v", err)
	}
}

func testCommitPlanNodeNotReady(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	must(s.UpdateNodeStatus(ctx, "n1", structs.NodeStatusDown, 1))
	job := register(t, s, testJob("web")).Job
	if _, err := s.CommitPlan(ctx, planFor(job, "eval-1", placement(job, "eval-1", 0, "n1"))); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("placement on a down node: %v", err)
	}
	if _, err := s.CommitPlan(ctx, planFor(job, "eval-1", placement(job, "eval-1", 0, "missing"))); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("placement on a missing node: %v", err)
	}
}

func testCommitPlanStopsAndUpdates(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	job := register(t, s, testJob("web")).Job
	a0, a1 := placement(job, "eval-1", 0, "n1"), placement(job, "eval-1", 1, "n1")
	dep := &structs.Deployment{ID: "dep-1", Namespace: "default", JobID: "web", JobVersion: job.Version,
		Status: structs.DeploymentStatusRunning, TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 2}}}
	p := planFor(job, "eval-1", a0, a1)
	p.Deployment = dep
	follow := testEval(job, structs.EvalTriggerRetryFailedAlloc)
	follow.WaitUntil = time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	p.Evals = []*structs.Evaluation{follow}
	must(s.CommitPlan(ctx, p))
	d := must(s.LatestDeployment(ctx, "default", "web"))
	if d.ID != "dep-1" || d.CreateIndex == 0 || d.TaskGroups["web"].DesiredTotal != 2 {
		t.Fatalf("deployment: %+v", d)
	}
	if fe := must(s.Eval(ctx, follow.ID)); !fe.WaitUntil.Equal(follow.WaitUntil) || fe.Status != structs.EvalStatusPending {
		t.Fatalf("follow-up eval: %+v", fe)
	}
	nodeIdx := must(s.NodeAssignmentIndex(ctx, "n1"))

	v := uint64(5)
	depID := "dep-2"
	fid := "followup-x"
	p2 := planFor(job, "eval-2")
	p2.Stops = []*structs.AllocStop{{AllocID: a0.ID, NodeID: "n1", DesiredStatus: structs.AllocDesiredStatusStop, DesiredDescription: "node down", ClientStatus: structs.AllocClientStatusLost}}
	p2.Updates = []*structs.AllocUpdate{{AllocID: a1.ID, NodeID: "n1", JobVersion: &v, DeploymentID: &depID, FollowupEvalID: &fid}}
	p2.DeploymentUpdates = []*structs.DeploymentStatusUpdate{{DeploymentID: "dep-1", Status: structs.DeploymentStatusCancelled, StatusDescription: "newer"}}
	idx := must(s.CommitPlan(ctx, p2))
	lost := must(s.Alloc(ctx, a0.ID))
	if lost.DesiredStatus != structs.AllocDesiredStatusStop || lost.ClientStatus != structs.AllocClientStatusLost || len(lost.AllocStates) != 1 || lost.AllocStates[0].Value != structs.AllocClientStatusLost {
		t.Fatalf("lost stop: desired %s client %s states %v", lost.DesiredStatus, lost.ClientStatus, lost.AllocStates)
	}
	upd := must(s.Alloc(ctx, a1.ID))
	if upd.JobVersion != 5 || upd.DeploymentID != "dep-2" || upd.FollowupEvalID != "followup-x" || upd.AllocModifyIndex != idx {
		t.Fatalf("updated alloc: %+v", upd)
	}
	if d := must(s.Deployment(ctx, "dep-1")); d.Status != structs.DeploymentStatusCancelled || d.StatusDescription != "newer" {
		t.Fatalf("deployment status update: %s %q", d.Status, d.StatusDescription)
	}
	if got := must(s.NodeAssignmentIndex(ctx, "n1")); got <= nodeIdx {
		t.Fatal("a plan stopping an alloc must move its node's assignment index")
	}
	ds := must(s.DeploymentsByJob(ctx, "default", "web"))
	if len(ds) != 1 {
		t.Fatalf("deployments by job: %d", len(ds))
	}
	bad := planFor(job, "eval-3")
	bad.Stops = []*structs.AllocStop{{AllocID: "missing", NodeID: "n1", DesiredStatus: structs.AllocDesiredStatusStop}}
	if _, err := s.CommitPlan(ctx, bad); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stop of a missing alloc: %v", err)
	}
}

// testConcurrentPlans races many single-placement plans of different jobs
// for one node: invariant 2 holds, and exactly as many as fit are placed.
func testConcurrentPlans(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 1000, 100000)) // ten 100 MHz allocs fit
	const jobs = 25
	var js []*structs.Job
	for i := 0; i < jobs; i++ {
		js = append(js, register(t, s, testJob(fmt.Sprintf("job-%02d", i))).Job)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, conflicts := 0, 0
	for _, j := range js {
		wg.Add(1)
		go func(j *structs.Job) {
			defer wg.Done()
			_, err := s.CommitPlan(ctx, planFor(j, "eval-"+j.ID, placement(j, "eval-"+j.ID, 0, "n1")))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, storage.ErrConflict):
				conflicts++
			default:
				t.Errorf("commit %s: %v", j.ID, err)
			}
		}(j)
	}
	wg.Wait()
	if ok != 10 || conflicts != jobs-10 {
		t.Fatalf("%d committed, %d conflicts; want 10 and %d", ok, conflicts, jobs-10)
	}
	usage := must(s.NodesWithUsage(ctx))
	if usage[0].Used.CPU > 1000 {
		t.Fatalf("node over-committed: %d MHz used of 1000", usage[0].Used.CPU)
	}
}

func testClientUpdates(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	addNode(t, s, testNode("n2", 4000, 4096))
	job := register(t, s, testJob("web")).Job
	a0 := placement(job, "eval-1", 0, "n1")
	a0.DeploymentID = "d1"
	a0.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	must(s.CommitPlan(ctx, planFor(job, "eval-1", a0)))
	assign := must(s.NodeAssignmentIndex(ctx, "n1"))
	healthy := true
	changes := must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{
		{ID: a0.ID, ClientStatus: structs.AllocClientStatusRunning, ClientDescription: "Tasks are running",
			TaskStates:   map[string]*structs.TaskState{"server": {State: structs.TaskStateRunning}},
			DeploymentID: "d1", DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: time.Now().UTC()},
			DesiredStatus: structs.AllocDesiredStatusStop, // ignored: server-owned
		},
		{ID: "gone", ClientStatus: structs.AllocClientStatusRunning},
	}))
	if len(changes) != 1 || changes[0].PrevClientStatus != structs.AllocClientStatusPending || changes[0].Alloc.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("changes: %+v", changes)
	}
	got := must(s.Alloc(ctx, a0.ID))
	if got.ClientStatus != structs.AllocClientStatusRunning || got.TaskStates["server"].State != structs.TaskStateRunning ||
		got.DesiredStatus != structs.AllocDesiredStatusRun || !got.DeploymentStatus.IsHealthy() || !got.DeploymentStatus.Canary {
		t.Fatalf("after client update: %+v / %+v", got, got.DeploymentStatus)
	}
	if after := must(s.NodeAssignmentIndex(ctx, "n1")); after != assign {
		t.Fatal("client reports must not move the node's assignment index (the agent would chase its own writes)")
	}
	if _, err := s.UpdateAllocsFromClient(ctx, "n2", []*structs.Allocation{{ID: a0.ID, ClientStatus: structs.AllocClientStatusFailed}}); !errors.Is(err, storage.ErrWrongNode) {
		t.Fatalf("a node may not report another node's alloc: %v", err)
	}
	if got := must(s.Alloc(ctx, a0.ID)); got.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatal("a refused report must change nothing")
	}
	again := must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{{ID: a0.ID, ClientStatus: structs.AllocClientStatusRunning, ClientDescription: "Tasks are running",
		TaskStates: map[string]*structs.TaskState{"server": {State: structs.TaskStateRunning}}, DeploymentID: "d1", DeploymentStatus: got.DeploymentStatus}}))
	if len(again) != 0 {
		t.Fatalf("an identical report changed %d allocs", len(again))
	}
}

func testJobStatus(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	res := register(t, s, testJob("web"))
	if st := must(s.Job(ctx, "default", "web")).Status; st != structs.JobStatusPending {
		t.Fatalf("job with a pending eval: %s", st)
	}
	job := res.Job
	a0 := placement(job, res.Eval.ID, 0, "n1")
	done := res.Eval.Copy()
	done.Status = structs.EvalStatusComplete
	p := planFor(job, res.Eval.ID, a0)
	p.Evals = []*structs.Evaluation{done}
	must(s.CommitPlan(ctx, p))
	if st := must(s.Job(ctx, "default", "web")).Status; st != structs.JobStatusRunning {
		t.Fatalf("job with a non-terminal alloc: %s", st)
	}
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{{ID: a0.ID, ClientStatus: structs.AllocClientStatusComplete}}))
	if st := must(s.Job(ctx, "default", "web")).Status; st != structs.JobStatusDead {
		t.Fatalf("job whose allocs are all terminal: %s", st)
	}
}

func testEvals(t *testing.T, s storage.Store) {
	job := register(t, s, testJob("web")).Job
	other := register(t, s, testJob("api")).Job
	e1 := testEval(job, structs.EvalTriggerNodeUpdate)
	e2 := testEval(other, structs.EvalTriggerNodeUpdate)
	e2.Status = structs.EvalStatusBlocked
	must(s.UpsertEvals(ctx, e1, e2))
	if got := must(s.EvalsByJob(ctx, "default", "web")); len(got) != 2 || got[0].CreateIndex > got[1].CreateIndex {
		t.Fatalf("evals by job: %d", len(got))
	}
	if got := must(s.Evals(ctx, storage.EvalFilter{Status: structs.EvalStatusBlocked})); len(got) != 1 || got[0].ID != e2.ID {
		t.Fatalf("blocked evals: %v", got)
	}
	if got := must(s.Evals(ctx, storage.EvalFilter{Prefix: e1.ID[:8]})); len(got) != 1 {
		t.Fatalf("eval prefix: %d", len(got))
	}
	created := must(s.Eval(ctx, e1.ID)).CreateIndex
	e1.Status = structs.EvalStatusComplete
	must(s.UpsertEvals(ctx, e1))
	got := must(s.Eval(ctx, e1.ID))
	if got.Status != structs.EvalStatusComplete || got.CreateIndex != created || got.ModifyIndex <= created {
		t.Fatalf("updated eval: %+v", got)
	}
	if _, err := s.Eval(ctx, "missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("missing eval: %v", err)
	}
}

func testIndexes(t *testing.T, s storage.Store) {
	j0 := must(s.Index(ctx, storage.TableJobs))
	res := register(t, s, testJob("web"))
	j1 := must(s.Index(ctx, storage.TableJobs))
	e1 := must(s.Index(ctx, storage.TableEvals))
	if j1 <= j0 || j1 != res.Index || e1 != res.Index {
		t.Fatalf("table indexes after registration: jobs %d→%d evals %d, write index %d", j0, j1, e1, res.Index)
	}
	addNode(t, s, testNode("n1", 1000, 1000))
	n1 := must(s.Index(ctx, storage.TableNodes))
	if n1 <= j1 || must(s.Index(ctx, storage.TableJobs)) != j1 {
		t.Fatal("a node write moves the nodes index only")
	}
	var idxs []uint64
	for i := 0; i < 3; i++ {
		idxs = append(idxs, must(s.UpsertEvals(ctx, testEval(res.Job, structs.EvalTriggerNodeUpdate))))
	}
	if !sort.SliceIsSorted(idxs, func(i, j int) bool { return idxs[i] < idxs[j] }) || idxs[0] == idxs[1] {
		t.Fatalf("indexes must grow: %v", idxs)
	}
}

// testDeploymentCounters: the store counts a deployment's placed (new or
// updated in place into it), healthy and unhealthy allocs as they are
// written and reported (as Nomad's state store does), and a plan that
// writes the deployment again keeps them.
func testDeploymentCounters(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	job := register(t, s, testJob("web")).Job
	dep := &structs.Deployment{ID: "dep-1", Namespace: "default", JobID: "web", JobVersion: job.Version,
		Status:     structs.DeploymentStatusRunning,
		TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 2, ProgressDeadline: 10 * time.Minute}}}
	a0, a1 := placement(job, "eval-1", 0, "n1"), placement(job, "eval-1", 1, "n1")
	a0.DeploymentID, a1.DeploymentID = "dep-1", "dep-1"
	p := planFor(job, "eval-1", a0, a1)
	p.Deployment = dep
	must(s.CommitPlan(ctx, p))
	if g := must(s.Deployment(ctx, "dep-1")).TaskGroups["web"]; g.PlacedAllocs != 2 || g.HealthyAllocs != 0 {
		t.Fatalf("after placing: %+v", g)
	}
	healthy, unhealthy := true, false
	at := time.Now().UTC().Truncate(time.Second)
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{
		{ID: a0.ID, ClientStatus: structs.AllocClientStatusRunning, DeploymentID: "dep-1", DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: at}},
		{ID: a1.ID, ClientStatus: structs.AllocClientStatusFailed, DeploymentID: "dep-1", DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &unhealthy, Timestamp: at}},
	}))
	g := must(s.Deployment(ctx, "dep-1")).TaskGroups["web"]
	if g.HealthyAllocs != 1 || g.UnhealthyAllocs != 1 || !g.RequireProgressBy.Equal(at.Add(10*time.Minute)) {
		t.Fatalf("after health reports: %+v", g)
	}
	// Reporting the same health again counts nothing more.
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{
		{ID: a0.ID, ClientStatus: structs.AllocClientStatusRunning, ClientDescription: "again", DeploymentID: "dep-1", DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: at}},
	}))
	// A later plan writes its snapshot's copy of the deployment: the
	// counters survive, the status is the plan's.
	p2 := planFor(job, "eval-2")
	stale := dep.Copy()
	stale.Status = structs.DeploymentStatusPaused
	p2.Deployment = stale
	must(s.CommitPlan(ctx, p2))
	d := must(s.Deployment(ctx, "dep-1"))
	g = d.TaskGroups["web"]
	if d.Status != structs.DeploymentStatusPaused || g.PlacedAllocs != 2 || g.HealthyAllocs != 1 || g.UnhealthyAllocs != 1 {
		t.Fatalf("after a plan rewrote the deployment: %s %+v", d.Status, g)
	}
	// The next rollout updates a0 in place into its deployment: a0 counts
	// as placed there, as a new alloc would (Nomad's state store counts
	// every alloc that joins a deployment), and its health starts over; a
	// later update that keeps a0's deployment counts nothing more, and
	// the first deployment keeps its counts.
	dep2 := &structs.Deployment{ID: "dep-2", Namespace: "default", JobID: "web", JobVersion: job.Version,
		Status: structs.DeploymentStatusRunning, TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 2}}}
	into := "dep-2"
	for _, evalID := range []string{"eval-3", "eval-4"} {
		p := planFor(job, evalID)
		p.Deployment = dep2.Copy()
		p.Updates = []*structs.AllocUpdate{{AllocID: a0.ID, NodeID: "n1", DeploymentID: &into}}
		must(s.CommitPlan(ctx, p))
		if g := must(s.Deployment(ctx, "dep-2")).TaskGroups["web"]; g.PlacedAllocs != 1 || g.HealthyAllocs != 0 || g.UnhealthyAllocs != 0 {
			t.Fatalf("after %s updated a0 in place into dep-2: %+v", evalID, g)
		}
	}
	if a := must(s.Alloc(ctx, a0.ID)); a.DeploymentID != "dep-2" || a.DeploymentStatus.HasHealth() {
		t.Fatalf("a0 after joining dep-2: deployment %q health %+v", a.DeploymentID, a.DeploymentStatus)
	}
	if g := must(s.Deployment(ctx, "dep-1")).TaskGroups["web"]; g.PlacedAllocs != 2 || g.HealthyAllocs != 1 || g.UnhealthyAllocs != 1 {
		t.Fatalf("dep-1 after a0 left it: %+v", g)
	}
}

func testDeploymentLifecycle(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	job := register(t, s, testJob("web")).Job
	dep := &structs.Deployment{ID: "dep-1", Namespace: "default", JobID: "web", JobVersion: job.Version,
		Status: structs.DeploymentStatusRunning, StatusDescription: structs.DeploymentStatusDescriptionRunningNeedsPromotion,
		TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 1, DesiredCanaries: 1}}}
	p := planFor(job, "eval-1")
	p.Deployment = dep
	must(s.CommitPlan(ctx, p))
	other := testJob("api")
	register(t, s, other)

	if _, err := s.PromoteDeployment(ctx, "nope", nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("promote unknown deployment: %v", err)
	}
	ev := testEval(job, structs.EvalTriggerDeploymentWatcher)
	must(s.PromoteDeployment(ctx, "dep-1", nil, ev))
	if d := must(s.Deployment(ctx, "dep-1")); !d.TaskGroups["web"].Promoted {
		t.Fatalf("not promoted: %+v", d.TaskGroups["web"])
	}
	if _, err := s.Eval(ctx, ev.ID); err != nil {
		t.Fatalf("promotion eval not written: %v", err)
	}
	if _, err := s.UpdateDeploymentStatus(ctx, &structs.DeploymentStatusUpdate{DeploymentID: "nope", Status: "failed"}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("status of unknown deployment: %v", err)
	}
	must(s.UpdateDeploymentStatus(ctx, &structs.DeploymentStatusUpdate{DeploymentID: "dep-1",
		Status: structs.DeploymentStatusSuccessful, StatusDescription: structs.DeploymentStatusDescriptionSuccessful}))
	if d := must(s.Deployment(ctx, "dep-1")); d.Status != structs.DeploymentStatusSuccessful {
		t.Fatalf("status %s", d.Status)
	}
	if j := must(s.Job(ctx, "default", "web")); !j.Stable {
		t.Fatal("a successful deployment must mark its job version stable")
	}
	if v := must(s.JobVersion(ctx, "default", "web", job.Version)); !v.Stable {
		t.Fatal("the version record must be stable too")
	}
	if j := must(s.Job(ctx, "default", "api")); j.Stable {
		t.Fatal("another job became stable")
	}
	all := must(s.Deployments(ctx, "*", ""))
	if len(all) != 1 || all[0].ID != "dep-1" {
		t.Fatalf("deployments: %v", all)
	}
	if got := must(s.Deployments(ctx, "default", "dep")); len(got) != 1 {
		t.Fatalf("deployments by prefix: %d", len(got))
	}
	if got := must(s.Deployments(ctx, "other", "")); len(got) != 0 {
		t.Fatalf("deployments of another namespace: %d", len(got))
	}
}

func testNodeDrain(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	job := register(t, s, testJob("web")).Job
	ev := testEval(job, structs.EvalTriggerNodeDrain)
	n := must(s.UpdateNodeDrain(ctx, "n1", &structs.DrainStrategy{Deadline: time.Hour}, false, ev))
	if !n.Drain || n.DrainStrategy == nil || n.DrainStrategy.Deadline != time.Hour || n.SchedulingEligibility != structs.NodeSchedulingIneligible {
		t.Fatalf("draining node: %+v", n)
	}
	if _, err := s.Eval(ctx, ev.ID); err != nil {
		t.Fatal("drain eval not written")
	}
	// A drain survives a re-registration of the node.
	if got := addNode(t, s, testNode("n1", 4000, 4096)); !got.Drain || got.SchedulingEligibility != structs.NodeSchedulingIneligible {
		t.Fatalf("re-registration lost the drain: %+v", got)
	}
	if _, err := s.CommitPlan(ctx, planFor(job, "eval-1", placement(job, "eval-1", 0, "n1"))); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("placement on a draining node: %v", err)
	}
	n = must(s.UpdateNodeDrain(ctx, "n1", nil, false))
	if n.Drain || n.DrainStrategy != nil || n.SchedulingEligibility != structs.NodeSchedulingIneligible {
		t.Fatalf("drain done without mark-eligible: %+v", n)
	}
	n = must(s.UpdateNodeEligibility(ctx, "n1", structs.NodeSchedulingEligible))
	if n.SchedulingEligibility != structs.NodeSchedulingEligible {
		t.Fatalf("eligibility: %s", n.SchedulingEligibility)
	}
	must(s.UpdateNodeDrain(ctx, "n1", &structs.DrainStrategy{}, false))
	if n := must(s.UpdateNodeDrain(ctx, "n1", nil, true)); n.SchedulingEligibility != structs.NodeSchedulingEligible {
		t.Fatal("mark-eligible when ending a drain")
	}
	if _, err := s.UpdateNodeDrain(ctx, "nope", nil, false); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("drain of unknown node: %v", err)
	}
	if _, err := s.UpdateNodeEligibility(ctx, "nope", structs.NodeSchedulingEligible); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("eligibility of unknown node: %v", err)
	}
}

func testDesiredTransitions(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	job := register(t, s, testJob("web")).Job
	a0 := placement(job, "eval-1", 0, "n1")
	must(s.CommitPlan(ctx, planFor(job, "eval-1", a0)))
	yes := true
	ev := testEval(job, structs.EvalTriggerNodeDrain)
	must(s.UpdateAllocDesiredTransitions(ctx, map[string]*structs.DesiredTransition{a0.ID: {Migrate: &yes}, "gone": {Migrate: &yes}}, ev))
	if got := must(s.Alloc(ctx, a0.ID)); !got.DesiredTransition.ShouldMigrate() {
		t.Fatalf("transition not set: %+v", got.DesiredTransition)
	}
	if _, err := s.Eval(ctx, ev.ID); err != nil {
		t.Fatal("transition eval not written")
	}
}

func testGarbageCollect(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	// A stopped job whose alloc finished: collected with all of it.
	reg := register(t, s, testJob("stopped"))
	stopped := reg.Job
	sa := placement(stopped, "eval-s", 0, "n1")
	done := reg.Eval.Copy()
	done.Status = structs.EvalStatusComplete
	ps := planFor(stopped, "eval-s", sa)
	ps.Evals = []*structs.Evaluation{done}
	must(s.CommitPlan(ctx, ps))
	// A running service job with one replaced alloc and one live alloc.
	live := register(t, s, testJob("live")).Job
	old, cur := placement(live, "eval-l", 0, "n1"), placement(live, "eval-l", 1, "n1")
	must(s.CommitPlan(ctx, planFor(live, "eval-l", old, cur)))
	// A failed alloc still wanted (may be rescheduled) must stay.
	failed := placement(live, "eval-l2", 2, "n1")
	must(s.CommitPlan(ctx, planFor(live, "eval-l2", failed)))
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{{ID: failed.ID, ClientStatus: structs.AllocClientStatusFailed}}))
	pStop := planFor(live, "eval-l3")
	pStop.Stops = []*structs.AllocStop{{AllocID: old.ID, NodeID: "n1", DesiredStatus: structs.AllocDesiredStatusStop}}
	must(s.CommitPlan(ctx, pStop))
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{
		{ID: old.ID, ClientStatus: structs.AllocClientStatusComplete},
		{ID: sa.ID, ClientStatus: structs.AllocClientStatusComplete},
		{ID: cur.ID, ClientStatus: structs.AllocClientStatusRunning},
	}))
	must(s.DeregisterJob(ctx, &storage.DeregisterJobRequest{Namespace: "default", JobID: "stopped", Eval: func() *structs.Evaluation {
		e := testEval(stopped, structs.EvalTriggerJobDeregister)
		e.Status = structs.EvalStatusComplete
		return e
	}()}))
	before := must(s.NodeAssignmentIndex(ctx, "n1"))

	// Nothing is old enough yet.
	res := must(s.GarbageCollect(ctx, time.Now().Add(-time.Hour)))
	if *res != (storage.GCResult{}) {
		t.Fatalf("collected recent objects: %+v", res)
	}
	res = must(s.GarbageCollect(ctx, time.Now().Add(time.Second)))
	if res.Jobs != 1 {
		t.Fatalf("collected %+v: the stopped job must go", res)
	}
	if _, err := s.Job(ctx, "default", "stopped"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal("stopped job still there")
	}
	if _, err := s.Alloc(ctx, sa.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal("stopped job's alloc still there")
	}
	if _, err := s.Eval(ctx, done.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal("stopped job's eval still there")
	}
	if _, err := s.Alloc(ctx, old.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal("a stopped, finished alloc of a live job must be collected")
	}
	for _, keep := range []string{cur.ID, failed.ID} {
		if _, err := s.Alloc(ctx, keep); err != nil {
			t.Fatalf("alloc %s collected: %v", keep, err)
		}
	}
	if _, err := s.Job(ctx, "default", "live"); err != nil {
		t.Fatal("a running job was collected")
	}
	if after := must(s.NodeAssignmentIndex(ctx, "n1")); after <= before {
		t.Fatal("collecting a node's allocs must move its assignment index, so its agent cleans up")
	}
	// A down node without allocs goes; one with allocs stays.
	addNode(t, s, testNode("n2", 4000, 4096))
	must(s.UpdateNodeStatus(ctx, "n2", structs.NodeStatusDown, time.Now().Add(-2*time.Hour).Unix()))
	must(s.UpdateNodeStatus(ctx, "n1", structs.NodeStatusDown, time.Now().Add(-2*time.Hour).Unix()))
	res = must(s.GarbageCollect(ctx, time.Now().Add(-time.Hour)))
	if res.Nodes != 1 {
		t.Fatalf("nodes collected: %d", res.Nodes)
	}
	if _, err := s.Node(ctx, "n2"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal("down node without allocs not collected")
	}
	if _, err := s.Node(ctx, "n1"); err != nil {
		t.Fatal("down node with allocs collected")
	}
}
