package main

import (
	"regexp"
	"testing"
)

func TestEvalStatus(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	r := ta.run(t, "job", "run", writeFile(t, "e.json", serviceJobJSON("evals", 1)))
	mustCode(t, r, 0)
	id := regexp.MustCompile(`Monitoring evaluation "([0-9a-f]{8})"`).FindStringSubmatch(r.stdout)[1]
	r = ta.run(t, "eval", "status", id)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Status              = complete", "TriggeredBy         = job-register", "Job ID              = evals",
		"Placement Failures  = false")
	r = ta.run(t, "eval", "status", "-t", "{{.JobID}}/{{.Status}}", id)
	mustCode(t, r, 0)
	if r.stdout != "evals/complete\n" {
		t.Fatalf("-t: %q", r.stdout)
	}

	// Placement failures are explained.
	huge := writeFile(t, "huge.json", `{"ID": "huge", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec",
		"Config": {"command": "/bin/true"}, "Resources": {"CPU": 100000000, "MemoryMB": 64}}]}]}`)
	r = ta.run(t, "job", "run", huge)
	mustCode(t, r, 2)
	id = regexp.MustCompile(`Monitoring evaluation "([0-9a-f]{8})"`).FindStringSubmatch(r.stdout)[1]
	r = ta.run(t, "eval", "status", id)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Placement Failures  = true", "Failed Placements", `Task Group "g" (failed to place 1 allocation)`,
		`* Dimension "cpu" exhausted on 1 node`, "Blocked Eval")
}
