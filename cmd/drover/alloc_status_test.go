package main

import (
	"encoding/json"
	"fmt"
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

// TestAllocStatusAddresses: the alloc's group network ports are listed as
// Nomad lists them, under "Allocation Addresses": label, dynamic or
// static, host address and the port it is mapped to inside the task.
func TestAllocStatusAddresses(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	job := `{"Job": {"ID": "addrs", "Type": "service", "TaskGroups": [{"Name": "web", "Count": 1,
		"Networks": [{"Mode": "host", "ReservedPorts": [{"Label": "admin", "Value": 28761}], "DynamicPorts": [{"Label": "http", "To": 8080}]}],
		"Tasks": [{"Name": "server", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["300"]},
		"Resources": {"CPU": 100, "MemoryMB": 32}, "KillTimeout": 1000000000}]}]}}`
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "a.json", job)), 0)
	a := ta.allocsOf(t, "addrs", 1)[0]
	full, _, err := ta.client.Allocations().Info(a.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	var http int
	for _, p := range full.AllocatedResources.Shared.Ports {
		if p.Label == "http" {
			http = p.Value
		}
	}
	if http == 0 {
		t.Fatalf("the alloc holds no http port: %+v", full.AllocatedResources.Shared)
	}
	r := ta.run(t, "alloc", "status", a.ID)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Allocation Addresses (mode = "host"):`, "Label", "Dynamic", "Address",
		"*admin", "127.0.0.1:28761", fmt.Sprintf("127.0.0.1:%d -> 8080", http))
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "*admin") && !strings.Contains(line, " no ") {
			t.Fatalf("the static port is not shown as static: %q", line)
		}
		if strings.HasPrefix(line, "*http") && !strings.Contains(line, " yes ") {
			t.Fatalf("the dynamic port is not shown as dynamic: %q", line)
		}
	}
	// An alloc without a network block shows no addresses.
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "b.json", serviceJobJSON("plain", 1))), 0)
	b := ta.allocsOf(t, "plain", 1)[0]
	r = ta.run(t, "alloc", "status", b.ID)
	mustCode(t, r, 0)
	if strings.Contains(r.stdout, "Allocation Addresses") {
		t.Fatalf("addresses of an alloc without ports:\n%s", r.stdout)
	}
}
