package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/drover-sched/drover/agent"
)

func withACLs(c *agent.Config) { c.ACLEnabled = true }

var (
	secretLine   = regexp.MustCompile(`Secret ID\s+= ([0-9a-f-]{36})`)
	accessorLine = regexp.MustCompile(`Accessor ID\s+= ([0-9a-f-]{36})`)
	resetIndex   = regexp.MustCompile(`reset index: (\d+)`)
)

func field(t *testing.T, re *regexp.Regexp, s string) string {
	t.Helper()
	m := re.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in:\n%s", re, s)
	}
	return m[1]
}

// bootstrap bootstraps the agent's ACLs and returns the management secret.
func (ta *testAgent) bootstrap(t *testing.T) string {
	t.Helper()
	r := ta.run(t, "acl", "bootstrap")
	mustCode(t, r, 0)
	return field(t, secretLine, r.stdout)
}

// TestACLBootstrap: the first bootstrap prints a management token with its
// secret; a second is refused naming the reset index; writing that index
// into <data-dir>/server/acl-bootstrap-reset allows one more, here with
// the operator's own secret from a file.
func TestACLBootstrap(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t, withACLs)
	r := ta.run(t, "acl", "bootstrap")
	mustCode(t, r, 0)
	mustKV(t, r.stdout, "Name", "Bootstrap Token")
	mustKV(t, r.stdout, "Type", "management")
	mustKV(t, r.stdout, "Policies", "n/a")
	first := field(t, accessorLine, r.stdout)
	field(t, secretLine, r.stdout)
	r = ta.run(t, "acl", "bootstrap")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error bootstrapping: ", "ACL bootstrap already done (reset index: ")
	idx := field(t, resetIndex, r.stderr)
	if err := os.WriteFile(filepath.Join(ta.dir, "server", agent.ACLBootstrapResetFile), []byte(idx+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mine := "3b9f0c62-5b7e-4b8e-8d27-0c6a4c2f1e55"
	r = ta.run(t, "acl", "bootstrap", writeFile(t, "secret", mine+"\n"))
	mustCode(t, r, 0)
	if got := field(t, secretLine, r.stdout); got != mine {
		t.Fatalf("bootstrap with a secret from a file: %s", got)
	}
	if field(t, accessorLine, r.stdout) == first {
		t.Fatal("the reset bootstrap reused the first token")
	}
	r = ta.run(t, "acl", "bootstrap")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Invalid bootstrap reset index")
	if !strings.Contains(ta.run(t, "acl", "token", "self", "-token", mine).stdout, "management") {
		t.Fatal("the reset bootstrap token does not work")
	}
}

// hasKV reports whether out has a "key   = value" line (Nomad's aligned
// key/value output).
func hasKV(out, key, value string) bool {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + ` +=\s?` + regexp.QuoteMeta(value) + `$`).MatchString(out)
}

func mustKV(t *testing.T, out, key, value string) {
	t.Helper()
	if !hasKV(out, key, value) {
		t.Fatalf("output lacks %s = %s:\n%s", key, value, out)
	}
}
