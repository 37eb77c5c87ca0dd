package main

import "testing"

func TestNodeEligibility(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	nodes, _, _ := ta.client.Nodes().List(nil)
	id := nodes[0].ID
	r := ta.run(t, "node", "eligibility", "-disable", id[:6])
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Node "`+id+`" scheduling eligibility set: ineligible for scheduling`)
	if n, _, _ := ta.client.Nodes().Info(id, nil); n.SchedulingEligibility != "ineligible" {
		t.Fatal("not ineligible")
	}
	r = ta.run(t, "node", "eligibility", "-enable", id)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "eligible for scheduling")
	r = ta.run(t, "node", "eligibility", "-enable", "-disable", id)
	mustCode(t, r, 1)
}
