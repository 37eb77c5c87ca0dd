package awshome_test

import (
	"context"
	"testing"
	"time"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/structs"
)

// TestDisconnectedNodeAllocsUnknown: on the AWS home, as in the embedded
// one, the alloc of a group with max_client_disconnect on a node that
// missed its heartbeats becomes unknown (not lost, not replaced) and, the
// node back and reporting it running, it runs on with no replacement. The
// AWS evaluator had disconnected clients off: the alloc became lost and
// was replaced, contrary to the README.
func TestDisconnectedNodeAllocsUnknown(t *testing.T) {
	ctx := context.Background()
	h, _ := homeOnEmulator(t, "drover-disc", nil)
	node := &structs.Node{ID: "n1", Name: "n1", Datacenter: "dc1", NodePool: "default",
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 1000}, Memory: structs.NodeMemoryResources{MemoryMB: 1000}},
		Drivers:       map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}}
	if _, err := h.Service.RegisterNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	lostAfter := 5 * time.Minute
	job := &structs.Job{Region: "global", Namespace: "default", ID: "web", Name: "web", Type: structs.JobTypeService, Priority: 50,
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 1, MaxClientDisconnect: &lostAfter,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
	res, err := h.Service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	// process runs the job's pending evals (the evaluate function's work).
	process := func() {
		t.Helper()
		evals, err := h.Store.EvalsByJob(ctx, "default", "web")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evals {
			if e.Status == structs.EvalStatusPending && !e.WaitUntil.After(time.Now()) {
				if err := h.Evaluator.Process(ctx, e.ID); err != nil {
					t.Fatalf("eval %s (%s): %v", e.ID, e.TriggeredBy, err)
				}
			}
		}
	}
	if err := h.Evaluator.Process(ctx, res.EvalID); err != nil {
		t.Fatal(err)
	}
	allocs := func() []*structs.Allocation {
		t.Helper()
		as, err := h.Store.AllocsByJob(ctx, "default", "web")
		if err != nil {
			t.Fatal(err)
		}
		return as
	}
	placed := allocs()
	if len(placed) != 1 {
		t.Fatalf("placed %d allocs, want 1", len(placed))
	}
	id := placed[0].ID
	running := []*structs.Allocation{{ID: id, ClientStatus: structs.AllocClientStatusRunning}}
	if err := h.Service.UpdateAllocs(ctx, "n1", running); err != nil {
		t.Fatal(err)
	}
	if err := h.Service.NodeMissedHeartbeat(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if n, _ := h.Store.Node(ctx, "n1"); n.Status != structs.NodeStatusDisconnected {
		t.Fatalf("node %s after the missed heartbeat, want disconnected", n.Status)
	}
	process()
	as := allocs()
	if len(as) != 1 || as[0].ClientStatus != structs.AllocClientStatusUnknown || as[0].DesiredStatus != structs.AllocDesiredStatusRun {
		for _, a := range as {
			t.Logf("alloc %s %s desired=%s client=%s", a.ID, a.Name, a.DesiredStatus, a.ClientStatus)
		}
		t.Fatalf("the alloc on the disconnected node: want it alone, unknown and still wanted")
	}
	// Back: its node reports it running; it runs on, nothing replaces it.
	if _, err := h.Service.Heartbeat(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := h.Service.UpdateAllocs(ctx, "n1", running); err != nil {
		t.Fatal(err)
	}
	process()
	as = allocs()
	if len(as) != 1 || as[0].ID != id || as[0].ClientStatus != structs.AllocClientStatusRunning || as[0].DesiredStatus != structs.AllocDesiredStatusRun {
		for _, a := range as {
			t.Logf("alloc %s %s desired=%s client=%s", a.ID, a.Name, a.DesiredStatus, a.ClientStatus)
		}
		t.Fatal("after the reconnect: want the alloc alone, running and wanted")
	}
}
