package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestNamespaces: namespaces are objects: created and updated with a
// description and meta, listed with "default" always present; a job in an
// unknown namespace is a 400; deleting refuses "default" and a namespace
// with live jobs, as Nomad.
func TestNamespaces(t *testing.T) {
	e := newEnv(t)
	if resp, body := e.do(http.MethodPut, "/v1/jobs?namespace=prod", []byte(goodJob)); resp.StatusCode != 400 ||
		!strings.Contains(body, "Job.Namespace") || !strings.Contains(body, "nonexistent namespace") {
		t.Fatalf("job in an unknown namespace: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do(http.MethodPut, "/v1/namespace", []byte(`{"Name":"prod","Description":"production","Meta":{"team":"a"},"Capabilities":null}`)); resp.StatusCode != 200 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	resp, body := e.do(http.MethodGet, "/v1/namespace/prod", nil)
	var ns struct {
		Name, Description string
		Meta              map[string]string
		CreateIndex       uint64
	}
	if err := json.Unmarshal([]byte(body), &ns); err != nil || resp.StatusCode != 200 || ns.Description != "production" || ns.Meta["team"] != "a" || ns.CreateIndex == 0 {
		t.Fatalf("read back: %d %s", resp.StatusCode, body)
	}
	e.do(http.MethodPost, "/v1/namespace/prod", []byte(`{"Description":"prod, v2"}`))
	if _, body := e.do(http.MethodGet, "/v1/namespace/prod", nil); !strings.Contains(body, "prod, v2") {
		t.Fatalf("update: %s", body)
	}
	ids, _ := e.listIDs("/v1/namespaces")
	if strings.Join(ids, ",") != "default,prod" {
		t.Fatalf("list: %v", ids)
	}
	if resp, body := e.do(http.MethodPut, "/v1/jobs?namespace=prod", []byte(goodJob)); resp.StatusCode != 200 {
		t.Fatalf("job in prod: %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do(http.MethodDelete, "/v1/namespace/prod", nil); resp.StatusCode != 400 || !strings.Contains(body, "non-terminal jobs: web") {
		t.Fatalf("delete with a live job: %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.do(http.MethodGet, "/v1/namespace/prod", nil); resp.StatusCode != 200 {
		t.Fatal("a refused delete removed the namespace")
	}
	if resp, body := e.do(http.MethodDelete, "/v1/namespace/default", nil); resp.StatusCode != 400 || !strings.Contains(body, "default") {
		t.Fatalf("delete default: %d %s", resp.StatusCode, body)
	}
	e.do(http.MethodPut, "/v1/namespace/empty", []byte(`{"Name":"empty"}`))
	if resp, body := e.do(http.MethodDelete, "/v1/namespace/empty", nil); resp.StatusCode != 200 {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.do(http.MethodGet, "/v1/namespace/empty", nil); resp.StatusCode != 404 {
		t.Fatalf("deleted namespace: %d", resp.StatusCode)
	}
	if resp, _ := e.do(http.MethodDelete, "/v1/namespace/nope", nil); resp.StatusCode != 404 {
		t.Fatalf("delete unknown: %d", resp.StatusCode)
	}
}

// TestNamespaceBadInput: each bad namespace is a 400 naming the field and
// the rule, and nothing is written.
func TestNamespaceBadInput(t *testing.T) {
	e := newEnv(t)
	cases := []struct{ path, body, want string }{
		{"/v1/namespace", `{"Name":"has space"}`, "Name"},
		{"/v1/namespace", `{"Name":""}`, "Name"},
		{"/v1/namespace", `{"Name":"` + strings.Repeat("a", 129) + `"}`, "Name"},
		{"/v1/namespace", `{"Name":"ok","Description":"` + strings.Repeat("d", 257) + `"}`, "Description"},
		{"/v1/namespace", `{"Name":"ok","Quota":"q1"}`, "Quota"},
		{"/v1/namespace", `{"Name":"ok","Capabilities":{"EnabledTaskDrivers":["docker"]}}`, "Capabilities"},
		{"/v1/namespace", `{"Name":"ok","Descripton":"typo"}`, "Descripton"},
		{"/v1/namespace/ok", `{"Name":"other"}`, "Name"},
		{"/v1/namespace", ``, "body"},
	}
	for _, c := range cases {
		resp, body := e.do(http.MethodPut, c.path, []byte(c.body))
		if resp.StatusCode != 400 || !strings.Contains(body, c.want) {
			t.Errorf("PUT %s %s: %d %q, want 400 naming %s", c.path, c.body, resp.StatusCode, body, c.want)
		}
	}
	if ids, _ := e.listIDs("/v1/namespaces"); len(ids) != 1 {
		t.Fatalf("bad input wrote a namespace: %v", ids)
	}
}
