package cpclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/controlplane/cpclient"
	"github.com/drover-sched/drover/httpapi"
	"github.com/drover-sched/drover/nodeagent"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

// TestClientAgainstServer: the node agent's HTTP client speaks the node
// routes of the real API over a real store.
func TestClientAgainstServer(t *testing.T) {
	store, err := embedded.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	svc := controlplane.New(controlplane.Config{Store: store, Logger: zaptest.NewLogger(t)})
	var denied string
	api := httpapi.New(httpapi.Config{State: store, Jobs: svc, NodeAgents: svc,
		NodeAuth: func(r *http.Request, nodeID string) error {
			if nodeID == denied {
				return errors.New("caller is not this node")
			}
			return nil
		}})
	srv := httptest.NewServer(api)
	defer srv.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}))
	defer down.Close()

	// The first server answers 503: the client moves on to the next.
	c, err := cpclient.New([]string{down.URL, srv.Listener.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	node := &structs.Node{ID: "n1", Name: "n1", Datacenter: "dc1",
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000}, Memory: structs.NodeMemoryResources{MemoryMB: 4096}},
		Drivers:       map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}}
	ttl, err := c.RegisterNode(ctx, node)
	if err != nil || ttl != controlplane.DefaultHeartbeatTTL {
		t.Fatalf("register: %v %v", ttl, err)
	}
	if _, err := c.Heartbeat(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	job := &structs.Job{Namespace: "default", ID: "web", Type: "service", Priority: 50,
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1, Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec",
			Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
	reg, err := store.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, Eval: &structs.Evaluation{ID: "e1", Namespace: "default", JobID: "web", Status: "complete"}})
	if err != nil {
		t.Fatal(err)
	}
	name := structs.AllocName("web", "g", 0)
	prev := &structs.Allocation{ID: "prev", Namespace: "default", Name: name, NodeID: "n1", JobID: "web", TaskGroup: "g",
		JobVersion: reg.Job.Version, DesiredStatus: "stop", ClientStatus: "complete", EvalID: "e1"}
	cur := &structs.Allocation{ID: "cur", Namespace: "default", Name: name, NodeID: "n1", JobID: "web", TaskGroup: "g",
		JobVersion: reg.Job.Version, DesiredStatus: "run", ClientStatus: "pending", EvalID: "e1", PreviousAllocation: "prev"}
	if _, err := store.CommitPlan(ctx, &structs.Plan{EvalID: "e1", Namespace: "default", JobID: "web", JobModifyIndex: reg.Job.JobModifyIndex,
		Placements: []*structs.Allocation{prev, cur}}); err != nil {
		t.Fatal(err)
	}
	idx, err := c.AssignmentIndex(ctx, "n1")
	if err != nil || idx == 0 {
		t.Fatalf("assignment index %d %v", idx, err)
	}
	allocs, idx2, err := c.Assignments(ctx, "n1")
	if err != nil || len(allocs) != 2 || idx2 != idx || allocs[0].Job == nil {
		t.Fatalf("assignments: %d %d %v", len(allocs), idx2, err)
	}
	if err := c.UpdateAllocs(ctx, "n1", []*structs.Allocation{{ID: "cur", ClientStatus: "running"}}); err != nil {
		t.Fatal(err)
	}
	if a, _ := store.Alloc(ctx, "cur"); a.ClientStatus != "running" {
		t.Fatalf("report not applied: %s", a.ClientStatus)
	}
	p, err := c.PreviousAlloc(ctx, "n1", "cur")
	if err != nil || p == nil || p.ID != "prev" || p.ClientStatus != "complete" {
		t.Fatalf("previous alloc: %+v %v", p, err)
	}
	if p, err := c.PreviousAlloc(ctx, "n1", "prev"); err != nil || p != nil {
		t.Fatalf("previous of an alloc without one: %+v %v", p, err)
	}
	// Another node may not report on n1's allocs, nor ask about them.
	var se *cpclient.StatusError
	if err := c.UpdateAllocs(ctx, "n2", []*structs.Allocation{{ID: "cur", ClientStatus: "failed"}}); !errors.As(err, &se) || se.Code != http.StatusForbidden {
		t.Fatalf("report on another node's alloc: %v", err)
	}
	if _, err := c.PreviousAlloc(ctx, "n2", "cur"); !errors.As(err, &se) || se.Code != http.StatusForbidden {
		t.Fatalf("previous alloc of another node's alloc: %v", err)
	}
	// Those answers, and an unknown alloc, will not change: the agent
	// stops asking (nodeagent.ErrPermanent); a server error is retried.
	if _, err := c.PreviousAlloc(ctx, "n2", "cur"); !errors.Is(err, nodeagent.ErrPermanent) {
		t.Fatalf("403 is not permanent: %v", err)
	}
	if _, err := c.PreviousAlloc(ctx, "n1", "no-such-alloc"); !errors.Is(err, nodeagent.ErrPermanent) || !errors.As(err, &se) || se.Code != http.StatusNotFound {
		t.Fatalf("404 is not permanent: %v", err)
	}
	for _, code := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusConflict} {
		if errors.Is(&cpclient.StatusError{Code: code}, nodeagent.ErrPermanent) {
			t.Fatalf("%d taken as permanent", code)
		}
	}
	// The node authorizer is consulted.
	denied = "n1"
	if _, err := c.Heartbeat(ctx, "n1"); !errors.As(err, &se) || se.Code != http.StatusForbidden {
		t.Fatalf("denied heartbeat: %v", err)
	}
	if _, err := c.Heartbeat(ctx, "unknown-node"); !errors.As(err, &se) || se.Code != http.StatusNotFound {
		t.Fatalf("heartbeat of an unknown node: %v", err)
	}
	if _, err := cpclient.New(nil); err == nil {
		t.Fatal("a client without servers")
	}
	if _, err := cpclient.New([]string{"http://[::1"}); err == nil {
		t.Fatal("a server address that does not parse")
	}
}
