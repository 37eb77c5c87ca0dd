package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/httpapi"
	"github.com/drover-sched/drover/structs"
)

const paramJob = `{"Job": {"ID": "proc", "Type": "batch", "Meta": {"owner": "ops", "mode": "fast"},
  "ParameterizedJob": {"Payload": "optional", "MetaRequired": ["input"], "MetaOptional": ["mode"]},
  "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/cat"},
    "DispatchPayload": {"File": "in.txt"}}]}]}}`

const cronJob = `{"Job": {"ID": "report", "Type": "batch", "Periodic": {"Spec": "0 3 * * *", "TimeZone": "Europe/Paris"},
  "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}}`

func (e *env) mustOK(method, path, body string) string {
	e.t.Helper()
	resp, out := e.do(method, path, []byte(body))
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
	return out
}

// TestDispatch: PUT /v1/job/:id/dispatch validates payload and meta as
// Nomad (400 naming the field, nothing written), creates the child with
// the payload and merged meta, honours the idempotency token, and the
// parent's summary counts its children.
func TestDispatch(t *testing.T) {
	e := newEnv(t)
	e.mustOK("PUT", "/v1/jobs", paramJob)
	if resp, out := e.do("GET", "/v1/job/proc", nil); resp.StatusCode != 200 || !strings.Contains(out, `"Status":"running"`) {
		t.Fatalf("parent: %d %s", resp.StatusCode, out)
	}
	payload := base64.StdEncoding.EncodeToString([]byte("hello payload\n"))
	bad := []struct{ name, body, want string }{
		{"missing required meta", `{"Meta": {"mode": "slow"}}`, "Meta: dispatch did not provide required meta keys: input"},
		{"unknown meta", `{"Meta": {"input": "a", "color": "red"}}`, "Meta: dispatch request included unpermitted metadata keys: color"},
		{"payload too big", `{"Meta": {"input": "a"}, "Payload": "` + base64.StdEncoding.EncodeToString(make([]byte, 17<<10)) + `"}`, "Payload"},
		{"unknown field", `{"Meta": {"input": "a"}, "Paylod": ""}`, "Paylod"},
	}
	for _, c := range bad {
		resp, out := e.do("PUT", "/v1/job/proc/dispatch", []byte(c.body))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(out, c.want) {
			t.Errorf("%s: %d %q, want 400 with %q", c.name, resp.StatusCode, out, c.want)
		}
	}
	if resp, out := e.do("PUT", "/v1/job/proc/dispatch?idempotency_token=x", []byte(`{"Meta": {"input": "a"}}`)); resp.StatusCode != 200 {
		t.Fatalf("first dispatch: %d %s", resp.StatusCode, out)
	}
	var first httpapi.JobDispatchResponse
	out := e.mustOK("PUT", "/v1/job/proc/dispatch", `{"Meta": {"input": "b", "mode": "slow"}, "Payload": "`+payload+`"}`)
	if err := json.Unmarshal([]byte(out), &first); err != nil || !strings.HasPrefix(first.DispatchedJobID, "proc/dispatch-") || first.EvalID == "" {
		t.Fatalf("dispatch: %s %v", out, err)
	}
	child, err := e.store.Job(t.Context(), "default", first.DispatchedJobID)
	if err != nil {
		t.Fatal(err)
	}
	if child.ParentID != "proc" || !child.Dispatched || string(child.Payload) != "hello payload\n" ||
		child.Meta["input"] != "b" || child.Meta["mode"] != "slow" || child.Meta["owner"] != "ops" {
		t.Fatalf("child %+v", child)
	}
	// The same token while its child lives: the same child, no new one.
	var again httpapi.JobDispatchResponse
	out = e.mustOK("PUT", "/v1/job/proc/dispatch?idempotency_token=x", `{"Meta": {"input": "a"}}`)
	_ = json.Unmarshal([]byte(out), &again)
	kids, _ := e.store.Jobs(t.Context(), "default", "proc/")
	if len(kids) != 2 || again.EvalID != "" || !strings.HasPrefix(again.DispatchedJobID, "proc/dispatch-") {
		t.Fatalf("idempotent dispatch: %s, %d children", out, len(kids))
	}
	var sum httpapi.JobSummary
	_ = json.Unmarshal([]byte(e.mustOK("GET", "/v1/job/proc/summary", "")), &sum)
	if sum.Children == nil || sum.Children.Pending != 2 {
		t.Fatalf("children summary %+v", sum.Children)
	}
	var stubs []httpapi.JobListStub
	_ = json.Unmarshal([]byte(e.mustOK("GET", "/v1/jobs", "")), &stubs)
	for _, s := range stubs {
		if s.ID == "proc" && (!s.ParameterizedJob || s.Status != structs.JobStatusRunning) {
			t.Fatalf("parent stub %+v", s)
		}
		if s.ID != "proc" && s.ParentID != "proc" {
			t.Fatalf("child stub %+v", s)
		}
	}
	// Dispatching a job that is not parameterized is a bad request, whose
	// body is the message alone (no Go sentinel text appended).
	e.mustOK("PUT", "/v1/jobs", goodJob)
	if resp, out := e.do("PUT", "/v1/job/web/dispatch", []byte(`{}`)); resp.StatusCode != 400 ||
		strings.TrimSpace(out) != `job "web" is not a parameterized job` {
		t.Fatalf("dispatch of a service job: %d %q", resp.StatusCode, out)
	}
}

// TestPeriodicForce: PUT /v1/job/:id/periodic/force launches a child now
// and answers its eval; a job that is not periodic is a bad request.
func TestPeriodicForce(t *testing.T) {
	e := newEnv(t)
	var plan httpapi.JobPlanResponse
	_ = json.Unmarshal([]byte(e.mustOK("PUT", "/v1/job/report/plan", cronJob)), &plan)
	paris, _ := time.LoadLocation("Europe/Paris")
	if n := plan.NextPeriodicLaunch.In(paris); n.Hour() != 3 || n.Minute() != 0 || !n.After(time.Now()) {
		t.Fatalf("plan's next periodic launch %s", plan.NextPeriodicLaunch)
	}
	e.mustOK("PUT", "/v1/jobs", cronJob)
	var resp httpapi.PeriodicForceResponse
	out := e.mustOK("PUT", "/v1/job/report/periodic/force", "")
	if err := json.Unmarshal([]byte(out), &resp); err != nil || resp.EvalID == "" {
		t.Fatalf("force: %s %v", out, err)
	}
	ev, err := e.store.Eval(t.Context(), resp.EvalID)
	if err != nil || !strings.HasPrefix(ev.JobID, "report/periodic-") || ev.TriggeredBy != structs.EvalTriggerPeriodicJob {
		t.Fatalf("child eval %+v %v", ev, err)
	}
	child, err := e.store.Job(t.Context(), "default", ev.JobID)
	if err != nil || child.ParentID != "report" || child.Periodic != nil {
		t.Fatalf("child %+v %v", child, err)
	}
	// The child's own routes take its ID escaped, as Nomad's client sends it.
	if r, out := e.do("GET", "/v1/job/"+strings.ReplaceAll(ev.JobID, "/", "%2F"), nil); r.StatusCode != 200 || !strings.Contains(out, `"ParentID":"report"`) {
		t.Fatalf("child read: %d %s", r.StatusCode, out)
	}
	e.mustOK("PUT", "/v1/jobs", strings.Replace(strings.Replace(cronJob, `"ID": "report"`, `"ID": "off"`, 1), `"Spec":`, `"Enabled": false, "Spec":`, 1))
	if r, out := e.do("PUT", "/v1/job/off/periodic/force", nil); r.StatusCode != 400 || !strings.Contains(out, "disabled") {
		t.Fatalf("force of a disabled periodic job: %d %s", r.StatusCode, out)
	}
	e.mustOK("PUT", "/v1/jobs", goodJob)
	if r, out := e.do("PUT", "/v1/job/web/periodic/force", nil); r.StatusCode != 400 || !strings.Contains(out, "not periodic") {
		t.Fatalf("force of a service job: %d %s", r.StatusCode, out)
	}
}
