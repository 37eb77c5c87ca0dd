package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func TestJobStatus(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	r := ta.run(t, "job", "status")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "No running jobs")

	mustCode(t, ta.run(t, "job", "run", writeFile(t, "hello.json", serviceJobJSON("hello", 2))), 0)
	r = ta.run(t, "job", "status")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "ID", "hello", "service", "running")
	if strings.Contains(r.stdout, "Namespace") {
		t.Fatalf("one namespace shown, yet a Namespace column:\n%s", r.stdout)
	}

	// One job, by a unique prefix.
	r = ta.run(t, "job", "status", "hel")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "ID           = hello", "Status       = running", "Summary", "Latest Deployment", "Allocations")
	if !regexp.MustCompile(`web\s+0\s+0\s+2\s+0\s+0\s+0\s+0`).MatchString(r.stdout) {
		t.Fatalf("summary row:\n%s", r.stdout)
	}

	// -json and -t.
	r = ta.run(t, "job", "status", "-json", "hello")
	mustCode(t, r, 0)
	var job struct{ ID, Status string }
	if err := json.Unmarshal([]byte(r.stdout), &job); err != nil || job.ID != "hello" {
		t.Fatalf("-json: %v\n%s", err, r.stdout)
	}
	r = ta.run(t, "job", "status", "-t", "{{range .}}{{.ID}}={{.Status}};{{end}}")
	mustCode(t, r, 0)
	if strings.TrimSpace(r.stdout) != "hello=running;" {
		t.Fatalf("-t on the list: %q", r.stdout)
	}
	r = ta.run(t, "job", "status", "-t", "{{.Nope}}", "hello")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error formatting output: template: output:1:2: ")
	if strings.Contains(r.stderr, "template: template:") {
		t.Fatalf("doubled prefix: %s", r.stderr)
	}
	r = ta.run(t, "job", "status", "-json", "-t", "{{.ID}}", "hello")
	mustCode(t, r, 1)

	// Not found, with Nomad's wording and the colon.
	r = ta.run(t, "job", "status", "nope")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, `Error querying job: no job with prefix or id "nope" found`)
}
