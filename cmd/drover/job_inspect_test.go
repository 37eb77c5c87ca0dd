package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestJobInspect(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "i.json", serviceJobJSON("inspected", 1))), 0)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "i2.json", serviceJobJSON("inspected", 2))), 0)

	r := ta.run(t, "job", "inspect", "insp")
	mustCode(t, r, 0)
	var body struct {
		Job struct {
			ID         string
			Version    int
			TaskGroups []struct{ Count int }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &body); err != nil || body.Job.ID != "inspected" || body.Job.Version != 1 || body.Job.TaskGroups[0].Count != 2 {
		t.Fatalf("inspect: %v\n%s", err, r.stdout)
	}
	// Its output registers the same job again.
	again := writeFile(t, "again.json", r.stdout)
	mustCode(t, ta.run(t, "job", "run", "-detach", again), 0)

	r = ta.run(t, "job", "inspect", "-version", "0", "-t", "{{(index .TaskGroups 0).Count}}", "inspected")
	mustCode(t, r, 0)
	if strings.TrimSpace(r.stdout) != "1" {
		t.Fatalf("-version 0 -t: %q", r.stdout)
	}
	// A JSON registration kept no source.
	r = ta.run(t, "job", "inspect", "-hcl", "inspected")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "without its source")
	r = ta.run(t, "job", "inspect", "-version", "9", "inspected")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "has no version 9")
}
