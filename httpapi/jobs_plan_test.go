package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/drover-sched/drover/httpapi"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

func (e *env) addNode(id string) {
	e.t.Helper()
	_, err := e.store.UpsertNode(context.Background(), &structs.Node{ID: id, Name: id, Datacenter: "dc1", NodePool: "default",
		Status: structs.NodeStatusReady, SchedulingEligibility: structs.NodeSchedulingEligible,
		Attributes:    map[string]string{"kernel.name": "linux"},
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000}, Memory: structs.NodeMemoryResources{MemoryMB: 8192}, Disk: structs.NodeDiskResources{DiskMB: 100000}},
		Drivers:       map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) plan(body []byte) (*httpapi.JobPlanResponse, int, string) {
	e.t.Helper()
	resp, out := e.do(http.MethodPut, "/v1/job/web/plan", body)
	if resp.StatusCode != 200 {
		return nil, resp.StatusCode, out
	}
	var p httpapi.JobPlanResponse
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		e.t.Fatalf("plan response: %v: %s", err, out)
	}
	return &p, 200, out
}

func planBody(t *testing.T, job []byte, diff bool) []byte {
	var m map[string]any
	if err := json.Unmarshal(job, &m); err != nil {
		t.Fatal(err)
	}
	m["Diff"] = diff
	b, _ := json.Marshal(m)
	return b
}

// TestJobPlan: a plan runs reconcile and placement and writes nothing: a
// new job is an Added diff placing its count; a count change is an Edited
// Count field that forces creates; with no room, FailedTGAllocs explains
// why; JobModifyIndex is the current job's.
func TestJobPlan(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// No node: the placements fail.
	p, code, out := e.plan(planBody(t, []byte(goodJob), true))
	if code != 200 || p.FailedTGAllocs["web"] == nil || p.Annotations.DesiredTGUpdates["web"].Place != 2 {
		t.Fatalf("plan without nodes: %d %s", code, out)
	}
	e.addNode("n1")
	p, _, out = e.plan(planBody(t, []byte(goodJob), true))
	if p.FailedTGAllocs != nil || p.Diff.Type != structs.DiffTypeAdded || p.JobModifyIndex != 0 || p.Diff.TaskGroups[0].Updates["create"] != 2 {
		t.Fatalf("plan of a new job: %s", out)
	}
	if jobs, _ := e.store.Jobs(ctx, "*", ""); len(jobs) != 0 {
		t.Fatalf("a plan registered the job: %v", jobs)
	}
	if evals, _ := e.store.Evals(ctx, storage.EvalFilter{}); len(evals) != 0 {
		t.Fatalf("a plan wrote evals: %d", len(evals))
	}
	resp, body := e.do(http.MethodPut, "/v1/jobs", []byte(goodJob))
	var reg httpapi.JobRegisterResponse
	_ = json.Unmarshal([]byte(body), &reg)
	if resp.StatusCode != 200 {
		t.Fatalf("register: %s", body)
	}
	three := mutate(t, func(j map[string]any) { group(j)["Count"] = 3 })
	p, _, out = e.plan(planBody(t, three, true))
	if p.Diff.Type != structs.DiffTypeEdited || p.JobModifyIndex != reg.JobModifyIndex {
		t.Fatalf("plan of a count change: %s", out)
	}
	var count *structs.FieldDiff
	for _, f := range p.Diff.TaskGroups[0].Fields {
		if f.Name == "Count" {
			count = f
		}
	}
	if count == nil || count.Old != "2" || count.New != "3" || count.Type != structs.DiffTypeEdited ||
		len(count.Annotations) != 1 || count.Annotations[0] != "forces create" {
		t.Fatalf("count diff: %+v", count)
	}
	// Without Diff, no diff.
	if p, _, out = e.plan(planBody(t, three, false)); p.Diff != nil || p.Annotations == nil {
		t.Fatalf("plan without diff: %s", out)
	}
	if j, _ := e.store.Job(ctx, "default", "web"); j.TaskGroups[0].Count != 2 {
		t.Fatal("a plan changed the job")
	}
}

// TestJobPlanBadInput: a plan's job is validated as a registration's:
// 400 naming the field; a path/job ID mismatch or an unknown namespace is
// a 400 too.
func TestJobPlanBadInput(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		path string
		body []byte
		want string
	}{
		{"/v1/job/web/plan", planBody(t, mutate(t, func(j map[string]any) { group(j)["Count"] = -1 }), true), "Count"},
		{"/v1/job/web/plan", []byte(`{"Job": {"ID": "web"}, "Dif": true}`), "Dif"},
		{"/v1/job/web/plan", []byte(`{"Diff": true}`), "Job"},
		{"/v1/job/other/plan", planBody(t, []byte(goodJob), true), "Job.ID"},
		{"/v1/job/web/plan?namespace=nope", planBody(t, []byte(goodJob), true), "namespace"},
	}
	for _, c := range cases {
		resp, body := e.do(http.MethodPut, c.path, c.body)
		if resp.StatusCode != 400 || !strings.Contains(body, c.want) {
			t.Errorf("PUT %s: %d %q, want 400 naming %s", c.path, resp.StatusCode, body, c.want)
		}
	}
}

// TestJobVersionsDiffs: ?diffs=true answers each version's diff against
// the one before it, as `nomad job history -p` reads it.
func TestJobVersionsDiffs(t *testing.T) {
	e := newEnv(t)
	e.do(http.MethodPut, "/v1/jobs", []byte(goodJob))
	e.do(http.MethodPut, "/v1/jobs", mutate(t, func(j map[string]any) { j["Priority"] = 70 }))
	_, body := e.do(http.MethodGet, "/v1/job/web/versions?diffs=true", nil)
	var v struct {
		Versions []struct{ Version uint64 }
		Diffs    []*structs.JobDiff
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || len(v.Versions) != 2 || len(v.Diffs) != 1 {
		t.Fatalf("versions with diffs: %s", body)
	}
	var prio *structs.FieldDiff
	for _, f := range v.Diffs[0].Fields {
		if f.Name == "Priority" {
			prio = f
		}
	}
	if v.Diffs[0].Type != structs.DiffTypeEdited || prio == nil || prio.Old != "50" || prio.New != "70" {
		t.Fatalf("diff: %+v", v.Diffs[0])
	}
	if _, body = e.do(http.MethodGet, "/v1/job/web/versions", nil); !strings.Contains(body, `"Diffs":[]`) {
		t.Fatalf("without diffs: %s", body)
	}
}

// TestJobPlanPreferencesReplaceAllocs: adding an affinity or a spread to a
// running job plans create/destroy updates of its allocs (not in-place
// ones), as Nomad's
// tasksUpdated decides, and the diff names the Affinity and Spread objects.
func TestJobPlanPreferencesReplaceAllocs(t *testing.T) {
	e := newEnv(t)
	e.addNode("n1")
	resp, body := e.do(http.MethodPut, "/v1/jobs", []byte(goodJob))
	var reg httpapi.JobRegisterResponse
	if err := json.Unmarshal([]byte(body), &reg); err != nil || resp.StatusCode != 200 {
		t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	if err := e.evaluator.Process(context.Background(), reg.EvalID); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(j map[string]any){
		"Affinity": func(j map[string]any) {
			j["Affinities"] = []any{map[string]any{"LTarget": "${node.class}", "Operand": "=", "RTarget": "large", "Weight": 50}}
		},
		"Spread": func(j map[string]any) {
			group(j)["Spreads"] = []any{map[string]any{"Attribute": "${node.datacenter}", "Weight": 50}}
		},
	} {
		p, code, out := e.plan(planBody(t, mutate(t, change), true))
		// max_parallel 1: one alloc is replaced now, the other waits.
		if code != 200 || p.Diff.TaskGroups[0].Updates["create/destroy update"] != 1 || p.Annotations.DesiredTGUpdates["web"].InPlaceUpdate != 0 {
			t.Fatalf("%s: plan %d %s", name, code, out)
		}
		objects := append(append([]*structs.ObjectDiff(nil), p.Diff.Objects...), p.Diff.TaskGroups[0].Objects...)
		found := false
		for _, o := range objects {
			found = found || (o.Name == name && o.Type == structs.DiffTypeAdded)
		}
		if !found {
			t.Fatalf("%s: no Added %s object in the diff: %s", name, name, out)
		}
	}
	// Unchanged preferences keep the allocs in place.
	if p, _, out := e.plan(planBody(t, []byte(goodJob), true)); p.Diff.TaskGroups[0].Updates["create/destroy update"] != 0 {
		t.Fatalf("unchanged job: %s", out)
	}
}
