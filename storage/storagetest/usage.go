package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Usage bookkeeping (issue 10 §1): every node's usage record equals what
// its resource-holding allocs hold, after every kind of write, and after a
// write that crashed part-way.

// checkUsage asserts that every node's usage record equals the sum of its
// allocs that hold resources (non-terminal), and that no node is
// over-committed.
func checkUsage(t *testing.T, s storage.Store, when string) {
	t.Helper()
	for _, u := range must(s.NodesWithUsage(ctx)) {
		var sum structs.ComparableResources
		n := 0
		for _, a := range must(s.AllocsByNode(ctx, u.Node.ID)) {
			if a.HoldsResources() {
				sum = sum.Add(a.AllocatedResources.Comparable())
				n++
			}
		}
		if u.Used != sum || u.Allocs != n {
			t.Fatalf("%s: node %s usage record %+v (%d allocs), its allocs hold %+v (%d): capacity leaked or released twice",
				when, u.Node.ID, u.Used, u.Allocs, sum, n)
		}
		if ok, dim := u.Node.Capacity().Superset(u.Used); !ok {
			t.Fatalf("%s: node %s over-committed (%s)", when, u.Node.ID, dim)
		}
	}
	checkPorts(t, s, when)
}

func usageOf(t *testing.T, s storage.Store, nodeID string) *storage.NodeUsage {
	t.Helper()
	for _, u := range must(s.NodesWithUsage(ctx)) {
		if u.Node.ID == nodeID {
			return u
		}
	}
	t.Fatalf("node %s not listed with usage", nodeID)
	return nil
}

// placeN commits a plan of n placements of job (names from first on),
// spread round-robin over nodes.
func placeN(t *testing.T, s storage.Store, job *structs.Job, evalID string, first, n int, nodes ...string) []*structs.Allocation {
	t.Helper()
	var out []*structs.Allocation
	for i := 0; i < n; i++ {
		out = append(out, placement(job, evalID, uint(first+i), nodes[i%len(nodes)]))
	}
	must(s.CommitPlan(ctx, planFor(job, evalID, out...)))
	return out
}

func testUsageMaintained(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	addNode(t, s, testNode("n2", 4000, 4096))
	job := register(t, s, testJob("web")).Job
	allocs := placeN(t, s, job, "eval-1", 0, 5, "n1", "n2") // n1: 0 2 4, n2: 1 3
	checkUsage(t, s, "after a plan")
	if u := usageOf(t, s, "n1"); u.Used != (structs.ComparableResources{CPU: 300, MemoryMB: 384, DiskMB: 300}) || u.Allocs != 3 {
		t.Fatalf("n1 after three placements: %+v (%d allocs)", u.Used, u.Allocs)
	}

	// Client reports: one finishes (released), one runs (still held).
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{
		{ID: allocs[0].ID, ClientStatus: structs.AllocClientStatusComplete},
		{ID: allocs[2].ID, ClientStatus: structs.AllocClientStatusRunning},
	}))
	checkUsage(t, s, "after client reports")
	// A second terminal report of the same alloc releases nothing more.
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{{ID: allocs[0].ID, ClientStatus: structs.AllocClientStatusFailed}}))
	checkUsage(t, s, "after a repeated terminal report")
	if u := usageOf(t, s, "n1"); u.Allocs != 2 || u.Used.CPU != 200 {
		t.Fatalf("n1 after one alloc finished: %+v (%d allocs)", u.Used, u.Allocs)
	}

	// A plan stops one alloc (released at once: desired stop) and
	// marks one on n2 lost; its node later reports the stop complete.
	p := planFor(job, "eval-2")
	p.Stops = []*structs.AllocStop{
		{AllocID: allocs[2].ID, NodeID: "n1", DesiredStatus: structs.AllocDesiredStatusStop, DesiredDescription: "scaled down"},
		{AllocID: allocs[1].ID, NodeID: "n2", DesiredStatus: structs.AllocDesiredStatusStop, ClientStatus: structs.AllocClientStatusLost},
	}
	v := job.Version
	p.Updates = []*structs.AllocUpdate{{AllocID: allocs[3].ID, NodeID: "n2", JobVersion: &v}}
	must(s.CommitPlan(ctx, p))
	checkUsage(t, s, "after plan stops and updates")
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{{ID: allocs[2].ID, ClientStatus: structs.AllocClientStatusComplete}}))
	checkUsage(t, s, "after the stopped alloc's report")
	// A disconnect marks an alloc unknown: it still holds.
	p3 := planFor(job, "eval-3")
	p3.Updates = []*structs.AllocUpdate{{AllocID: allocs[3].ID, NodeID: "n2", ClientStatus: structs.AllocClientStatusUnknown}}
	must(s.CommitPlan(ctx, p3))
	checkUsage(t, s, "after a disconnect")
	if u := usageOf(t, s, "n2"); u.Allocs != 1 {
		t.Fatalf("n2 with one live (unknown) alloc: %d allocs in its record", u.Allocs)
	}

	// A replacement in one plan: the stop frees room for the placement.
	repl := placement(job, "eval-4", 3, "n1")
	repl.ID = structs.AllocIDForPlacement("eval-4", repl.Name, false, allocs[3].ID)
	repl.PreviousAllocation = allocs[3].ID
	p4 := planFor(job, "eval-4", repl)
	p4.Stops = []*structs.AllocStop{{AllocID: allocs[3].ID, NodeID: "n2", DesiredStatus: structs.AllocDesiredStatusStop}}
	must(s.CommitPlan(ctx, p4))
	checkUsage(t, s, "after a replacement")

	// Garbage collection removes finished allocs; usage is unchanged by
	// it and still equals what remains.
	before := usageOf(t, s, "n1").Used
	must(s.GarbageCollect(ctx, time.Now().Add(time.Second)))
	checkUsage(t, s, "after garbage collection")
	if after := usageOf(t, s, "n1").Used; after != before {
		t.Fatalf("GC of finished allocs changed n1's usage %+v → %+v", before, after)
	}
	// Stopping the job and collecting it releases everything.
	stop := testEval(job, structs.EvalTriggerJobDeregister)
	must(s.DeregisterJob(ctx, &storage.DeregisterJobRequest{Namespace: "default", JobID: "web", Eval: stop}))
	cur := must(s.Job(ctx, "default", "web"))
	var stops []*structs.AllocStop
	for _, a := range must(s.AllocsByJob(ctx, "default", "web")) {
		if !a.ServerTerminalStatus() {
			stops = append(stops, &structs.AllocStop{AllocID: a.ID, NodeID: a.NodeID, DesiredStatus: structs.AllocDesiredStatusStop})
		}
	}
	p5 := planFor(cur, "eval-5")
	p5.Stops = stops
	must(s.CommitPlan(ctx, p5))
	checkUsage(t, s, "after stopping the job")
	for _, id := range []string{"n1", "n2"} {
		if u := usageOf(t, s, id); u.Used != (structs.ComparableResources{}) || u.Allocs != 0 {
			t.Fatalf("node %s after its job stopped: %+v (%d allocs)", id, u.Used, u.Allocs)
		}
	}
}

func testCandidateNodes(t *testing.T, s storage.Store) {
	node := func(id, pool, dc string) *structs.Node {
		n := testNode(id, 4000, 4096)
		n.NodePool, n.Datacenter = pool, dc
		return n
	}
	addNode(t, s, node("n1", "default", "dc1"))
	addNode(t, s, node("n2", "gpu", "dc1"))
	addNode(t, s, node("n3", "default", "dc2"))
	addNode(t, s, node("n4", "default", "dc1"))
	addNode(t, s, node("n5", "default", "dc1"))
	addNode(t, s, node("n6", "default", "dc1"))
	must(s.UpdateNodeStatus(ctx, "n4", structs.NodeStatusDown, 1))
	must(s.UpdateNodeEligibility(ctx, "n5", structs.NodeSchedulingIneligible))
	must(s.UpdateNodeDrain(ctx, "n6", &structs.DrainStrategy{Deadline: time.Hour}, false))
	job := register(t, s, testJob("web")).Job
	placeN(t, s, job, "eval-1", 0, 2, "n1")

	ids := func(us []*storage.NodeUsage) string {
		out := ""
		for _, u := range us {
			out += u.Node.ID + " "
		}
		return out
	}
	for _, tc := range []struct {
		q    storage.NodeQuery
		want string
	}{
		{storage.NodeQuery{NodePool: "default", Datacenters: []string{"dc1"}}, "n1 "},
		{storage.NodeQuery{Datacenters: []string{"*"}}, "n1 n3 "},
		{storage.NodeQuery{NodePool: structs.NodePoolAll, Datacenters: []string{"dc*"}}, "n1 n2 n3 "},
		{storage.NodeQuery{NodePool: "gpu"}, "n2 "},
		{storage.NodeQuery{NodePool: "default", Datacenters: []string{"dc1"}, Include: []string{"n6", "n4", "gone"}}, "n1 n4 n6 "},
		{storage.NodeQuery{OnlyIncluded: true, Include: []string{"n3"}}, "n3 "},
	} {
		got := must(s.CandidateNodes(ctx, tc.q))
		if ids(got) != tc.want {
			t.Fatalf("CandidateNodes(%+v) = %s, want %s", tc.q, ids(got), tc.want)
		}
	}
	dc1 := storage.NodeQuery{Datacenters: []string{"dc1"}}
	got := must(s.CandidateNodes(ctx, dc1))
	if len(got) != 1 || got[0].Used.CPU != 200 || got[0].Allocs != 2 {
		t.Fatalf("candidate n1 with two allocs: %+v", got)
	}
	// A node write is seen by the next read (a cache must follow the
	// nodes table).
	must(s.UpdateNodeEligibility(ctx, "n1", structs.NodeSchedulingIneligible))
	if got := must(s.CandidateNodes(ctx, dc1)); len(got) != 0 {
		t.Fatalf("an ineligible node is still a candidate: %s", ids(got))
	}
	must(s.UpdateNodeEligibility(ctx, "n1", structs.NodeSchedulingEligible))
	if got := must(s.CandidateNodes(ctx, dc1)); ids(got) != "n1 " {
		t.Fatalf("an eligible node again: %s", ids(got))
	}
}

// Crash kinds a CrashFactory's arm function is asked for.
const (
	CrashPlan         = "plan"          // CommitPlan
	CrashClientUpdate = "client-update" // UpdateAllocsFromClient
	CrashGC           = "gc"            // GarbageCollect
)

// CrashFactory returns a fresh, empty store and its arm function: arm(op)
// makes the store's next write of kind op stop part-way and fail, as if
// the process died there (embedded: the transaction aborts before it
// commits; DynamoDB: the plan stops after its first chunk has landed),
// and reports false when the backend cannot crash that kind of write (the
// suite then runs the write normally).
type CrashFactory func(t *testing.T) (s storage.Store, arm func(op string) bool)

// RunCrashes checks usage bookkeeping across writes that crash part-way:
// after each crash, and after the writes that follow it, every node's
// usage equals what its allocs hold.
func RunCrashes(t *testing.T, newStore CrashFactory) {
	s, arm := newStore(t)
	defer s.Close()
	defer func() {
		if r := recover(); r != nil {
			if me, ok := r.(mustError); ok {
				t.Fatalf("unexpected error: %v", me.err)
			}
			panic(r)
		}
	}()
	nodes := []string{"n1", "n2", "n3"}
	for _, id := range nodes {
		addNode(t, s, testNode(id, 100000, 1000000))
	}
	job := register(t, s, testJob("web")).Job
	first := placeN(t, s, job, "eval-1", 0, 30, nodes...)
	checkUsage(t, s, "before any crash")

	// A plan large enough to need several chunks on DynamoDB: stops and
	// placements, crashing part-way.
	var places []*structs.Allocation
	for i := 0; i < 70; i++ {
		places = append(places, placement(job, "eval-2", uint(100+i), nodes[i%3]))
	}
	p := planFor(job, "eval-2", places...)
	for _, a := range first[:10] {
		p.Stops = append(p.Stops, &structs.AllocStop{AllocID: a.ID, NodeID: a.NodeID, DesiredStatus: structs.AllocDesiredStatusStop})
	}
	if arm(CrashPlan) {
		if _, err := s.CommitPlan(ctx, p); err == nil {
			t.Fatal("an armed crash did not stop the plan")
		}
		checkUsage(t, s, "after a plan crashed part-way")
	}
	// Later work completes on the state the crash left.
	placeN(t, s, job, "eval-3", 300, 9, nodes...)
	checkUsage(t, s, "after a plan following the crash")

	// A client report that crashes, then the same report again.
	report := []*structs.Allocation{}
	for _, a := range first[10:20] {
		report = append(report, &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusComplete})
	}
	byNode := map[string][]*structs.Allocation{}
	for i, r := range report {
		n := first[10+i].NodeID
		byNode[n] = append(byNode[n], r)
	}
	for _, n := range nodes {
		if arm(CrashClientUpdate) {
			if _, err := s.UpdateAllocsFromClient(ctx, n, byNode[n]); err == nil {
				t.Fatal("an armed crash did not stop the client update")
			}
			checkUsage(t, s, "after a client update crashed")
		}
		must(s.UpdateAllocsFromClient(ctx, n, byNode[n]))
		checkUsage(t, s, "after the client update was repeated")
	}

	// Stop what finished, then a garbage collection that crashes, and
	// one that runs.
	var stops []*structs.AllocStop
	for _, a := range first[10:20] {
		stops = append(stops, &structs.AllocStop{AllocID: a.ID, NodeID: a.NodeID, DesiredStatus: structs.AllocDesiredStatusStop})
	}
	p4 := planFor(job, "eval-4")
	p4.Stops = stops
	must(s.CommitPlan(ctx, p4))
	if arm(CrashGC) {
		if _, err := s.GarbageCollect(ctx, time.Now().Add(time.Second)); err == nil {
			t.Fatal("an armed crash did not stop the garbage collection")
		}
		checkUsage(t, s, "after a garbage collection crashed")
	}
	res := must(s.GarbageCollect(ctx, time.Now().Add(time.Second)))
	if res.Allocs == 0 {
		t.Fatal("garbage collection after the crash removed nothing")
	}
	checkUsage(t, s, "after garbage collection")
}

// ErrCrash is what backends' crash hooks return in RunCrashes.
var ErrCrash = errors.New("storagetest: simulated crash")
