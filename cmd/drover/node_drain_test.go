package main

import (
	"testing"
)

// TestNodeDrain: -enable sets the drain and monitors it until every
// allocation has left the node; -disable unsets it; conflicting flags are
// refused.
func TestNodeDrain(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "d.json", serviceJobJSON("drained", 1))), 0)
	nodes, _, _ := ta.client.Nodes().List(nil)
	id := nodes[0].ID

	r := ta.run(t, "node", "drain", "-enable", "-force", "-no-deadline", "-yes", id)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "at most one")
	r = ta.run(t, "node", "drain", id)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Give exactly one of -enable and -disable")

	r = ta.run(t, "node", "drain", "-enable", "-force", "-yes", id[:8])
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Node "`+id+`" drain strategy set`, "Ctrl-C to stop monitoring", "have stopped", "Drain complete for node "+id)
	node, _, err := ta.client.Nodes().Info(id, nil)
	if err != nil || node.DrainStrategy != nil || node.SchedulingEligibility != "ineligible" {
		t.Fatalf("after the monitored drain: %v %+v", err, node)
	}
	allocs, _, _ := ta.client.Nodes().Allocations(id, nil)
	for _, a := range allocs {
		if a.ClientStatus == "running" {
			t.Fatalf("alloc %s still running after the drain", a.ID)
		}
	}

	r = ta.run(t, "node", "drain", "-disable", id)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Node "`+id+`" drain strategy unset`)
	node, _, _ = ta.client.Nodes().Info(id, nil)
	if node.SchedulingEligibility != "eligible" {
		t.Fatalf("-disable left the node %s", node.SchedulingEligibility)
	}

	r = ta.run(t, "node", "drain", "-enable", "-detach", id)
	mustCode(t, r, 0)
	if node, _, _ = ta.client.Nodes().Info(id, nil); node.DrainStrategy == nil {
		t.Fatal("-detach did not set the drain")
	}
	mustContain(t, r.stdout, "drain strategy set")
}
