package dynamodb_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/storage"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

// TestNodeCache: a warm evaluator's node cache loads every node once,
// follows its own commits and the nodes table index, learns from a
// refused plan what the nodes it lost on hold, loads again after MaxAge,
// and lets an evaluation block only on a load made after its blocking
// plan was first refused.
func TestNodeCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, ddb.Config{})
	for _, id := range []string{"a", "b"} {
		if _, err := s.UpsertNode(ctx, cacheNode(id)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	c := ddb.NewNodeCache(s, ddb.NodeCacheConfig{MaxAge: time.Minute, Now: clock})
	q := storage.NodeQuery{Datacenters: []string{"dc1"}}
	used := func(want int, nodes ...string) map[string]int64 {
		t.Helper()
		got, err := c.CandidateNodes(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(nodes) {
			t.Fatalf("%d candidates, want %v", len(got), nodes)
		}
		out := map[string]int64{}
		for i, u := range got {
			if u.Node.ID != nodes[i] {
				t.Fatalf("candidate %d is %s, want %s", i, u.Node.ID, nodes[i])
			}
			out[u.Node.ID] = u.Used.CPU
		}
		if c.Loads() != want {
			t.Fatalf("%d full loads of the nodes, want %d", c.Loads(), want)
		}
		return out
	}
	if u := used(1, "a", "b"); u["a"] != 0 || u["b"] != 0 {
		t.Fatalf("usage of empty nodes: %v", u)
	}
	used(1, "a", "b")

	// This process's commit: the cache holds the usage it wrote.
	mine := cacheJob(t, s, "mine")
	if _, err := c.CommitPlan(ctx, cachePlan(t, s, mine, "eval-1", 0, "a")); err != nil {
		t.Fatal(err)
	}
	if u := used(1, "a", "b"); u["a"] != 400 {
		t.Fatalf("after placing 400 MHz on a through the cache, it shows %d", u["a"])
	}

	// Another process fills b: the cache does not read it (no load) ...
	other := cacheJob(t, s, "other")
	if _, err := s.CommitPlan(ctx, cachePlan(t, s, other, "eval-2", 0, "b", "b")); err != nil {
		t.Fatal(err)
	}
	if u := used(1, "a", "b"); u["b"] != 0 {
		t.Fatalf("the cache read b (%d MHz) without a load", u["b"])
	}
	// ... so a plan computed from it over-commits b and is refused, and
	// the refusal's read of b corrects the cache.
	_, err := c.CommitPlan(ctx, cachePlan(t, s, mine, "eval-3", 1, "b"))
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a plan over-committing b committed: %v", err)
	}
	if u := used(1, "a", "b"); u["b"] != 800 {
		t.Fatalf("after a refused plan on b, the cache shows b at %d MHz, want 800", u["b"])
	}

	// A node write moves the nodes table index: the next read loads.
	if _, err := s.UpsertNode(ctx, cacheNode("c")); err != nil {
		t.Fatal(err)
	}
	used(2, "a", "b", "c")
	if _, err := s.UpdateNodeEligibility(ctx, "c", structs.NodeSchedulingIneligible); err != nil {
		t.Fatal(err)
	}
	used(3, "a", "b")
	used(3, "a", "b")
	// MaxAge.
	advance(61 * time.Second)
	used(4, "a", "b")

	// A plan that blocks its evaluation is refused once, after a fresh
	// load, however recent the last load (a report may have freed room
	// since, and its unblocking found nothing to wake).
	blocked := cachePlan(t, s, mine, "eval-4", 1)
	blocked.Evals = []*structs.Evaluation{{ID: "eval-5", Namespace: "default", JobID: "mine", Type: structs.JobTypeService, Priority: 50,
		TriggeredBy: structs.EvalTriggerQueuedAllocs, Status: structs.EvalStatusBlocked, PreviousEval: "eval-4"}}
	if _, err := c.CommitPlan(ctx, blocked); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a plan blocking on usage read from the cache committed: %v", err)
	}
	if c.Loads() != 5 {
		t.Fatalf("the refused blocking plan made %d loads, want 5", c.Loads())
	}
	if _, err := c.CommitPlan(ctx, blocked); err != nil {
		t.Fatalf("a plan blocking on a fresh load: %v", err)
	}
	// Another evaluation's blocking plan loads again.
	other4 := cachePlan(t, s, other, "eval-6", 2)
	other4.Evals = []*structs.Evaluation{{ID: "eval-7", Namespace: "default", JobID: "other", Type: structs.JobTypeService, Priority: 50,
		TriggeredBy: structs.EvalTriggerQueuedAllocs, Status: structs.EvalStatusBlocked, PreviousEval: "eval-6"}}
	if _, err := c.CommitPlan(ctx, other4); !errors.Is(err, storage.ErrConflict) || c.Loads() != 6 {
		t.Fatalf("another evaluation's blocking plan: %v after %d loads, want a conflict after the 6th", err, c.Loads())
	}
}

func cacheNode(id string) *structs.Node {
	return &structs.Node{ID: id, Name: id, Datacenter: "dc1", Status: structs.NodeStatusReady,
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 1000}, Memory: structs.NodeMemoryResources{MemoryMB: 4096},
			Disk: structs.NodeDiskResources{DiskMB: 10000}}, Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}}
}

func cacheJob(t *testing.T, s *ddb.Store, id string) *structs.Job {
	t.Helper()
	job := &structs.Job{Region: "global", Namespace: "default", ID: id, Name: id, Type: structs.JobTypeService, Priority: 50,
		Datacenters: []string{"dc1"}, TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 1, EphemeralDisk: &structs.EphemeralDisk{SizeMB: 10},
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Resources: &structs.Resources{CPU: 400, MemoryMB: 64}}}}}}
	ev := &structs.Evaluation{ID: "reg-" + id, Namespace: "default", JobID: id, Type: structs.JobTypeService, Priority: 50,
		TriggeredBy: structs.EvalTriggerJobRegister, Status: structs.EvalStatusPending}
	res, err := s.RegisterJob(context.Background(), &storage.RegisterJobRequest{Job: job, Eval: ev, SubmitTime: time.Now().UnixNano()})
	if err != nil {
		t.Fatal(err)
	}
	return res.Job
}

// cachePlan places one 400 MHz alloc of job per node given, named from
// first on, on a fresh snapshot of the job.
func cachePlan(t *testing.T, s *ddb.Store, job *structs.Job, evalID string, first int, nodes ...string) *structs.Plan {
	t.Helper()
	snap, err := s.JobSnapshot(context.Background(), job.Namespace, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	plan := &structs.Plan{EvalID: evalID, Namespace: job.Namespace, JobID: job.ID, Priority: job.Priority,
		JobModifyIndex: job.JobModifyIndex, SnapshotIndex: snap.Index}
	tg := job.TaskGroups[0]
	for i, n := range nodes {
		name := structs.AllocName(job.ID, tg.Name, uint(first+i))
		plan.Placements = append(plan.Placements, &structs.Allocation{
			ID: structs.AllocIDForPlacement(evalID, name, false, ""), Namespace: job.Namespace, EvalID: evalID,
			Name: name, NodeID: n, JobID: job.ID, JobVersion: job.Version, TaskGroup: tg.Name,
			AllocatedResources: structs.AllocatedResourcesFor(tg),
			DesiredStatus:      structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending})
	}
	return plan
}
