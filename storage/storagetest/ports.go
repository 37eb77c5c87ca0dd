package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Host ports (issue 12 §3): a node's usage record holds the host ports of
// its live allocs, and CommitPlan refuses any plan that would give two
// live allocs of a node the same host port — the over-commit invariant,
// for ports.

// portJob is testJob with a group network: a static port and a dynamic
// one.
func portJob(id string, static int) *structs.Job {
	j := testJob(id)
	j.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: structs.NetworkModeHost,
		ReservedPorts: []structs.Port{{Label: "admin", Value: static}},
		DynamicPorts:  []structs.Port{{Label: "http"}}}}
	return j
}

// withPorts gives a placement the host ports static and dynamic, as
// placement would.
func withPorts(a *structs.Allocation, static, dynamic int) *structs.Allocation {
	a.AllocatedResources.Shared.Networks = []*structs.NetworkResource{{Mode: structs.NetworkModeHost, IP: "127.0.0.1",
		ReservedPorts: []structs.Port{{Label: "admin", Value: static, HostNetwork: structs.DefaultHostNetwork}},
		DynamicPorts:  []structs.Port{{Label: "http", Value: dynamic, HostNetwork: structs.DefaultHostNetwork}}}}
	a.AllocatedResources.Shared.Ports = []structs.AllocatedPortMapping{
		{Label: "admin", Value: static, HostIP: "127.0.0.1"}, {Label: "http", Value: dynamic, HostIP: "127.0.0.1"}}
	return a
}

// checkPorts asserts that every node's usage record holds exactly the
// host ports of its allocs that hold resources, and no port twice.
func checkPorts(t *testing.T, s storage.Store, when string) {
	t.Helper()
	for _, u := range must(s.NodesWithUsage(ctx)) {
		var want []int
		for _, a := range must(s.AllocsByNode(ctx, u.Node.ID)) {
			if a.HoldsResources() {
				want = append(want, a.AllocatedResources.HostPorts()...)
			}
		}
		slices.Sort(want)
		if !slices.Equal(u.Ports, want) {
			t.Fatalf("%s: node %s usage holds ports %v, its live allocs hold %v", when, u.Node.ID, u.Ports, want)
		}
		if len(slices.Compact(slices.Clone(want))) != len(want) {
			t.Fatalf("%s: node %s: two live allocs hold the same host port: %v", when, u.Node.ID, want)
		}
	}
}

func testPortUsage(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	web := register(t, s, portJob("web", 8080)).Job
	a0 := withPorts(placement(web, "eval-1", 0, "n1"), 8080, 20001)
	must(s.CommitPlan(ctx, planFor(web, "eval-1", a0)))
	checkPorts(t, s, "after a placement with ports")
	if got := usageOf(t, s, "n1").Ports; !slices.Equal(got, []int{8080, 20001}) {
		t.Fatalf("n1 holds ports %v, want [8080 20001]", got)
	}

	// Another job asking for the same static port on the node: refused,
	// nothing written.
	api := register(t, s, portJob("api", 8080)).Job
	clash := withPorts(placement(api, "eval-2", 0, "n1"), 8080, 20002)
	if _, err := s.CommitPlan(ctx, planFor(api, "eval-2", clash)); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("placement on a held static port: err %v, want a conflict", err)
	}
	if _, err := s.Alloc(ctx, clash.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the refused placement was written: %v", err)
	}
	// A dynamic port that another alloc holds is refused too.
	clash2 := withPorts(placement(api, "eval-3", 0, "n1"), 9090, 20001)
	if _, err := s.CommitPlan(ctx, planFor(api, "eval-3", clash2)); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("placement on a held dynamic port: err %v, want a conflict", err)
	}
	// Two placements of one plan on the same port: refused.
	p1 := withPorts(placement(api, "eval-4", 0, "n1"), 9090, 20010)
	p2 := withPorts(placement(api, "eval-4", 1, "n1"), 9091, 20010)
	if _, err := s.CommitPlan(ctx, planFor(api, "eval-4", p1, p2)); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("two placements of a plan on one port: err %v, want a conflict", err)
	}
	checkPorts(t, s, "after refused plans")
	// Other ports on the same node fit.
	ok := withPorts(placement(api, "eval-5", 0, "n1"), 9090, 20002)
	must(s.CommitPlan(ctx, planFor(api, "eval-5", ok)))
	checkPorts(t, s, "after a second job's placement")

	// A destructive update: the stop gives 8080 back and the replacement
	// takes it, in one plan.
	repl := withPorts(placement(web, "eval-6", 0, "n1"), 8080, 20003)
	repl.ID = structs.AllocIDForPlacement("eval-6", repl.Name, false, a0.ID)
	repl.PreviousAllocation = a0.ID
	p := planFor(web, "eval-6", repl)
	p.Stops = []*structs.AllocStop{{AllocID: a0.ID, NodeID: "n1", DesiredStatus: structs.AllocDesiredStatusStop}}
	must(s.CommitPlan(ctx, p))
	checkPorts(t, s, "after a replacement on the same static port")
	if got := usageOf(t, s, "n1").Ports; !slices.Equal(got, []int{8080, 9090, 20002, 20003}) {
		t.Fatalf("n1 holds ports %v after the replacement, want [8080 9090 20002 20003]", got)
	}

	// A client report that ends an alloc gives its ports back, once.
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{{ID: ok.ID, ClientStatus: structs.AllocClientStatusFailed}}))
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{{ID: ok.ID, ClientStatus: structs.AllocClientStatusComplete}}))
	checkPorts(t, s, "after a terminal report")
	// Then the port is free for another alloc.
	again := withPorts(placement(api, "eval-7", 0, "n1"), 9090, 20001)
	must(s.CommitPlan(ctx, planFor(api, "eval-7", again)))
	checkPorts(t, s, "after re-using a freed port")
	checkUsage(t, s, "at the end")
}

// testConcurrentPortPlans: plans of different jobs racing for one static
// port on one node (with room for all of them otherwise): exactly one
// commits.
func testConcurrentPortPlans(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 100000, 100000))
	const jobs = 8
	var js []*structs.Job
	for i := range jobs {
		js = append(js, register(t, s, portJob(fmt.Sprintf("job-%02d", i), 8080)).Job)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, conflicts := 0, 0
	for i, j := range js {
		wg.Add(1)
		go func(i int, j *structs.Job) {
			defer wg.Done()
			a := withPorts(placement(j, "eval-"+j.ID, 0, "n1"), 8080, 21000+i)
			_, err := s.CommitPlan(ctx, planFor(j, "eval-"+j.ID, a))
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
		}(i, j)
	}
	wg.Wait()
	if ok != 1 || conflicts != jobs-1 {
		t.Fatalf("%d committed, %d conflicts; want 1 and %d", ok, conflicts, jobs-1)
	}
	checkPorts(t, s, "after concurrent plans on one port")
}

// testReservedPortPlans: a plan whose placement takes one of the node's
// reserved host ports (the agent's reserved_ports) is refused at commit,
// whether the port was asked as static or picked as dynamic, and nothing
// is written; the same placement on a node that reserves nothing commits.
func testReservedPortPlans(t *testing.T, s storage.Store) {
	n1 := testNode("n1", 4000, 4096)
	n1.ReservedResources = &structs.NodeReservedResources{}
	n1.ReservedResources.Networks.ReservedHostPorts = "22,8000-8010"
	addNode(t, s, n1)
	addNode(t, s, testNode("n2", 4000, 4096))
	web := register(t, s, portJob("web", 8005)).Job

	static := withPorts(placement(web, "eval-1", 0, "n1"), 8005, 20001)
	if _, err := s.CommitPlan(ctx, planFor(web, "eval-1", static)); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("placement on a reserved static port: err %v, want a conflict", err)
	}
	if _, err := s.Alloc(ctx, static.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the refused placement was written: %v", err)
	}
	dynamic := withPorts(placement(web, "eval-2", 0, "n1"), 9090, 22)
	if _, err := s.CommitPlan(ctx, planFor(web, "eval-2", dynamic)); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("placement with a dynamic port on a reserved one: err %v, want a conflict", err)
	}
	checkPorts(t, s, "after refused plans on reserved ports")
	if u := usageOf(t, s, "n1"); len(u.Ports) != 0 || u.Allocs != 0 {
		t.Fatalf("n1 holds %v ports, %d allocs after refused plans; want none", u.Ports, u.Allocs)
	}

	// Ports outside the reserved ones fit on n1; the reserved ones fit
	// on n2, which reserves nothing.
	must(s.CommitPlan(ctx, planFor(web, "eval-3", withPorts(placement(web, "eval-3", 0, "n1"), 8011, 20001))))
	must(s.CommitPlan(ctx, planFor(web, "eval-4", withPorts(placement(web, "eval-4", 1, "n2"), 8005, 22))))
	checkPorts(t, s, "after placements beside the reserved ports")
	checkUsage(t, s, "at the end")
}
