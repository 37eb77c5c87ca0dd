package main

import (
	"strings"
	"testing"
)

// TestACLTokens: create, list, info, self, update and delete; a read-only
// token can list jobs but not run one; a deleted token stops at once.
func TestACLTokens(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t, withACLs)
	root := ta.bootstrap(t)
	mustCode(t, ta.run(t, "acl", "policy", "apply", "-token", root, "readonly",
		writeFile(t, "ro.hcl", `namespace "default" { policy = "read" }`)), 0)

	r := ta.run(t, "acl", "token", "create", "-token", root, "-name", "dashboard", "-policy", "readonly", "-ttl", "1h")
	mustCode(t, r, 0)
	mustKV(t, r.stdout, "Name", "dashboard")
	mustKV(t, r.stdout, "Type", "client")
	mustKV(t, r.stdout, "Policies", "[readonly]")
	if hasKV(r.stdout, "Expiry Time", "<none>") {
		t.Fatalf("a token with -ttl has no expiry:\n%s", r.stdout)
	}
	secret, accessor := field(t, secretLine, r.stdout), field(t, accessorLine, r.stdout)

	r = ta.run(t, "acl", "token", "list", "-token", root)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Bootstrap Token", "dashboard", accessor)
	if strings.Contains(r.stdout, secret) {
		t.Fatal("token list shows a secret")
	}
	r = ta.run(t, "acl", "token", "info", "-token", root, accessor)
	mustCode(t, r, 0)
	mustKV(t, r.stdout, "Secret ID", "<hidden: shown only at creation>")
	mustKV(t, r.stdout, "Name", "dashboard")
	r = ta.run(t, "acl", "token", "self", "-token", secret)
	mustCode(t, r, 0)
	mustKV(t, r.stdout, "Secret ID", secret)
	mustKV(t, r.stdout, "Accessor ID", accessor)

	// A read-only token lists but cannot run a job.
	job := writeFile(t, "job.json", serviceJobJSON("web", 1))
	mustCode(t, ta.run(t, "job", "run", "-token", root, "-detach", job), 0)
	r = ta.run(t, "job", "status", "-token", secret)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "web")
	r = ta.run(t, "job", "run", "-token", secret, "-detach", job)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Permission denied")
	r = ta.run(t, "acl", "token", "create", "-token", secret, "-name", "escalate", "-type", "management")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Permission denied")

	r = ta.run(t, "acl", "token", "update", "-token", root, "-name", "dash2", accessor)
	mustCode(t, r, 0)
	mustKV(t, r.stdout, "Name", "dash2")
	mustKV(t, r.stdout, "Policies", "[readonly]")
	r = ta.run(t, "acl", "token", "create", "-token", root, "-policy", "readonly", "-ttl", "48h")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "ExpirationTTL: expiration cannot be more than 24h0m0s in the future")

	mustContain(t, ta.run(t, "acl", "token", "delete", "-token", root, accessor).stdout, "Token "+accessor+" successfully deleted")
	r = ta.run(t, "job", "status", "-token", secret)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "ACL token not found")
}

// TestACLTokenFromEnvironment: NOMAD_TOKEN and DROVER_TOKEN carry the
// token (DROVER_TOKEN first), as -token does.
func TestACLTokenFromEnvironment(t *testing.T) {
	ta := newTestAgent(t, withACLs)
	root := ta.bootstrap(t)
	r := ta.run(t, "acl", "token", "create", "-token", root, "-name", "ci", "-type", "management")
	ci := field(t, secretLine, r.stdout)
	t.Setenv("NOMAD_TOKEN", root)
	mustKV(t, ta.run(t, "acl", "token", "self").stdout, "Name", "Bootstrap Token")
	t.Setenv("DROVER_TOKEN", ci)
	mustKV(t, ta.run(t, "acl", "token", "self").stdout, "Name", "ci")
	t.Setenv("DROVER_TOKEN", "")
	t.Setenv("NOMAD_TOKEN", "")
	r = ta.run(t, "acl", "token", "self")
	mustCode(t, r, 0)
	mustKV(t, r.stdout, "Name", "Anonymous Token")
	mustCode(t, ta.run(t, "job", "status"), 1)
}
