package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/httpapi"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

// servicesEnv is an API serving the service routes with two registered
// instances of "web" (tags v1 / v1,canary) and one of "db" on node n1.
func servicesEnv(t *testing.T) (*env, []*structs.Allocation) {
	t.Helper()
	e := newEnv(t, func(cfg *httpapi.Config, store *embedded.Store) { cfg.Services = store })
	ctx := context.Background()
	node := &structs.Node{ID: "n1", Name: "n1", Datacenter: "dc1", NodePool: structs.DefaultNodePool, Status: structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
		NodeResources:         &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000}, Memory: structs.NodeMemoryResources{MemoryMB: 4096}, Disk: structs.NodeDiskResources{DiskMB: 10000}}}
	if _, err := e.store.UpsertNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	job := &structs.Job{Region: "global", Namespace: "default", ID: "web", Name: "web", Type: structs.JobTypeService, Priority: 50,
		NodePool: structs.DefaultNodePool, TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 3,
			EphemeralDisk: &structs.EphemeralDisk{SizeMB: 100},
			Tasks:         []*structs.Task{{Name: "server", Driver: "raw_exec", Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
	res, err := e.store.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, SubmitTime: time.Now().UnixNano(),
		Eval: &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "web", Type: job.Type, Status: structs.EvalStatusPending}})
	if err != nil {
		t.Fatal(err)
	}
	var allocs []*structs.Allocation
	for i := range 3 {
		name := structs.AllocName("web", "web", uint(i))
		allocs = append(allocs, &structs.Allocation{ID: structs.AllocIDForPlacement("e1", name, false, ""), Namespace: "default",
			EvalID: "e1", Name: name, NodeID: "n1", JobID: "web", JobVersion: res.Job.Version, TaskGroup: "web",
			AllocatedResources: structs.AllocatedResourcesFor(job.TaskGroups[0]),
			DesiredStatus:      structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning})
	}
	if _, err := e.store.CommitPlan(ctx, &structs.Plan{EvalID: "e1", Namespace: "default", JobID: "web", Priority: 50,
		JobModifyIndex: res.Job.JobModifyIndex, Placements: allocs}); err != nil {
		t.Fatal(err)
	}
	reg := func(a *structs.Allocation, name string, port int, tags ...string) *structs.ServiceRegistration {
		return &structs.ServiceRegistration{ID: structs.ServiceRegistrationID(a.ID, "server", name, "http"), ServiceName: name,
			Namespace: "default", NodeID: "n1", Datacenter: "dc1", JobID: "web", AllocID: a.ID, Tags: tags, Address: "127.0.0.1", Port: port}
	}
	if _, err := e.store.UpsertServiceRegistrations(ctx, "n1", []*structs.ServiceRegistration{
		reg(allocs[0], "web", 8001, "v1"), reg(allocs[1], "web", 8002, "v1", "canary"), reg(allocs[2], "db", 5432, "primary"),
	}); err != nil {
		t.Fatal(err)
	}
	return e, allocs
}

// TestServiceRoutesWithNomadsClient: Nomad's Go client lists services by
// namespace, reads one service's instances (with index headers) and
// deletes one.
func TestServiceRoutesWithNomadsClient(t *testing.T) {
	e, _ := servicesEnv(t)
	c, err := api.NewClient(&api.Config{Address: e.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	list, meta, err := c.Services().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if meta.LastIndex == 0 || len(list) != 1 || list[0].Namespace != "default" || len(list[0].Services) != 2 ||
		list[0].Services[0].ServiceName != "db" || list[0].Services[1].ServiceName != "web" ||
		strings.Join(list[0].Services[1].Tags, ",") != "canary,v1" {
		b, _ := json.Marshal(list)
		t.Fatalf("list = %s (index %d)", b, meta.LastIndex)
	}
	web, _, err := c.Services().Get("web", nil)
	if err != nil || len(web) != 2 || web[0].ID > web[1].ID || web[0].Port == 0 || web[0].AllocID == "" {
		t.Fatalf("get web = %+v, %v", web, err)
	}
	if _, err := c.Services().Delete("web", web[0].ID, nil); err != nil {
		t.Fatal(err)
	}
	web2, _, _ := c.Services().Get("web", nil)
	if len(web2) != 1 || web2[0].ID != web[1].ID {
		t.Fatalf("after delete: %+v", web2)
	}
	if _, err := c.Services().Delete("web", "nope", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("delete unknown: %v, want 404", err)
	}
}

// TestServiceReadFilters: ?tag= keeps instances with every tag, ?filter=
// is go-bexpr, ?choose=N|key picks N stably; a bad filter or choose is a
// 400 naming the parameter.
func TestServiceReadFilters(t *testing.T) {
	e, _ := servicesEnv(t)
	get := func(q string) []*structs.ServiceRegistration {
		t.Helper()
		resp, body := e.do(http.MethodGet, "/v1/service/web"+q, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Nomad-Index") == "" {
			t.Fatalf("GET %s: %d %s", q, resp.StatusCode, body)
		}
		var out []*structs.ServiceRegistration
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := get("?tag=canary"); len(got) != 1 || got[0].Port != 8002 {
		t.Fatalf("tag=canary: %+v", got)
	}
	if got := get("?tag=v1&tag=canary"); len(got) != 1 {
		t.Fatalf("two tags: %+v", got)
	}
	if got := get("?filter=" + strings.ReplaceAll(`Port == 8001`, " ", "%20")); len(got) != 1 || got[0].Port != 8001 {
		t.Fatalf("filter: %+v", got)
	}
	one := get("?choose=1|client-a")
	if len(one) != 1 || get("?choose=1|client-a")[0].ID != one[0].ID {
		t.Fatalf("choose is not stable: %+v", one)
	}
	if got := get("?choose=5|k"); len(got) != 2 {
		t.Fatalf("choose more than there are: %d", len(got))
	}
	for q, field := range map[string]string{"?choose=x": "choose", "?filter=Port%20===": "filter"} {
		resp, body := e.do(http.MethodGet, "/v1/service/web"+q, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, field) {
			t.Fatalf("%s: %d %s, want a 400 naming %s", q, resp.StatusCode, body, field)
		}
	}
	if got := get("?namespace=other"); len(got) != 0 {
		t.Fatalf("other namespace: %+v", got)
	}
}

// TestServiceBlockingQuery: a read at the current index returns when a
// registration changes (here: its alloc stops, which removes it).
func TestServiceBlockingQuery(t *testing.T) {
	e, allocs := servicesEnv(t)
	resp, _ := e.do(http.MethodGet, "/v1/service/web", nil)
	idx := resp.Header.Get("X-Nomad-Index")
	done := make(chan []*structs.ServiceRegistration, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/v1/service/web?index="+idx+"&wait=30s", nil)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- nil
			return
		}
		defer r.Body.Close()
		var out []*structs.ServiceRegistration
		_ = json.NewDecoder(r.Body).Decode(&out)
		done <- out
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := e.store.UpdateAllocsFromClient(context.Background(), "n1", []*structs.Allocation{{ID: allocs[0].ID, ClientStatus: structs.AllocClientStatusComplete}}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if len(got) != 1 || got[0].AllocID != allocs[1].ID {
			t.Fatalf("blocking read answered %+v, want the one live instance", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("blocking query did not return on the change")
	}
}
