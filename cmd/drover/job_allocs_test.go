package main

import (
	"encoding/json"
	"testing"
)

func TestJobAllocs(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "a.json", serviceJobJSON("listed", 2))), 0)
	allocs := ta.allocsOf(t, "listed", 2)
	r := ta.run(t, "job", "allocs", "list")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Task Group", "Desired", allocs[0].ID[:8], allocs[1].ID[:8], "web", "run")
	r = ta.run(t, "job", "allocs", "-verbose", "listed")
	mustContain(t, r.stdout, allocs[0].ID, allocs[0].NodeID)
	r = ta.run(t, "job", "allocs", "-json", "listed")
	mustCode(t, r, 0)
	var got []struct{ ID string }
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 2 {
		t.Fatalf("-json: %v\n%s", err, r.stdout)
	}
	mustCode(t, ta.run(t, "job", "allocs", "nope"), 1)
}
