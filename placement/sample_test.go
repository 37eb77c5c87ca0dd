package placement

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/structs"
)

// fleet builds n nodes of 2,000–5,000 MHz (memory in MiB alike), about a
// third of them partly used; free is the CPU left on all of them.
func fleet(n int, seed uint64) (cs []NodeCandidate, free int64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range n {
		size := int64(2000 + rng.IntN(4)*1000)
		var used structs.ComparableResources
		if rng.IntN(3) == 0 {
			used = structs.ComparableResources{CPU: rng.Int64N(size / 2), MemoryMB: rng.Int64N(size / 2)}
		}
		free += size - used.CPU
		cs = append(cs, NodeCandidate{Node: node(fmt.Sprintf("node-%04d", i), size, size, nil), Used: used})
	}
	return cs, free
}

// placeAll places count allocs of the job's group and returns the node of
// each ("" when it failed).
func placeAll(p *Placer, tg *structs.TaskGroup, count int) []string {
	out := make([]string, count)
	for i := range out {
		if n, _ := p.Place(tg, "", nil); n != nil {
			out[i] = n.ID
		}
	}
	return out
}

func distinctNodes(placed []string) int {
	seen := map[string]bool{}
	for _, id := range placed {
		if id == "" {
			continue
		}
		seen[id] = true
	}
	return len(seen)
}

// Sampling must not undo bin-packing: a job that takes half the fleet's
// free CPU lands on at most 10% more nodes than when every node is scored
// for every placement (the exhaustive scoring drover did before it
// sampled), for every eval ID tried. (Without the recent nodes, a sample
// of log2(n) alone is up to 12% worse here.)
func TestSampledBinPackingFillsNodes(t *testing.T) {
	cs, free := fleet(300, 5)
	count := int(free / 2 / 200)
	j := job(count, 200, 256)
	exhaustive := placeAll(NewPlacer(j, cs, nil, Options{Exhaustive: true}), j.TaskGroups[0], count)
	if slices.Contains(exhaustive, "") {
		t.Fatal("exhaustive scoring could not place the job")
	}
	want := distinctNodes(exhaustive)
	if want > 290 {
		t.Fatalf("exhaustive scoring used %d of 300 nodes: the fleet does not show bin-packing", want)
	}
	for k := range 20 {
		ev := fmt.Sprintf("eval-%d", k)
		sampled := placeAll(NewPlacer(j, cs, nil, Options{EvalID: ev}), j.TaskGroups[0], count)
		if slices.Contains(sampled, "") {
			t.Fatalf("%s: sampling failed a placement that fits", ev)
		}
		if got := distinctNodes(sampled); float64(got) > 1.10*float64(want) {
			t.Errorf("%s: sampled placements use %d nodes, exhaustive scoring %d (more than 10%% worse)", ev, got, want)
		} else {
			t.Logf("%s: sampled placements use %d nodes, exhaustive scoring %d", ev, got, want)
		}
	}
}

// The same eval over the same nodes (in any order) chooses the same nodes;
// another eval visits them in another order.
func TestPlacementsAreDeterministic(t *testing.T) {
	cs, _ := fleet(200, 5)
	j := job(300, 300, 300)
	first := placeAll(NewPlacer(j, cs, nil, Options{EvalID: "eval-1"}), j.TaskGroups[0], 300)
	reversed := slices.Clone(cs)
	slices.Reverse(reversed)
	again := placeAll(NewPlacer(j, reversed, nil, Options{EvalID: "eval-1"}), j.TaskGroups[0], 300)
	if !slices.Equal(first, again) {
		t.Fatal("the same eval over the same nodes chose different nodes")
	}
	other := placeAll(NewPlacer(j, cs, nil, Options{EvalID: "eval-2"}), j.TaskGroups[0], 300)
	if slices.Equal(first, other) {
		t.Fatal("another eval ID chose exactly the same nodes: the order is not seeded from the eval")
	}
}

// A placement scores a bounded sample: ceil(log2(candidates)) nodes for a
// service job, 2 for a batch job, not the whole fleet; from the second
// placement on, the recent nodes (at most as many again) are scored too.
func TestSampleIsBounded(t *testing.T) {
	var cs []NodeCandidate
	for i := range 1024 {
		cs = append(cs, NodeCandidate{Node: node(fmt.Sprintf("n%04d", i), 4000, 4000, nil)})
	}
	for _, tc := range []struct {
		typ  string
		want int
	}{{structs.JobTypeService, 10}, {structs.JobTypeBatch, 2}} {
		j := job(5, 100, 100)
		j.Type = tc.typ
		p := NewPlacer(j, cs, nil, Options{EvalID: "e"})
		for i := range 5 {
			n, m := p.Place(j.TaskGroups[0], "", nil)
			want := tc.want + min(i, tc.want) // the sample, and the recent nodes
			if n == nil || m.NodesEvaluated != want || m.NodesInPool != 1024 || m.NodesAvailable["dc1"] != 1024 {
				t.Fatalf("%s placement %d: node %v, metrics %+v; want %d nodes evaluated", tc.typ, i, n, m, want)
			}
			if len(m.ScoreMetaData) != min(want, maxScoreMetaData) {
				t.Fatalf("%s: %d scores kept", tc.typ, len(m.ScoreMetaData))
			}
		}
	}
}

// Infeasible and full nodes do not count towards the sample: the walk
// goes on until it finds room.
func TestSampleWidensPastInfeasibleAndFullNodes(t *testing.T) {
	var cs []NodeCandidate
	for i := range 256 {
		n := node(fmt.Sprintf("n%03d", i), 1000, 1000, map[string]string{"rack": "a"})
		c := NodeCandidate{Node: n}
		switch {
		case i == 17:
			n.Attributes["rack"] = "b" // the only one the constraint accepts
		case i == 200:
			n.Attributes["rack"] = "b"
			c.Used = structs.ComparableResources{CPU: 950} // accepted, but full
		}
		cs = append(cs, c)
	}
	j := job(1, 100, 100)
	j.Constraints = []*structs.Constraint{{LTarget: "${attr.rack}", Operand: "=", RTarget: "b"}}
	for _, ev := range []string{"x", "y", "z"} {
		n, m := NewPlacer(j, cs, nil, Options{EvalID: ev}).Place(j.TaskGroups[0], "", nil)
		if n == nil || n.ID != "n017" {
			t.Fatalf("%s: placed on %v, want n017 (metrics %+v)", ev, n, m)
		}
		if m.NodesEvaluated < 2 || m.ConstraintFiltered["${attr.rack} = b"] != m.NodesEvaluated-1-m.NodesExhausted {
			t.Fatalf("%s: metrics %+v", ev, m)
		}
	}
}

// Nodes that score poorly (here: they already hold one of the group's
// allocs) are passed over, up to three of them, as Nomad's limit iterator
// does, so a better node further along the order is still found.
func TestSampleSkipsPoorScores(t *testing.T) {
	var cs []NodeCandidate
	var live []*structs.Allocation
	for i := range 4 {
		id := fmt.Sprintf("n%d", i)
		cs = append(cs, NodeCandidate{Node: node(id, 10000, 10000, nil)})
		if i != 2 {
			live = append(live, &structs.Allocation{ID: "a" + id, NodeID: id, TaskGroup: "g",
				DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning})
		}
	}
	j := job(4, 100, 100)
	for k := range 20 {
		ev := fmt.Sprintf("eval-%d", k)
		n, m := NewPlacer(j, cs, live, Options{EvalID: ev}).Place(j.TaskGroups[0], "", nil)
		if n == nil || n.ID != "n2" {
			t.Fatalf("%s: placed on %v beside the group's own alloc, the free node n2 unseen (metrics %+v)", ev, n, m)
		}
	}
}

// distinct_hosts and distinct_property stay exact under sampling: every
// node (rack) takes exactly its share, and the next placement fails.
func TestDistinctConstraintsExactUnderSampling(t *testing.T) {
	var cs []NodeCandidate
	for i := range 64 {
		n := node(fmt.Sprintf("n%02d", i), 8000, 8000, nil)
		n.Meta = map[string]string{"rack": fmt.Sprintf("r%d", i%8)}
		cs = append(cs, NodeCandidate{Node: n})
	}
	byID := map[string]*structs.Node{}
	for _, c := range cs {
		byID[c.Node.ID] = c.Node
	}
	t.Run("distinct_hosts", func(t *testing.T) {
		j := job(65, 100, 100)
		j.TaskGroups[0].Constraints = []*structs.Constraint{{Operand: "distinct_hosts", RTarget: "true"}}
		placed := placeAll(NewPlacer(j, cs, nil, Options{EvalID: "e"}), j.TaskGroups[0], 65)
		if distinctNodes(placed[:64]) != 64 || placed[64] != "" {
			t.Fatalf("placed %v", placed)
		}
	})
	t.Run("distinct_property", func(t *testing.T) {
		j := job(25, 100, 100)
		j.Constraints = []*structs.Constraint{{LTarget: "${meta.rack}", Operand: "distinct_property", RTarget: "3"}}
		placed := placeAll(NewPlacer(j, cs, nil, Options{EvalID: "e"}), j.TaskGroups[0], 25)
		perRack := map[string]int{}
		for _, id := range placed[:24] {
			if id == "" {
				t.Fatalf("placed %v", placed)
			}
			perRack[byID[id].Meta["rack"]]++
		}
		for rack, c := range perRack {
			if c != 3 {
				t.Fatalf("rack %s holds %d allocs, want 3 (%v)", rack, c, perRack)
			}
		}
		if placed[24] != "" {
			t.Fatalf("a 25th alloc was placed on %s beyond 8 racks × 3", placed[24])
		}
	})
}

// A plan that stops one of two allocs of a distinct_hosts group sharing a
// node (the constraint came after them) frees the stopped one's room, but
// the one that keeps running still keeps the group off the node. (drover
// before sampling left stops out of the placer's live allocs and then
// un-counted them anyway, un-counting the live alloc instead.)
func TestPlanStopKeepsLiveNeighbourCounted(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	j := job(2, 100, 100)
	j.TaskGroups[0].Constraints = []*structs.Constraint{{Operand: "distinct_hosts", RTarget: "true"}}
	res := structs.AllocatedResourcesFor(j.TaskGroups[0])
	alloc := func(id string) *structs.Allocation {
		return &structs.Allocation{ID: id, Namespace: "default", JobID: "web", Job: j, TaskGroup: "g", NodeID: "n1",
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning, AllocatedResources: res}
	}
	keep, stop := alloc("keep"), alloc("stop")
	result := &reconcile.Result{
		Stop:  []*reconcile.Stop{{Alloc: stop, StatusDescription: reconcile.StatusAllocNotNeeded}},
		Place: []*reconcile.Placement{{Name: "web.g[1]", TaskGroup: j.TaskGroups[0]}},
	}
	out := BuildPlan(&PlanRequest{
		Eval: &structs.Evaluation{ID: "e", Namespace: "default", JobID: "web"}, Job: j,
		Allocs: []*structs.Allocation{keep, stop}, Result: result, Now: now,
		Nodes: []NodeCandidate{{Node: node("n1", 4000, 4000, nil), Used: structs.ComparableResources{CPU: 200, MemoryMB: 200}}},
	})
	if len(out.Plan.Placements) != 0 || out.FailedTGAllocs["g"].ConstraintFiltered["distinct_hosts"] != 1 {
		t.Fatalf("placed %d beside the live alloc of the group (failed %+v)", len(out.Plan.Placements), out.FailedTGAllocs["g"])
	}
}

// The node the last placement chose is scored again by the next one, even
// though the walk has moved on: another group's alloc lands beside it,
// bin-packed, rather than on an empty node of the next sample.
func TestRecentNodesAreScoredAgain(t *testing.T) {
	var cs []NodeCandidate
	for i := range 64 {
		cs = append(cs, NodeCandidate{Node: node(fmt.Sprintf("n%02d", i), 8000, 8000, nil)})
	}
	j := job(1, 100, 100)
	other := *j.TaskGroups[0]
	other.Name = "h"
	j.TaskGroups = append(j.TaskGroups, &other)
	for k := range 10 {
		p := NewPlacer(j, cs, nil, Options{EvalID: fmt.Sprintf("e%d", k)})
		first, _ := p.Place(j.TaskGroups[0], "", nil)
		second, m := p.Place(j.TaskGroups[1], "", nil)
		if m.NodesEvaluated != 7 {
			t.Fatalf("evaluated %d nodes, want the sample of 6 and the recent node", m.NodesEvaluated)
		}
		if second.ID != first.ID {
			t.Fatalf("eval e%d: group h went to empty node %s, not beside group g's alloc on %s", k, second.ID, first.ID)
		}
	}
}

// A group that failed to place is not given up for the rest of the plan
// while room can still come back: a rescheduled alloc's tied stop frees
// its room for its own replacement (a running alloc forced to reschedule),
// and what the old alloc held beyond the replacement then takes a later
// placement of the group.
func TestFailedGroupRetriedWhenATiedStopFreesRoom(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	j := job(3, 400, 100)
	old := &structs.Allocation{ID: "X", Namespace: "default", Name: "web.g[0]", JobID: "web", Job: j, TaskGroup: "g", NodeID: "n1",
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 800}, Memory: structs.AllocatedMemoryResources{MemoryMB: 100}}}}}
	first := &reconcile.Placement{Name: "web.g[1]", TaskGroup: j.TaskGroups[0]}
	replacement := &reconcile.Placement{Name: "web.g[0]", TaskGroup: j.TaskGroups[0], PreviousAlloc: old, Reschedule: true}
	last := &reconcile.Placement{Name: "web.g[2]", TaskGroup: j.TaskGroups[0]}
	result := &reconcile.Result{
		Stop:  []*reconcile.Stop{{Alloc: old, StatusDescription: reconcile.StatusAllocRescheduled, ForPlacement: replacement}},
		Place: []*reconcile.Placement{first, replacement, last},
	}
	out := BuildPlan(&PlanRequest{
		Eval: &structs.Evaluation{ID: "e", Namespace: "default", JobID: "web"}, Job: j,
		Allocs: []*structs.Allocation{old}, Result: result, Now: now,
		Nodes: []NodeCandidate{{Node: node("n1", 1000, 4096, nil), Used: structs.ComparableResources{CPU: 1000, MemoryMB: 300}}},
	})
	var names []string
	for _, a := range out.Plan.Placements {
		names = append(names, a.Name)
	}
	if !slices.Equal(names, []string{"web.g[0]", "web.g[2]"}) || len(out.Plan.Stops) != 1 || out.QueuedAllocations["g"] != 1 {
		t.Fatalf("placed %v, stops %d, queued %v: want the replacement and the last placement, the first one queued",
			names, len(out.Plan.Stops), out.QueuedAllocations)
	}
	if m := out.FailedTGAllocs["g"]; m == nil || m.CoalescedFailures != 0 {
		t.Fatalf("failed metrics %+v", m)
	}
}
