package main

import (
	"strings"
	"testing"
)

// TestNamespaces: apply, list, status and delete; a job in another
// namespace is found with -namespace '*', and lists spanning namespaces
// show a Namespace column.
func TestNamespaces(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	r := ta.run(t, "namespace", "apply", "-description", "production", "-meta", "team=web", "prod")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Successfully applied namespace "prod"!`)
	r = ta.run(t, "namespace", "list")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "default", "prod", "production")
	r = ta.run(t, "namespace", "status", "prod")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Name         = prod", "Description  = production", "team  = web")
	// An update keeps what it does not change.
	mustCode(t, ta.run(t, "namespace", "apply", "-meta", "team=api", "prod"), 0)
	r = ta.run(t, "namespace", "status", "-json", "prod")
	mustContain(t, r.stdout, `"Description": "production"`, `"team": "api"`)

	mustCode(t, ta.run(t, "job", "run", writeFile(t, "d.json", serviceJobJSON("here", 1))), 0)
	mustCode(t, ta.run(t, "job", "run", "-namespace", "prod", writeFile(t, "p.json", serviceJobJSON("there", 1))), 0)
	r = ta.run(t, "job", "status")
	if strings.Contains(r.stdout, "there") {
		t.Fatalf("the default namespace lists prod's job:\n%s", r.stdout)
	}
	r = ta.run(t, "job", "status", "-namespace", "*")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Namespace", "prod", "default", "here", "there")
	r = ta.run(t, "job", "status", "-namespace", "*", "there")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "ID           = there", "Namespace    = prod")
	r = ta.run(t, "job", "status", "there")
	mustCode(t, r, 1)
	r = ta.run(t, "eval", "list", "-namespace", "*")
	mustContain(t, r.stdout, "Namespace", "prod")

	r = ta.run(t, "namespace", "delete", "prod")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error deleting namespace: ")
	mustCode(t, ta.run(t, "job", "stop", "-purge", "-namespace", "prod", "there"), 0)
	r = ta.run(t, "namespace", "delete", "prod")
	if r.code != 0 {
		// The purge completes once the allocs are stopped.
		waitFor(t, 20e9, "the namespace to empty", func() bool { return ta.run(t, "namespace", "delete", "prod").code == 0 })
	}
	r = ta.run(t, "namespace", "status", "prod")
	mustCode(t, r, 1)
	r = ta.run(t, "namespace", "delete", "default")
	mustCode(t, r, 1)
}
