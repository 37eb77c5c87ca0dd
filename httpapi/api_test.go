package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/drover-sched/drover/controlplane"
	evqueue "github.com/drover-sched/drover/events/embedded"
	"github.com/drover-sched/drover/httpapi"
	"github.com/drover-sched/drover/placement"
	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

type env struct {
	t         *testing.T
	store     *embedded.Store
	srv       *httptest.Server
	svc       *controlplane.Service
	evaluator *scheduler.Evaluator
}

// newEnv is an API on a fresh embedded store with the control plane; opts
// change its configuration (ACLs, node secrets).
func newEnv(t *testing.T, opts ...func(cfg *httpapi.Config, store *embedded.Store)) *env {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	broker := evqueue.New(evqueue.Config{})
	t.Cleanup(broker.Close)
	evaluator := &scheduler.Evaluator{State: store, Reconcile: reconcile.Reconcile, UpdateOnNodes: placement.UpdateTypeOnNodes,
		RescheduleTracker: reconcile.NextRescheduleTracker, Config: &scheduler.CachedConfig{Source: store, TTL: time.Nanosecond}}
	svc := controlplane.New(controlplane.Config{Store: store, Queue: broker, Logger: zaptest.NewLogger(t), Planner: evaluator})
	cfg := httpapi.Config{State: store, Jobs: svc, Watcher: store, Logger: zaptest.NewLogger(t),
		Plans: svc, Scaler: svc, Launcher: svc, Allocs: svc, Namespaces: svc, Scheduler: svc, Operator: svc,
		Agent: httpapi.AgentInfo{Name: "test", Region: "global", Datacenter: "dc1", Version: "0.1.0", HTTPAddr: "127.0.0.1:4646", Server: true}}
	for _, o := range opts {
		o(&cfg, store)
	}
	api := httpapi.New(cfg)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return &env{t: t, store: store, srv: srv, svc: svc, evaluator: evaluator}
}

func (e *env) do(method, path string, body []byte) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const goodJob = `{"Job": {"ID": "web", "Name": "web", "Type": "service", "Datacenters": ["dc1"],
  "TaskGroups": [{"Name": "web", "Count": 2, "Tasks": [{"Name": "server", "Driver": "raw_exec",
    "Config": {"command": "/bin/sleep", "args": ["1000"]}}]}]}}`

// mutate applies fn to the decoded good job and returns the new body.
func mutate(t *testing.T, fn func(job map[string]any)) []byte {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal([]byte(goodJob), &body); err != nil {
		t.Fatal(err)
	}
	fn(body["Job"].(map[string]any))
	b, _ := json.Marshal(body)
	return b
}

func group(j map[string]any) map[string]any { return j["TaskGroups"].([]any)[0].(map[string]any) }
func task(j map[string]any) map[string]any {
	return group(j)["Tasks"].([]any)[0].(map[string]any)
}

// TestBadInputIsRejectedAndNothingStored: every kind of bad input gets a
// 400 whose message names the field (and the rule), and nothing reaches
// the store.
func TestBadInputIsRejectedAndNothingStored(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name  string
		body  []byte
		field string
	}{
		{"malformed JSON", []byte(`{"Job": {"ID": "web",`), ""},
		{"not an object", []byte(`[1,2]`), ""},
		{"missing Job", []byte(`{"EnforceIndex": false}`), "Job"},
		{"wrong type for count", mutate(t, func(j map[string]any) { group(j)["Count"] = "three" }), "Count"},
		{"wrong type for priority", mutate(t, func(j map[string]any) { j["Priority"] = true }), "Priority"},
		{"unknown field", mutate(t, func(j map[string]any) { j["Cout"] = 3 }), "Cout"},
		{"unknown driver", mutate(t, func(j map[string]any) { task(j)["Driver"] = "qemu" }), "Driver"},
		{"negative count", mutate(t, func(j map[string]any) { group(j)["Count"] = -1 }), "Count"},
		{"group without tasks", mutate(t, func(j map[string]any) { group(j)["Tasks"] = []any{} }), "Tasks"},
		{"task without driver", mutate(t, func(j map[string]any) { delete(task(j), "Driver") }), "Driver"},
		{"duplicate group names", mutate(t, func(j map[string]any) {
			j["TaskGroups"] = append(j["TaskGroups"].([]any), group(j))
		}), "TaskGroups"},
		{"duplicate task names", mutate(t, func(j map[string]any) {
			group(j)["Tasks"] = append(group(j)["Tasks"].([]any), task(j))
		}), "Tasks"},
		{"missing job ID", mutate(t, func(j map[string]any) { delete(j, "ID") }), "ID"},
		{"job ID with a space", mutate(t, func(j map[string]any) { j["ID"] = "my web" }), "ID"},
		{"bad job type", mutate(t, func(j map[string]any) { j["Type"] = "daemon" }), "Type"},
		{"system job with count 2", mutate(t, func(j map[string]any) { j["Type"] = "system"; group(j)["Count"] = 2 }), "must be 0 or 1 for a system job"},
		{"priority too high", mutate(t, func(j map[string]any) { j["Priority"] = 101 }), "Priority"},
		{"priority too low", mutate(t, func(j map[string]any) { j["Priority"] = -5 }), "Priority"},
		{"no task groups", mutate(t, func(j map[string]any) { j["TaskGroups"] = []any{} }), "TaskGroups"},
		{"cpu too low", mutate(t, func(j map[string]any) { task(j)["Resources"] = map[string]any{"CPU": 0, "MemoryMB": 64} }), "CPU"},
		{"memory too low", mutate(t, func(j map[string]any) { task(j)["Resources"] = map[string]any{"CPU": 100, "MemoryMB": 4} }), "MemoryMB"},
		{"negative kill timeout", mutate(t, func(j map[string]any) { task(j)["KillTimeout"] = -1 }), "KillTimeout"},
		{"bad restart mode", mutate(t, func(j map[string]any) {
			group(j)["RestartPolicy"] = map[string]any{"Attempts": 1, "Interval": int64(time.Minute), "Delay": int64(time.Second), "Mode": "sometimes"}
		}), "Mode"},
		{"bad reschedule delay function", mutate(t, func(j map[string]any) {
			group(j)["ReschedulePolicy"] = map[string]any{"DelayFunction": "linear", "Delay": int64(30 * time.Second), "Unlimited": true}
		}), "DelayFunction"},
		{"update min healthy time above deadline", mutate(t, func(j map[string]any) {
			group(j)["Update"] = map[string]any{"MaxParallel": 1, "MinHealthyTime": int64(10 * time.Minute), "HealthyDeadline": int64(time.Minute)}
		}), "MinHealthyTime"},
		{"unknown constraint operand", mutate(t, func(j map[string]any) {
			j["Constraints"] = []any{map[string]any{"LTarget": "${attr.kernel.name}", "Operand": "~=", "RTarget": "linux"}}
		}), "Operand"},
		{"constraint regexp does not compile", mutate(t, func(j map[string]any) {
			j["Constraints"] = []any{map[string]any{"LTarget": "${attr.kernel.name}", "Operand": "regexp", "RTarget": "(["}}
		}), "RTarget"},
		{"version constraint does not parse", mutate(t, func(j map[string]any) {
			j["Constraints"] = []any{map[string]any{"LTarget": "${attr.os.version}", "Operand": "version", "RTarget": ">= banana"}}
		}), "RTarget"},
		{"bridge network (unsupported)", mutate(t, func(j map[string]any) {
			group(j)["Networks"] = []any{map[string]any{"Mode": "bridge"}}
		}), "network mode"},
		{"consul service (unsupported)", mutate(t, func(j map[string]any) {
			group(j)["Services"] = []any{map[string]any{"Name": "web", "Provider": "consul"}}
		}), "Services[0] \"web\".Provider"},
		{"periodic block (unsupported)", mutate(t, func(j map[string]any) {
			j["Periodic"] = map[string]any{"Spec": "*/5 * * * *"}
		}), "periodic"},
		{"affinity weight zero", mutate(t, func(j map[string]any) {
			j["Affinities"] = []any{map[string]any{"LTarget": "${node.class}", "Operand": "=", "RTarget": "large", "Weight": 0}}
		}), "Job.Affinities[0].Weight: must not be 0"},
		{"affinity weight beyond int8", mutate(t, func(j map[string]any) {
			group(j)["Affinities"] = []any{map[string]any{"LTarget": "${node.class}", "Operand": "=", "RTarget": "large", "Weight": 200}}
		}), "Weight"},
		{"spread percentages above 100", mutate(t, func(j map[string]any) {
			group(j)["Spreads"] = []any{map[string]any{"Attribute": "${node.datacenter}", "Weight": 50, "SpreadTarget": []any{
				map[string]any{"Value": "dc1", "Percent": 80}, map[string]any{"Value": "dc2", "Percent": 30}}}}
		}), "Spreads[0].SpreadTarget: percentages must sum to at most 100 (got 110)"},
		{"raw_exec without command", mutate(t, func(j map[string]any) { task(j)["Config"] = map[string]any{"args": []any{"x"}} }), "command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, msg := e.do(http.MethodPut, "/v1/jobs", tc.body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d (%s), want 400", resp.StatusCode, msg)
			}
			if !strings.Contains(msg, tc.field) {
				t.Fatalf("message %q does not name %q", msg, tc.field)
			}
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
				t.Fatalf("content type %q: errors are plain text", resp.Header.Get("Content-Type"))
			}
		})
	}
	ctx := context.Background()
	jobs, _ := e.store.Jobs(ctx, "*", "")
	evals, _ := e.store.Evals(ctx, storage.EvalFilter{})
	if len(jobs) != 0 || len(evals) != 0 {
		t.Fatalf("bad input was stored: %d jobs, %d evals", len(jobs), len(evals))
	}
	// The good job itself is accepted, which shows the cases fail for
	// their own reason.
	resp, msg := e.do(http.MethodPut, "/v1/jobs", []byte(goodJob))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("good job: %d %s", resp.StatusCode, msg)
	}
}

func TestRegisterAndReadBack(t *testing.T) {
	e := newEnv(t)
	resp, body := e.do(http.MethodPut, "/v1/jobs", []byte(goodJob))
	if resp.StatusCode != 200 {
		t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	var reg httpapi.JobRegisterResponse
	if err := json.Unmarshal([]byte(body), &reg); err != nil {
		t.Fatal(err)
	}
	if reg.EvalID == "" || reg.JobModifyIndex == 0 || resp.Header.Get("X-Nomad-Index") == "" {
		t.Fatalf("register response: %+v headers %v", reg, resp.Header)
	}
	resp, body = e.do(http.MethodGet, "/v1/job/web", nil)
	for _, h := range []string{"X-Nomad-Index", "X-Nomad-KnownLeader", "X-Nomad-LastContact"} {
		if resp.Header.Get(h) == "" {
			t.Fatalf("read without %s", h)
		}
	}
	var job structs.Job
	if err := json.Unmarshal([]byte(body), &job); err != nil {
		t.Fatal(err)
	}
	if job.Priority != 50 || job.TaskGroups[0].Tasks[0].KillTimeout != 5*time.Second || job.TaskGroups[0].RestartPolicy == nil {
		t.Fatalf("Nomad's defaults not filled: %+v", job)
	}
	resp, body = e.do(http.MethodGet, "/v1/evaluation/"+reg.EvalID, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `"TriggeredBy":"job-register"`) {
		t.Fatalf("eval: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do(http.MethodGet, "/v1/jobs?prefix=w", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `"ID":"web"`) {
		t.Fatalf("jobs: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do(http.MethodGet, "/v1/jobs?prefix=zzz", nil)
	if strings.TrimSpace(body) != "[]" {
		t.Fatalf("jobs with a prefix matching none: %s", body)
	}
	resp, body = e.do(http.MethodGet, "/v1/job/web/summary", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `"web":{`) {
		t.Fatalf("summary: %d %s", resp.StatusCode, body)
	}
	for _, path := range []string{"/v1/job/nope", "/v1/job/nope/allocations", "/v1/evaluation/nope", "/v1/allocation/nope", "/v1/node/nope"} {
		if resp, _ := e.do(http.MethodGet, path, nil); resp.StatusCode != 404 {
			t.Fatalf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
	if resp, _ := e.do(http.MethodGet, "/v1/job/web?namespace=other", nil); resp.StatusCode != 404 {
		t.Fatalf("job in another namespace: %d", resp.StatusCode)
	}
	if resp, _ := e.do(http.MethodDelete, "/v1/job/nope", nil); resp.StatusCode != 404 {
		t.Fatalf("stop unknown job: %d", resp.StatusCode)
	}
	resp, body = e.do(http.MethodDelete, "/v1/job/web?purge=true", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "EvalID") {
		t.Fatalf("purge: %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.do(http.MethodGet, "/v1/job/web", nil); resp.StatusCode != 404 {
		t.Fatalf("purged job still readable: %d", resp.StatusCode)
	}
	if resp, body := e.do(http.MethodDelete, "/v1/job/web?purge=maybe", nil); resp.StatusCode != 400 || !strings.Contains(body, "purge") {
		t.Fatalf("bad purge flag: %d %s", resp.StatusCode, body)
	}
}

func TestBlockingQueryWaitsForChange(t *testing.T) {
	e := newEnv(t)
	resp, _ := e.do(http.MethodGet, "/v1/jobs", nil)
	idx := resp.Header.Get("X-Nomad-Index")
	start := time.Now()
	done := make(chan string, 1)
	go func() {
		resp, body := e.do(http.MethodGet, "/v1/jobs?index="+idx+"&wait=10s", nil)
		done <- resp.Header.Get("X-Nomad-Index") + " " + body
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case got := <-done:
		t.Fatalf("blocking query returned before any change: %s", got)
	default:
	}
	e.do(http.MethodPut, "/v1/jobs", []byte(goodJob))
	select {
	case got := <-done:
		if !strings.Contains(got, `"ID":"web"`) {
			t.Fatalf("woke without the change: %s", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocking query did not wake on the write")
	}
	// With nothing changing, it returns when the wait ends.
	resp, _ = e.do(http.MethodGet, "/v1/jobs", nil)
	start = time.Now()
	e.do(http.MethodGet, "/v1/jobs?index="+resp.Header.Get("X-Nomad-Index")+"&wait=300ms", nil)
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Fatalf("wait=300ms returned after %s", d)
	}
	if resp, body := e.do(http.MethodGet, "/v1/jobs?index=abc", nil); resp.StatusCode != 400 || !strings.Contains(body, "index") {
		t.Fatalf("bad index: %d %s", resp.StatusCode, body)
	}
}

func TestGzipWhenAsked(t *testing.T) {
	e := newEnv(t)
	e.do(http.MethodPut, "/v1/jobs", []byte(goodJob))
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/v1/job/web", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	tr := &http.Transport{DisableCompression: true}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("no gzip: %v", resp.Header)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(zr)
	if !strings.Contains(string(b), `"ID":"web"`) {
		t.Fatalf("gunzipped body: %s", b)
	}
}

func TestRelatedEvaluations(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := &structs.Evaluation{ID: "a", Namespace: "default", JobID: "web", Status: "complete", BlockedEval: "b"}
	b := &structs.Evaluation{ID: "b", Namespace: "default", JobID: "web", Status: "blocked", PreviousEval: "a"}
	c := &structs.Evaluation{ID: "c", Namespace: "default", JobID: "web", Status: "pending"}
	if _, err := e.store.UpsertEvals(ctx, a, b, c); err != nil {
		t.Fatal(err)
	}
	_, body := e.do(http.MethodGet, "/v1/evaluation/a?related=true", nil)
	var ev structs.Evaluation
	_ = json.Unmarshal([]byte(body), &ev)
	if len(ev.RelatedEvals) != 1 || ev.RelatedEvals[0].ID != "b" {
		t.Fatalf("related evals of a: %+v", ev.RelatedEvals)
	}
	_, body = e.do(http.MethodGet, "/v1/evaluation/a", nil)
	if strings.Contains(body, "RelatedEvals") {
		t.Fatal("related evals without ?related=true")
	}
}

// TestRequestLimitsAndStrictness: oversized bodies, bad waits, wrong
// methods, another region or namespace are refused with the right status.
func TestRequestLimitsAndStrictness(t *testing.T) {
	e := newEnv(t)
	huge := mutate(t, func(j map[string]any) {
		meta := map[string]any{}
		for i := 0; i < 200000; i++ {
			meta[strings.Repeat("k", 10)+string(rune('a'+i%26))+itoa(i)] = "value"
		}
		j["Meta"] = meta
	})
	if resp, body := e.do(http.MethodPut, "/v1/jobs", huge); resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "limit") {
		t.Fatalf("oversized job: %d %s", resp.StatusCode, body)
	}
	for _, wait := range []string{"-1s", "0", "1", "soon"} {
		if resp, body := e.do(http.MethodGet, "/v1/jobs?index=5&wait="+wait, nil); resp.StatusCode != 400 || !strings.Contains(body, "wait") {
			t.Fatalf("wait=%s: %d %s", wait, resp.StatusCode, body)
		}
	}
	if resp, _ := e.do(http.MethodDelete, "/v1/jobs", nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE /v1/jobs: %d, want 405", resp.StatusCode)
	}
	if resp, _ := e.do(http.MethodGet, "/v1/nonsense", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown endpoint: %d", resp.StatusCode)
	}
	other := mutate(t, func(j map[string]any) { j["Region"] = "eu" })
	if resp, body := e.do(http.MethodPut, "/v1/jobs", other); resp.StatusCode != 400 || !strings.Contains(body, "Region") {
		t.Fatalf("another region: %d %s", resp.StatusCode, body)
	}
	ns := mutate(t, func(j map[string]any) { j["Namespace"] = "default" })
	if resp, body := e.do(http.MethodPut, "/v1/jobs?namespace=other", ns); resp.StatusCode != 400 || !strings.Contains(body, "Namespace") {
		t.Fatalf("namespace mismatch: %d %s", resp.StatusCode, body)
	}
	jobs, _ := e.store.Jobs(context.Background(), "*", "")
	if len(jobs) != 0 {
		t.Fatalf("refused requests stored %d jobs", len(jobs))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestPreserveCounts: `job run -preserve-counts` keeps the current counts.
func TestPreserveCounts(t *testing.T) {
	e := newEnv(t)
	e.do(http.MethodPut, "/v1/jobs", []byte(goodJob)) // count 2
	scaled := mutate(t, func(j map[string]any) { group(j)["Count"] = 7; task(j)["Env"] = map[string]any{"V": "2"} })
	var body map[string]any
	_ = json.Unmarshal(scaled, &body)
	body["PreserveCounts"] = true
	b, _ := json.Marshal(body)
	if resp, msg := e.do(http.MethodPut, "/v1/jobs", b); resp.StatusCode != 200 {
		t.Fatalf("register: %d %s", resp.StatusCode, msg)
	}
	j, _ := e.store.Job(context.Background(), "default", "web")
	if j.TaskGroups[0].Count != 2 || j.TaskGroups[0].Tasks[0].Env["V"] != "2" {
		t.Fatalf("count %d env %v: the count must be kept, the rest updated", j.TaskGroups[0].Count, j.TaskGroups[0].Tasks[0].Env)
	}
}

// TestWarningsForUnenforcedSettings: memory_max is accepted but named in
// the response's warnings, not silently dropped.
func TestWarningsForUnenforcedSettings(t *testing.T) {
	e := newEnv(t)
	body := mutate(t, func(j map[string]any) {
		task(j)["Resources"] = map[string]any{"CPU": 100, "MemoryMB": 64, "MemoryMaxMB": 500}
	})
	resp, msg := e.do(http.MethodPut, "/v1/jobs", body)
	var reg httpapi.JobRegisterResponse
	_ = json.Unmarshal([]byte(msg), &reg)
	if resp.StatusCode != 200 || !strings.Contains(reg.Warnings, "MemoryMaxMB") {
		t.Fatalf("register with memory_max: %d warnings %q", resp.StatusCode, reg.Warnings)
	}
}

// TestBrokenQueryAndOtherRegionAreRefused: a query string that does not
// parse and another region are refused with 400, never ignored.
func TestBrokenQueryAndOtherRegionAreRefused(t *testing.T) {
	e := newEnv(t)
	for _, q := range []string{"region=eu", "prefix=%zz"} {
		resp, body := e.do(http.MethodGet, "/v1/jobs?"+q, nil)
		if resp.StatusCode != 400 {
			t.Fatalf("?%s: %d %s", q, resp.StatusCode, body)
		}
	}
	if resp, _ := e.do(http.MethodGet, "/v1/jobs?filter=", nil); resp.StatusCode != 200 {
		t.Fatalf("an empty filter is no filter, as in Nomad: %d", resp.StatusCode)
	}
	if resp, _ := e.do(http.MethodGet, "/v1/jobs?region=global&stale=true", nil); resp.StatusCode != 200 {
		t.Fatalf("own region: %d", resp.StatusCode)
	}
}

// TestBlockingQueryAnswersBeforeRequestDeadline: a blocking query whose
// request carries a context deadline shorter than its wait (the api
// function's timeout on AWS) answers with the current state before that
// deadline instead of being cut off with nothing written.
func TestBlockingQueryAnswersBeforeRequestDeadline(t *testing.T) {
	var cfg httpapi.Config
	e := newEnv(t, func(c *httpapi.Config, _ *embedded.Store) { cfg = *c })
	h := httpapi.New(cfg)
	resp, _ := e.do(http.MethodGet, "/v1/jobs", nil)
	idx := resp.Header.Get("X-Nomad-Index")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := httptest.NewRequest(http.MethodGet, "/v1/jobs?index="+idx+"&wait=1m", nil).WithContext(ctx)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if ctx.Err() != nil {
		t.Fatalf("answered after the request's deadline: %v", ctx.Err())
	}
	if rec.Code != http.StatusOK || rec.Header().Get("X-Nomad-Index") != idx || strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Fatalf("answer before the deadline: %d index %q body %q", rec.Code, rec.Header().Get("X-Nomad-Index"), rec.Body.String())
	}
}
