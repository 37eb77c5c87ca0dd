package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/drover-sched/drover/httpapi"

	"github.com/drover-sched/drover/structs"
)

// registerJobs registers jobs with the given IDs into the default
// namespace.
func (e *env) registerJobs(ids ...string) {
	e.t.Helper()
	for _, id := range ids {
		body := mutate(e.t, func(j map[string]any) { j["ID"], j["Name"] = id, id })
		if resp, out := e.do(http.MethodPut, "/v1/jobs", body); resp.StatusCode != 200 {
			e.t.Fatalf("register %s: %d %s", id, resp.StatusCode, out)
		}
	}
}

// listIDs GETs path and returns the IDs of the listed objects and the
// X-Nomad-NextToken header.
func (e *env) listIDs(path string) ([]string, string) {
	e.t.Helper()
	resp, body := e.do(http.MethodGet, path, nil)
	if resp.StatusCode != 200 {
		e.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	var items []struct{ ID, Name string }
	if err := json.Unmarshal([]byte(body), &items); err != nil {
		e.t.Fatalf("GET %s: %v: %s", path, err, body)
	}
	ids := make([]string, 0, len(items))
	for _, it := range items {
		if it.ID == "" {
			it.ID = it.Name
		}
		ids = append(ids, it.ID)
	}
	return ids, resp.Header.Get("X-Nomad-NextToken")
}

// TestJobsPagination: per_page cuts the list and names the next page's
// first job in X-Nomad-NextToken (Nomad's "<namespace>.<id>"); following
// the tokens lists every job once, in order; reverse turns the order
// around.
func TestJobsPagination(t *testing.T) {
	e := newEnv(t)
	e.registerJobs("a", "b", "c", "d", "e")
	ids, next := e.listIDs("/v1/jobs?per_page=2")
	if strings.Join(ids, ",") != "a,b" || next != "default.c" {
		t.Fatalf("first page %v, next %q", ids, next)
	}
	var all []string
	token := ""
	for pages := 0; pages < 10; pages++ {
		ids, next := e.listIDs("/v1/jobs?per_page=2&next_token=" + url.QueryEscape(token))
		all = append(all, ids...)
		if next == "" {
			break
		}
		token = next
	}
	if strings.Join(all, ",") != "a,b,c,d,e" {
		t.Fatalf("all pages: %v", all)
	}
	ids, next = e.listIDs("/v1/jobs?per_page=2&reverse=true")
	if strings.Join(ids, ",") != "e,d" || next != "default.c" {
		t.Fatalf("reverse: %v, next %q", ids, next)
	}
	ids, next = e.listIDs("/v1/jobs?per_page=2&reverse=true&next_token=default.c")
	if strings.Join(ids, ",") != "c,b" || next != "default.a" {
		t.Fatalf("reverse second page: %v, next %q", ids, next)
	}
	// Nomad's CLI looks a job up with a prefix and a page size.
	ids, next = e.listIDs("/v1/jobs?per_page=20&prefix=c")
	if strings.Join(ids, ",") != "c" || next != "" {
		t.Fatalf("prefix: %v, next %q", ids, next)
	}
	// A token between two jobs starts at the next one.
	ids, _ = e.listIDs("/v1/jobs?next_token=default.bb")
	if strings.Join(ids, ",") != "c,d,e" {
		t.Fatalf("token between jobs: %v", ids)
	}
}

// TestFilterExpressions: ?filter= keeps what the go-bexpr expression
// matches, evaluated on the full object (a node's Attributes are not in
// its list stub, as in Nomad); filtered-out items do not count towards a
// page.
func TestFilterExpressions(t *testing.T) {
	e := newEnv(t)
	e.registerJobs("api", "batch1", "batch2", "web")
	ids, _ := e.listIDs("/v1/jobs?filter=" + url.QueryEscape(`ID matches "^batch"`))
	if strings.Join(ids, ",") != "batch1,batch2" {
		t.Fatalf("filter: %v", ids)
	}
	ids, next := e.listIDs("/v1/jobs?per_page=1&filter=" + url.QueryEscape(`ID contains "b"`))
	if strings.Join(ids, ",") != "batch1" || next != "default.batch2" {
		t.Fatalf("filter with a page: %v next %q", ids, next)
	}
	ids, _ = e.listIDs("/v1/jobs?filter=" + url.QueryEscape(`Priority == 50 and Status != "dead" and Meta is empty`))
	if len(ids) != 4 {
		t.Fatalf("filter on nested fields: %v", ids)
	}
	ctx := context.Background()
	for _, n := range []struct{ id, kernel string }{{"node-a", "linux"}, {"node-b", "darwin"}} {
		if _, err := e.store.UpsertNode(ctx, &structs.Node{ID: n.id, Name: n.id, Datacenter: "dc1", Status: structs.NodeStatusReady,
			SchedulingEligibility: structs.NodeSchedulingEligible, Attributes: map[string]string{"kernel.name": n.kernel}}); err != nil {
			t.Fatal(err)
		}
	}
	ids, _ = e.listIDs("/v1/nodes?filter=" + url.QueryEscape(`Attributes["kernel.name"] == "linux"`))
	if strings.Join(ids, ",") != "node-a" {
		t.Fatalf("node filter on attributes: %v", ids)
	}
	ids, _ = e.listIDs("/v1/evaluations?filter=" + url.QueryEscape(`JobID == "web"`))
	if len(ids) != 1 {
		t.Fatalf("eval filter: %v", ids)
	}
}

// TestPaginationBadInput: a bad page size, token direction, filter syntax
// or filtered field is a 400 naming the parameter; eval listings refuse
// ?filter= together with Nomad's legacy ?job= / ?status=.
func TestPaginationBadInput(t *testing.T) {
	e := newEnv(t)
	e.registerJobs("web")
	cases := []struct{ path, want string }{
		{"/v1/jobs?per_page=abc", `"per_page"`},
		{"/v1/jobs?per_page=-1", `"per_page"`},
		{"/v1/allocations?per_page=100000", `"per_page"`},
		{"/v1/nodes?reverse=maybe", `"reverse"`},
		{"/v1/jobs?filter=" + url.QueryEscape(`ID ==`), `"filter"`},
		{"/v1/jobs?filter=" + url.QueryEscape(`NoSuchField == "x"`), `NoSuchField`},
		{"/v1/evaluations?job=web&filter=" + url.QueryEscape(`Status == "pending"`), `cannot be combined`},
		{"/v1/job/web/allocations?per_page=x", `"per_page"`},
		{"/v1/job/web/versions?filter=" + url.QueryEscape(`(`), `"filter"`},
	}
	for _, c := range cases {
		resp, body := e.do(http.MethodGet, c.path, nil)
		if resp.StatusCode != 400 || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d %q, want 400 naming %s", c.path, resp.StatusCode, body, c.want)
		}
	}
}

// TestEveryListPaginates: each list route honours per_page and answers
// the next token.
func TestEveryListPaginates(t *testing.T) {
	e := newEnv(t)
	e.registerJobs("web")
	e.registerJobs("web2")
	body := mutate(t, func(j map[string]any) { group(j)["Count"] = 5 })
	e.do(http.MethodPut, "/v1/jobs", body) // a second version of web
	for _, path := range []string{"/v1/jobs", "/v1/evaluations", "/v1/job/web/versions", "/v1/job/web/evaluations"} {
		resp, out := e.do(http.MethodGet, path+"?per_page=1", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, out)
		}
		if resp.Header.Get("X-Nomad-NextToken") == "" {
			t.Errorf("%s?per_page=1: no X-Nomad-NextToken (%s)", path, out)
		}
	}
	var v struct{ Versions []struct{ Version uint64 } }
	_, out := e.do(http.MethodGet, "/v1/job/web/versions?per_page=1&next_token=0", nil)
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Versions) != 1 || v.Versions[0].Version != 0 {
		t.Fatalf("versions from token 0: %s", out)
	}
}

// TestResponseTooLarge: with MaxResponseBytes set (the AWS home), a read
// whose answer would pass it is a 400 that says to page; a page within it
// is answered; gzip counts compressed (and base64-encoded) size.
func TestResponseTooLarge(t *testing.T) {
	e := newEnv(t)
	e.registerJobs("a", "b", "c", "d")
	_, full := e.do(http.MethodGet, "/v1/jobs", nil)
	size := len(full)
	api := httpapi.New(httpapi.Config{State: e.store, Jobs: e.svc, MaxResponseBytes: 1200})
	srv := httptest.NewServer(api)
	defer srv.Close()
	get := func(path string, gz bool) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/v1/jobs", false); code != 400 || !strings.Contains(body, "per_page") {
		t.Fatalf("too large (%d bytes in full): %d %s", size, code, body)
	}
	if code, body := get("/v1/jobs?per_page=1", false); code != 200 {
		t.Fatalf("one page: %d %s", code, body)
	}
	if code, _ := get("/v1/jobs", true); code != 200 {
		t.Fatalf("gzip-compressed, the listing fits: %d", code)
	}
}
