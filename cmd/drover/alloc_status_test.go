package main

import (
	"encoding/json"
	"strings"
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
		"Task Resources:", "/100 MHz", "/32 MiB", "Recent Events:", "Started", "Node Name            = test-node")
	if strings.Contains(r.stdout, "Couldn't retrieve stats") || strings.Contains(r.stdout, "Memory Stats") {
		t.Fatalf("stats:\n%s", r.stdout)
	}
	r = ta.run(t, "alloc", "status", "-stats", a.ID[:6])
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Memory Stats", "RSS", "CPU Stats", "Percent", "Total Ticks")

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
