package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/acl"
	"github.com/drover-sched/drover/httpapi"
	"github.com/drover-sched/drover/storage/embedded"
)

// withACL turns ACLs and node secrets on.
func withACL(cfg *httpapi.Config, store *embedded.Store) {
	cfg.ACL = &acl.Service{Store: store}
	cfg.NodeAgents = cfg.Jobs.(httpapi.NodeAgents)
	cfg.NodeSecrets = store
}

func (e *env) doAs(token, method, path string, body []byte) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Nomad-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func (e *env) clientAs(token string) *api.Client {
	c := e.client()
	c.SetSecretID(token)
	return c
}

// TestACLWithNomadsClient: bootstrap, policies and tokens through Nomad's
// Go client, with Nomad's shapes: the bootstrap and a new token show their
// secret once; token self echoes the caller's; a management token reading
// another token gets no secret (drover stores only its hash).
func TestACLWithNomadsClient(t *testing.T) {
	e := newEnv(t, withACL)
	anon := e.client()
	boot, _, err := anon.ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatal(err)
	}
	if boot.Type != "management" || boot.SecretID == "" || boot.Name != "Bootstrap Token" {
		t.Fatalf("bootstrap token: %+v", boot)
	}
	if _, _, err := anon.ACLTokens().Bootstrap(nil); err == nil || !strings.Contains(err.Error(), "ACL bootstrap already done (reset index: ") {
		t.Fatalf("second bootstrap: %v", err)
	}
	root := e.clientAs(boot.SecretID)
	if _, err := root.ACLPolicies().Upsert(&api.ACLPolicy{Name: "readonly", Description: "reads everything",
		Rules: `namespace "*" { policy = "read" }` + "\n" + `node { policy = "read" }`}, nil); err != nil {
		t.Fatal(err)
	}
	pol, _, err := root.ACLPolicies().Info("readonly", nil)
	if err != nil || pol.Description != "reads everything" || !strings.Contains(pol.Rules, `policy = "read"`) {
		t.Fatalf("policy info: %+v %v", pol, err)
	}
	tok, _, err := root.ACLTokens().Create(&api.ACLToken{Name: "dashboard", Type: "client", Policies: []string{"readonly"},
		ExpirationTTL: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok.SecretID == "" || tok.AccessorID == "" || tok.ExpirationTime == nil || tok.ExpirationTTL != time.Hour {
		t.Fatalf("created token: %+v", tok)
	}
	dash := e.clientAs(tok.SecretID)
	self, _, err := dash.ACLTokens().Self(nil)
	if err != nil || self.AccessorID != tok.AccessorID || self.SecretID != tok.SecretID || self.Policies[0] != "readonly" {
		t.Fatalf("token self: %+v %v", self, err)
	}
	info, _, err := root.ACLTokens().Info(tok.AccessorID, nil)
	if err != nil || info.SecretID != "" || info.Name != "dashboard" {
		t.Fatalf("management reads the token without its secret: %+v %v", info, err)
	}
	list, _, err := root.ACLTokens().List(nil)
	if err != nil || len(list) != 2 {
		t.Fatalf("token list: %+v %v", list, err)
	}
	if _, _, err := dash.ACLTokens().List(nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("a client token lists tokens: %v", err)
	}
	pols, _, err := dash.ACLPolicies().List(nil)
	if err != nil || len(pols) != 1 || pols[0].Name != "readonly" {
		t.Fatalf("a client token's policy list: %+v %v", pols, err)
	}
	upd, _, err := root.ACLTokens().Update(&api.ACLToken{AccessorID: tok.AccessorID, Name: "dash2", Type: "client",
		Policies: []string{"readonly"}, ExpirationTTL: time.Hour}, nil)
	if err != nil || upd.Name != "dash2" {
		t.Fatalf("token update: %+v %v", upd, err)
	}
	if _, err := root.ACLTokens().Delete(tok.AccessorID, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dash.ACLTokens().Self(nil); err == nil || !strings.Contains(err.Error(), "ACL token not found") {
		t.Fatalf("a deleted token: %v", err)
	}
	if _, err := root.ACLPolicies().Delete("readonly", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := root.ACLPolicies().Info("readonly", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a deleted policy: %v", err)
	}
}

// TestACLEnforcement: a read-only token can list but not submit; a
// namespace-scoped token sees only its namespace; a job spec is readable
// only with read-job; anonymous requests get the anonymous policy; a
// revoked token stops at once; bad tokens and policies are 400/403 with a
// clear message and change nothing.
func TestACLEnforcement(t *testing.T) {
	e := newEnv(t, withACL)
	code, out := e.doAs("", "POST", "/v1/acl/bootstrap", nil)
	if code != 200 {
		t.Fatalf("bootstrap: %d %s", code, out)
	}
	var boot httpapi.ACLTokenResponse
	_ = json.Unmarshal([]byte(out), &boot)
	root := boot.SecretID
	mustDo := func(token, method, path, body string, want int) string {
		t.Helper()
		code, out := e.doAs(token, method, path, []byte(body))
		if code != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, code, out, want)
		}
		return out
	}
	policy := func(name, rules string) {
		t.Helper()
		b, _ := json.Marshal(map[string]string{"Name": name, "Rules": rules})
		mustDo(root, "PUT", "/v1/acl/policy/"+name, string(b), 200)
	}
	token := func(policies ...string) (secret, accessor string) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"Name": "t", "Type": "client", "Policies": policies})
		var tok httpapi.ACLTokenResponse
		_ = json.Unmarshal([]byte(mustDo(root, "PUT", "/v1/acl/token", string(b), 200)), &tok)
		return tok.SecretID, tok.AccessorID
	}
	mustDo(root, "PUT", "/v1/namespace/team", `{"Name": "team"}`, 200)
	mustDo(root, "PUT", "/v1/jobs", goodJob, 200)
	teamJob := strings.Replace(goodJob, `"ID": "web", "Name": "web"`, `"ID": "api", "Name": "api", "Namespace": "team"`, 1)
	mustDo(root, "PUT", "/v1/jobs", teamJob, 200)

	policy("readonly", `namespace "*" { policy = "read" }`)
	policy("team", `namespace "team" { policy = "write" }`)
	policy("lister", `namespace "default" { capabilities = ["list-jobs"] }`)
	ro, roAccessor := token("readonly")
	team, _ := token("team")
	lister, _ := token("lister")

	// Read-only: lists, reads, cannot submit.
	if out := mustDo(ro, "GET", "/v1/jobs?namespace=*", "", 200); !strings.Contains(out, `"ID":"web"`) || !strings.Contains(out, `"ID":"api"`) {
		t.Fatalf("read-only list: %s", out)
	}
	if out := mustDo(ro, "PUT", "/v1/jobs", goodJob, 403); out != "Permission denied" {
		t.Fatalf("read-only submit: %q", out)
	}
	mustDo(ro, "DELETE", "/v1/job/web", "", 403)

	// Namespace-scoped: only its namespace, in lists and reads.
	out = mustDo(team, "GET", "/v1/jobs?namespace=*", "", 200)
	if !strings.Contains(out, `"ID":"api"`) || strings.Contains(out, `"ID":"web"`) {
		t.Fatalf("a team token lists other namespaces' jobs: %s", out)
	}
	if out := mustDo(team, "GET", "/v1/evaluations?namespace=*", "", 200); strings.Contains(out, `"JobID":"web"`) || !strings.Contains(out, `"JobID":"api"`) {
		t.Fatalf("a team token lists other namespaces' evaluations: %s", out)
	}
	mustDo(team, "GET", "/v1/jobs", "", 403) // the default namespace
	mustDo(team, "GET", "/v1/job/web", "", 403)
	mustDo(team, "GET", "/v1/job/api?namespace=team", "", 200)
	mustDo(team, "PUT", "/v1/jobs", strings.Replace(teamJob, `"Count": 2`, `"Count": 1`, 1), 200)
	mustDo(team, "PUT", "/v1/jobs", goodJob, 403) // a job in default
	if out := mustDo(team, "GET", "/v1/namespaces", "", 200); strings.Contains(out, `"Name":"default"`) || !strings.Contains(out, `"Name":"team"`) {
		t.Fatalf("a team token's namespace list: %s", out)
	}

	// Scaling policies: list-scaling-policies, or list-jobs and read-job
	// together, as Nomad.
	policy("jobreader", `namespace "default" { capabilities = ["list-jobs", "read-job"] }`)
	jobReader, _ := token("jobreader")
	mustDo(jobReader, "GET", "/v1/scaling/policies", "", 200)
	mustDo(lister, "GET", "/v1/scaling/policies", "", 403)

	// list-jobs alone: the list, not the spec (env, templates).
	mustDo(lister, "GET", "/v1/jobs", "", 200)
	mustDo(lister, "GET", "/v1/job/web", "", 403)
	mustDo(lister, "GET", "/v1/job/web/versions", "", 403)

	// Anonymous: nothing, then the anonymous policy.
	if out := mustDo("", "GET", "/v1/jobs", "", 403); out != "Permission denied" {
		t.Fatalf("anonymous: %q", out)
	}
	policy("anonymous", `namespace "default" { policy = "read" }`)
	mustDo("", "GET", "/v1/jobs", "", 200)
	mustDo("", "PUT", "/v1/jobs", goodJob, 403)

	// Bad tokens: 403 naming why.
	if out := mustDo("5f3f8a4e-0000-4000-8000-000000000000", "GET", "/v1/jobs", "", 403); out != "ACL token not found" {
		t.Fatalf("unknown token: %q", out)
	}
	mustDo(root, "DELETE", "/v1/acl/token/"+roAccessor, "", 200)
	if out := mustDo(ro, "GET", "/v1/jobs", "", 403); out != "ACL token not found" {
		t.Fatalf("revoked token: %q", out)
	}

	// Bad policies and tokens: 400 naming the field and the position;
	// nothing written.
	idx, _ := e.store.Index(context.Background(), "acl_policy")
	b, _ := json.Marshal(map[string]string{"Name": "broken", "Rules": "namespace \"default\" {\n  policy = \"raed\"\n}"})
	out = mustDo(root, "PUT", "/v1/acl/policy/broken", string(b), 400)
	if !strings.Contains(out, "Rules: line 2, column 12:") || !strings.Contains(out, `"raed"`) {
		t.Fatalf("bad policy: %q", out)
	}
	mustDo(root, "PUT", "/v1/acl/policy/other", `{"Name": "mismatch", "Rules": "node { policy = \"read\" }"}`, 400)
	mustDo(root, "PUT", "/v1/acl/token", `{"Type": "client"}`, 400)
	mustDo(team, "PUT", "/v1/acl/policy/x", `{"Name": "x", "Rules": "node { policy = \"write\" }"}`, 403)
	mustDo(root, "GET", "/v1/acl/policy/broken", "", 404)
	if after, _ := e.store.Index(context.Background(), "acl_policy"); after != idx {
		t.Fatalf("refused policies moved the policy index %d → %d", idx, after)
	}
}

// TestACLDisabled: without ACLs every request is allowed and the ACL
// routes say ACLs are off, as Nomad.
func TestACLDisabled(t *testing.T) {
	e := newEnv(t)
	if code, out := e.doAs("", "POST", "/v1/acl/bootstrap", nil); code != 400 || out != "ACL support disabled" {
		t.Fatalf("bootstrap without ACLs: %d %q", code, out)
	}
	if code, _ := e.doAs("whatever", "PUT", "/v1/jobs", []byte(goodJob)); code != 200 {
		t.Fatalf("a job without ACLs: %d", code)
	}
}

// TestNodeSecrets: a node registers with its secret and every later
// node-agent request must present it; another secret, none, or a node
// never registered is refused; the node's secret never appears in the
// API.
func TestNodeSecrets(t *testing.T) {
	e := newEnv(t, withACL)
	const secret, other = "node-secret-1", "node-secret-2"
	node := `{"Node": {"ID": "n1", "Name": "n1", "Datacenter": "dc1", "NodeResources": {"Cpu": {"CpuShares": 1000}, "Memory": {"MemoryMB": 1024}}}}`
	if code, out := e.doAs("", "PUT", "/v1/nodeagent/register", []byte(node)); code != 403 || !strings.Contains(out, "secret is required") {
		t.Fatalf("registration without a secret: %d %s", code, out)
	}
	if code, out := e.doAs(secret, "PUT", "/v1/nodeagent/register", []byte(node)); code != 200 {
		t.Fatalf("registration: %d %s", code, out)
	}
	if code, out := e.doAs(secret, "PUT", "/v1/nodeagent/register", []byte(node)); code != 200 {
		t.Fatalf("re-registration with the same secret: %d %s", code, out)
	}
	if code, out := e.doAs(other, "PUT", "/v1/nodeagent/register", []byte(node)); code != 403 || !strings.Contains(out, "registered with another secret") {
		t.Fatalf("registration as n1 with another secret: %d %s", code, out)
	}
	for _, path := range []string{"/v1/nodeagent/n1/assignments", "/v1/nodeagent/n1/assignment-index"} {
		if code, _ := e.doAs(secret, "GET", path, nil); code != 200 {
			t.Fatalf("%s with the node's secret: %d", path, code)
		}
		if code, out := e.doAs(other, "GET", path, nil); code != 403 || !strings.Contains(out, "wrong node secret") {
			t.Fatalf("%s with another node's secret: %d %s", path, code, out)
		}
	}
	if code, out := e.doAs(secret, "PUT", "/v1/nodeagent/n2/heartbeat", nil); code != 403 || !strings.Contains(out, "not registered") {
		t.Fatalf("a node never registered: %d %s", code, out)
	}
	code, out := e.doAs("", "POST", "/v1/acl/bootstrap", nil)
	var boot httpapi.ACLTokenResponse
	_ = json.Unmarshal([]byte(out), &boot)
	code, out = e.doAs(boot.SecretID, "GET", "/v1/node/n1", nil)
	if code != 200 || strings.Contains(out, secret) || strings.Contains(out, acl.Hash(secret)) || strings.Contains(out, "SecretID") {
		t.Fatalf("GET /v1/node/n1 shows the node's secret: %d %s", code, out)
	}
}
