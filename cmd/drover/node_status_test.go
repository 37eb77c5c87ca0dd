package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNodeStatus(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "n.json", serviceJobJSON("nodes", 1))), 0)
	nodes, _, err := ta.client.Nodes().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	id := nodes[0].ID
	r := ta.run(t, "node", "status")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Node Pool", "dc1", "test-node", "ready", "eligible", id[:8])

	// By prefix (Nomad's CLI takes node ID prefixes); the full ID echoed.
	r = ta.run(t, "node", "status", id[:4])
	mustCode(t, r, 0)
	// The dev agent enables raw_exec, and exec where it is healthy (root).
	mustContain(t, r.stdout, "ID           = "+id, "Drivers      = ", "raw_exec", "Allocated Resources", "100/", "nodes",
		"Host Resource Utilization")
	if strings.Contains(r.stdout, "Couldn't retrieve") || strings.Contains(r.stdout, "CPU Stats") {
		t.Fatalf("host stats without -stats:\n%s", r.stdout)
	}
	r = ta.run(t, "node", "status", "-stats", id[:4])
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Host Resource Utilization", "CPU Stats", "cpu0", "Memory Stats", "Total", "Disk Stats", "Mountpoint", "Uptime = ")

	r = ta.run(t, "node", "status", "-json")
	mustCode(t, r, 0)
	var list []struct{ ID string }
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("-json: %v\n%s", err, r.stdout)
	}
	r = ta.run(t, "node", "status", "ffffffff")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, `Error: no node with prefix or id "ffffffff" found`)

	// -self: the node of the agent asked (Nomad's CLI has it).
	r = ta.run(t, "node", "status", "-self")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "ID           = "+id, "Allocated Resources")
	r = ta.run(t, "node", "status", "-self", id[:4])
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "-self takes no node argument")
}

// TestNodeStatusSelfOnServerOnlyAgent: -self against an agent without a
// client says so (the agent here answers /v1/agent/self as a server-only
// drover agent does: no client node ID).
func TestNodeStatusSelfOnServerOnlyAgent(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/agent/self" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"config":{},"member":{},"stats":{"nomad":{"server":"true"}}}`))
	}))
	defer srv.Close()
	r := runCmd(t, "node", "status", "-address", srv.URL, "-self")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error determining the local node", "runs no client")
}
