package main

import (
	"encoding/json"
	"testing"
)

func TestAllocStatus(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "a.json", serviceJobJSON("allocs", 1))), 0)
	a := ta.allocsOf(t, "allocs", 1)[0]

	// By prefix; the allocation's own ID is echoed in full.
	r := ta.run(t, "alloc", "status", a.ID[:6])
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "ID                   = "+a.ID, "Client Status        = running", `Task "server" is "running"`,
		"Task Resources:", "100 MHz", "Recent Events:", "Started", "Node Name            = test-node")

	r = ta.run(t, "alloc", "status", "-json", a.ID)
	mustCode(t, r, 0)
	var got struct{ ID, ClientStatus string }
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.ID != a.ID {
		t.Fatalf("-json: %v\n%s", err, r.stdout)
	}
	r = ta.run(t, "alloc", "status", "-t", "{{.TaskGroup}}", a.ID)
	mustCode(t, r, 0)
	if r.stdout != "web\n" {
		t.Fatalf("-t: %q", r.stdout)
	}

	r = ta.run(t, "alloc", "status", "zz")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, `Error: no allocation with prefix or id "zz" found`)
	r = ta.run(t, "alloc", "status", "z")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error: allocation identifier must contain at least two characters")
}
