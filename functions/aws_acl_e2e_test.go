package functions_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/acl"
)

// checkACLsOnAWS runs through the gateway (API Gateway's part: the token
// authorizer, its answers cached per token) to the api function (the
// capability table): the deploy-time token is a management token; the
// bootstrap works once and its stored token passes the authorizer; a
// read-only token lists but cannot submit; a revoked token is refused at
// once, while the gateway still serves the authorizer's cached allow (the
// api function reads the token again on every request).
func checkACLsOnAWS(t *testing.T, gw string, root *api.Client) {
	t.Helper()
	self, _, err := root.ACLTokens().Self(nil)
	if err != nil || self.Type != "management" || self.AccessorID != acl.DeployTokenAccessor {
		t.Fatalf("the deploy-time token: %+v %v", self, err)
	}
	boot, _, err := root.ACLTokens().Bootstrap(nil)
	if err != nil || boot.SecretID == "" {
		t.Fatalf("bootstrap on AWS: %+v %v", boot, err)
	}
	if _, _, err := root.ACLTokens().Bootstrap(nil); err == nil || !strings.Contains(err.Error(), "ACL bootstrap already done") {
		t.Fatalf("second bootstrap: %v", err)
	}
	stored, err := api.NewClient(&api.Config{Address: gw, SecretID: boot.SecretID})
	if err != nil {
		t.Fatal(err)
	}
	if s, _, err := stored.ACLTokens().Self(nil); err != nil || s.AccessorID != boot.AccessorID || s.SecretID != boot.SecretID {
		t.Fatalf("the bootstrapped token through the authorizer: %+v %v", s, err)
	}
	if _, err := root.ACLPolicies().Upsert(&api.ACLPolicy{Name: "readonly", Rules: `namespace "*" { policy = "read" }`}, nil); err != nil {
		t.Fatal(err)
	}
	ro, _, err := root.ACLTokens().Create(&api.ACLToken{Name: "dashboard", Type: "client", Policies: []string{"readonly"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(method, gw+path, strings.NewReader(body))
		req.Header.Set("X-Nomad-Token", ro.SecretID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b)), resp.Header.Get("X-Drover-Gateway-Authorizer")
	}
	if code, out, via := call("GET", "/v1/jobs", ""); code != 200 || via != "invoked" {
		t.Fatalf("read-only list: %d %s (authorizer %s)", code, out, via)
	}
	if code, out, via := call("PUT", "/v1/jobs", `{"Job": {"ID": "nope", "Type": "batch", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}}`); code != 403 || out != "Permission denied" || via != "cached" {
		t.Fatalf("read-only submit: %d %q (authorizer %s)", code, out, via)
	}
	if _, err := root.ACLTokens().Delete(ro.AccessorID, nil); err != nil {
		t.Fatal(err)
	}
	if code, out, via := call("GET", "/v1/jobs", ""); code != 403 || out != "ACL token not found" || via != "cached" {
		t.Fatalf("revoked token within the authorizer's cache TTL: %d %q (authorizer %s)", code, out, via)
	}
}
