package placement

import (
	"fmt"
	"math"
	"testing"

	"github.com/drover-sched/drover/structs"
)

const prefEval = "2b9d64f1-7c1a-4d0e-8f3b-5a6c7d8e9f01"

// prefNodes builds n nodes named prefix-i with room for slots allocs of
// 100 MHz / 100 MiB each, set up by with.
func prefNodes(prefix string, n, slots int, with func(*structs.Node)) []NodeCandidate {
	var out []NodeCandidate
	for i := range n {
		nd := node(fmt.Sprintf("%s-%02d", prefix, i), int64(slots)*100, int64(slots)*100, nil)
		if with != nil {
			with(nd)
		}
		out = append(out, NodeCandidate{Node: nd})
	}
	return out
}

func inDC(dc string) func(*structs.Node) { return func(n *structs.Node) { n.Datacenter = dc } }
func ofClass(c string) func(*structs.Node) {
	return func(n *structs.Node) { n.NodeClass = c }
}
func onRack(r string) func(*structs.Node) {
	return func(n *structs.Node) { n.Meta = map[string]string{"rack": r} }
}

// tally places count allocs of the job's first group and counts them per
// value of attr on the chosen nodes ("" for a failed placement).
func tally(t *testing.T, p *Placer, j *structs.Job, count int, attr string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for range count {
		n, _ := p.Place(j.TaskGroups[0], "", nil)
		if n == nil {
			out[""]++
			continue
		}
		v, _ := resolveTarget(attr, n)
		out[v]++
	}
	return out
}

func sameCounts(got, want map[string]int) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// Nomad's documented spread example: count 10 over dc1/dc2 with targets
// 70% and 30% places 7 and 3, whatever the eval's node order.
func TestSpreadTargetsPercentages(t *testing.T) {
	for _, eval := range []string{prefEval, "a", "b", "c"} {
		j := job(10, 100, 100)
		j.Datacenters = []string{"dc1", "dc2"}
		j.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100,
			SpreadTarget: []*structs.SpreadTarget{{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 30}}}}
		nodes := append(prefNodes("a", 8, 10, inDC("dc1")), prefNodes("b", 8, 10, inDC("dc2"))...)
		got := tally(t, NewPlacer(j, nodes, nil, Options{EvalID: eval}), j, 10, "${node.datacenter}")
		if !sameCounts(got, map[string]int{"dc1": 7, "dc2": 3}) {
			t.Fatalf("eval %s: placed %v, want dc1 7, dc2 3", eval, got)
		}
	}
}

// A job-level spread applies to the group too, and the job's existing
// live allocs count: with 3 allocs in dc1 already, the 7 new ones go 4 to
// dc1 and 3 to dc2.
func TestSpreadCountsExistingAllocs(t *testing.T) {
	j := job(10, 100, 100)
	j.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 50,
		SpreadTarget: []*structs.SpreadTarget{{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 30}}}}
	nodes := append(prefNodes("a", 8, 10, inDC("dc1")), prefNodes("b", 8, 10, inDC("dc2"))...)
	var live []*structs.Allocation
	for i := range 3 {
		live = append(live, &structs.Allocation{ID: fmt.Sprintf("old-%d", i), NodeID: nodes[i].Node.ID, TaskGroup: "g",
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning})
	}
	got := tally(t, NewPlacer(j, nodes, live, Options{EvalID: prefEval}), j, 7, "${node.datacenter}")
	if !sameCounts(got, map[string]int{"dc1": 4, "dc2": 3}) {
		t.Fatalf("placed %v, want dc1 4, dc2 3 (3 existing in dc1)", got)
	}
}

// Values a spread's targets do not list share what the percentages leave:
// 50% on dc1, the other half over dc2 and dc3 together.
func TestSpreadImplicitTarget(t *testing.T) {
	j := job(8, 100, 100)
	j.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100,
		SpreadTarget: []*structs.SpreadTarget{{Value: "dc1", Percent: 50}}}}
	nodes := append(prefNodes("a", 6, 10, inDC("dc1")), prefNodes("b", 6, 10, inDC("dc2"))...)
	nodes = append(nodes, prefNodes("c", 6, 10, inDC("dc3"))...)
	got := tally(t, NewPlacer(j, nodes, nil, Options{EvalID: prefEval}), j, 8, "${node.datacenter}")
	if got["dc1"] != 4 || got["dc2"]+got["dc3"] != 4 {
		t.Fatalf("placed %v, want 4 in dc1 and 4 elsewhere", got)
	}
}

// Nomad's even spread: no targets, count 9 over 3 racks places 3 on each.
func TestSpreadEvenAcrossRacks(t *testing.T) {
	for _, eval := range []string{prefEval, "x", "y"} {
		j := job(9, 100, 100)
		j.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${meta.rack}", Weight: 50}}
		nodes := append(prefNodes("a", 4, 10, onRack("r1")), prefNodes("b", 2, 10, onRack("r2"))...)
		nodes = append(nodes, prefNodes("c", 5, 10, onRack("r3"))...)
		got := tally(t, NewPlacer(j, nodes, nil, Options{EvalID: eval}), j, 9, "${meta.rack}")
		if !sameCounts(got, map[string]int{"r1": 3, "r2": 3, "r3": 3}) {
			t.Fatalf("eval %s: placed %v, want 3 per rack", eval, got)
		}
	}
}

// distinct_hosts stays exact beside a spread: one alloc per node, and the
// placement past the last node fails.
func TestSpreadWithDistinctHosts(t *testing.T) {
	j := job(7, 100, 100)
	j.TaskGroups[0].Constraints = []*structs.Constraint{{Operand: structs.ConstraintDistinctHosts, RTarget: "true"}}
	j.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${meta.rack}", Weight: 100}}
	nodes := append(prefNodes("a", 4, 10, onRack("r1")), prefNodes("b", 2, 10, onRack("r2"))...)
	p := NewPlacer(j, nodes, nil, Options{EvalID: prefEval})
	seen := map[string]bool{}
	for i := range 7 {
		n, m := p.Place(j.TaskGroups[0], "", nil)
		if i == 6 {
			if n != nil || m.ConstraintFiltered[structs.ConstraintDistinctHosts] != 6 {
				t.Fatalf("7th placement: %v %+v", n, m)
			}
			continue
		}
		if n == nil || seen[n.ID] {
			t.Fatalf("placement %d: %v (seen %v)", i, n, seen)
		}
		seen[n.ID] = true
	}
}

// A positive affinity puts every alloc on the matching nodes while they
// have room, then the rest elsewhere.
func TestAffinityPrefersMatchingNodes(t *testing.T) {
	j := job(8, 100, 100)
	j.TaskGroups[0].Affinities = []*structs.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "large", Weight: 100}}
	nodes := append(prefNodes("s", 6, 10, ofClass("small")), prefNodes("l", 2, 3, ofClass("large"))...)
	got := tally(t, NewPlacer(j, nodes, nil, Options{EvalID: prefEval}), j, 8, "${node.class}")
	if !sameCounts(got, map[string]int{"large": 6, "small": 2}) {
		t.Fatalf("placed %v, want the 6 slots of the large nodes filled first", got)
	}
}

// A negative affinity keeps allocs off the matching nodes while others
// have room, though bin-packing prefers them (they are smaller), and
// task-level affinities count with the group's.
func TestNegativeAffinityAvoidsNodes(t *testing.T) {
	j := job(9, 100, 100)
	j.TaskGroups[0].Tasks[0].Affinities = []*structs.Affinity{{LTarget: "${meta.rack}", Operand: "set_contains_any", RTarget: "r1,r2", Weight: -80}}
	nodes := append(prefNodes("a", 3, 3, onRack("r1")), prefNodes("b", 3, 3, onRack("r2"))...)
	nodes = append(nodes, prefNodes("c", 3, 4, onRack("r3"))...)
	got := tally(t, NewPlacer(j, nodes, nil, Options{EvalID: prefEval}), j, 9, "${meta.rack}")
	if !sameCounts(got, map[string]int{"r3": 9}) {
		t.Fatalf("placed %v, want all 9 on r3", got)
	}
	got = tally(t, NewPlacer(j, nodes, nil, Options{EvalID: prefEval}), j, 14, "${meta.rack}")
	if got["r3"] != 12 || got["r1"]+got["r2"] != 2 {
		t.Fatalf("placed %v, want r3 full (12) and 2 elsewhere", got)
	}
}

// An affinity on a node's unique name is evaluated per node, not per
// class: nodes that differ only by name share a class.
func TestAffinityOnUniqueAttribute(t *testing.T) {
	j := job(1, 100, 100)
	j.Affinities = []*structs.Affinity{{LTarget: "${node.unique.name}", Operand: "=", RTarget: "n-03", Weight: 60}}
	nodes := prefNodes("n", 6, 10, nil)
	n, m := NewPlacer(j, nodes, nil, Options{EvalID: prefEval}).Place(j.TaskGroups[0], "", nil)
	if n == nil || n.Name != "n-03" {
		t.Fatalf("placed on %v, want n-03", n)
	}
	if s := m.ScoreMetaData[0]; s.NodeID != "n-03" || s.Scores["node-affinity"] != 1 {
		t.Fatalf("score meta %+v", s)
	}
}

// With preferences the sample widens to max(count, 100) feasible nodes as
// Nomad's stack does: 20 preferred nodes among 400 are found, where a
// log2(n) sample would mostly miss them.
func TestPreferencesWidenTheSample(t *testing.T) {
	j := job(10, 100, 100)
	j.TaskGroups[0].Affinities = []*structs.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "gpu", Weight: 100}}
	nodes := append(prefNodes("plain", 380, 10, nil), prefNodes("gpu", 20, 10, ofClass("gpu"))...)
	p := NewPlacer(j, nodes, nil, Options{EvalID: prefEval})
	got := tally(t, p, j, 10, "${node.class}")
	if got["gpu"] != 10 {
		t.Fatalf("placed %v, want all 10 on gpu nodes", got)
	}
	if g := p.group(j.TaskGroups[0]); g.limit != minPreferenceLimit || p.limit != 9 {
		t.Fatalf("limits: group %d, placer %d", g.limit, p.limit)
	}
	plain := job(10, 100, 100)
	if g := NewPlacer(plain, nodes, nil, Options{EvalID: prefEval}).group(plain.TaskGroups[0]); g.limit != 9 || g.prefers {
		t.Fatalf("a group without preferences samples %d nodes", g.limit)
	}
}

// The metrics name the scores as Nomad does: node-affinity and
// allocation-spread, beside binpack, and the final score averages them.
func TestPreferenceScoresInMetrics(t *testing.T) {
	j := job(4, 100, 100)
	j.TaskGroups[0].Affinities = []*structs.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "large", Weight: 50},
		{LTarget: "${meta.rack}", Operand: "=", RTarget: "r9", Weight: -50}}
	j.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100,
		SpreadTarget: []*structs.SpreadTarget{{Value: "dc1", Percent: 50}, {Value: "dc2", Percent: 50}}}}
	nodes := prefNodes("n", 1, 10, func(n *structs.Node) { n.NodeClass = "large"; n.Datacenter = "dc1" })
	n, m := NewPlacer(j, nodes, nil, Options{EvalID: prefEval}).Place(j.TaskGroups[0], "", nil)
	if n == nil || len(m.ScoreMetaData) != 1 {
		t.Fatalf("placement %v %+v", n, m)
	}
	s := m.ScoreMetaData[0]
	// affinity: 50 of |50|+|-50| matched; spread: dc1 wants 2, 0 used, this
	// placement makes 1: (2-1)/2.
	aff, spread := 0.5, 0.5
	want := (s.Scores["binpack"] + aff + spread) / 3
	if s.Scores["node-affinity"] != aff || s.Scores["allocation-spread"] != spread || math.Abs(s.NormScore-want) > 1e-9 {
		t.Fatalf("scores %+v norm %v, want affinity %v spread %v norm %v", s.Scores, s.NormScore, aff, spread, want)
	}
}

// A node lacking the spread attribute, or with a value outside the
// targets when they leave no share, is penalized.
func TestSpreadPenalizesNodesOutsideTargets(t *testing.T) {
	j := job(4, 100, 100)
	j.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${meta.rack}", Weight: 100,
		SpreadTarget: []*structs.SpreadTarget{{Value: "r1", Percent: 100}}}}
	nodes := append(prefNodes("a", 1, 10, onRack("r2")), prefNodes("b", 1, 10, nil)...)
	nodes = append(nodes, prefNodes("c", 1, 10, onRack("r1"))...)
	got := tally(t, NewPlacer(j, nodes, nil, Options{EvalID: prefEval}), j, 4, "${meta.rack}")
	if got["r1"] != 4 {
		t.Fatalf("placed %v, want all on r1", got)
	}
}

// The plan's stops no longer count: released allocs free their value.
// Counting them, r1 (2 of its 2 wanted) would lose to r2 (1 of 2).
func TestSpreadReleasedAllocsDoNotCount(t *testing.T) {
	j := job(4, 100, 100)
	j.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${meta.rack}", Weight: 100,
		SpreadTarget: []*structs.SpreadTarget{{Value: "r1", Percent: 50}, {Value: "r2", Percent: 50}}}}
	nodes := append(prefNodes("a", 2, 10, onRack("r1")), prefNodes("b", 2, 10, onRack("r2"))...)
	alloc := func(id string, n int) *structs.Allocation {
		return &structs.Allocation{ID: id, NodeID: nodes[n].Node.ID, TaskGroup: "g",
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning}
	}
	old1, old2 := alloc("old1", 0), alloc("old2", 1)
	p := NewPlacer(j, nodes, []*structs.Allocation{old1, old2, alloc("keep", 2)}, Options{EvalID: prefEval})
	p.Release(old1)
	p.Release(old2)
	if got := tally(t, p, j, 1, "${meta.rack}"); got["r1"] != 1 {
		t.Fatalf("placed %v, want r1 (its allocs are stopped, r2 holds one)", got)
	}
}
