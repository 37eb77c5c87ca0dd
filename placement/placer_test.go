package placement

import (
	"testing"

	"github.com/drover-sched/drover/structs"
)

func node(id string, cpu, mem int64, attrs map[string]string) *structs.Node {
	a := map[string]string{"kernel.name": "linux", "os.version": "12.4"}
	for k, v := range attrs {
		a[k] = v
	}
	return &structs.Node{
		ID: id, Name: id, Datacenter: "dc1", NodePool: "default", Attributes: a,
		NodeResources:         &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: cpu}, Memory: structs.NodeMemoryResources{MemoryMB: mem}, Disk: structs.NodeDiskResources{DiskMB: 10000}},
		Drivers:               map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		Status:                structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
	}
}

func job(count int, cpu, mem int) *structs.Job {
	return &structs.Job{ID: "web", Namespace: "default", Type: "service", NodePool: "default",
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: count,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Resources: &structs.Resources{CPU: cpu, MemoryMB: mem}}}}}}
}

func cands(nodes ...*structs.Node) []NodeCandidate {
	var out []NodeCandidate
	for _, n := range nodes {
		out = append(out, NodeCandidate{Node: n})
	}
	return out
}

func TestBinPackPrefersFullerNode(t *testing.T) {
	j := job(1, 500, 256)
	busy := NodeCandidate{Node: node("busy", 2000, 2048, nil), Used: structs.ComparableResources{CPU: 1000, MemoryMB: 1024}}
	idle := NodeCandidate{Node: node("idle", 2000, 2048, nil)}
	p := NewPlacer(j, []NodeCandidate{idle, busy}, nil, Options{})
	n, m := p.Place(j.TaskGroups[0], "", nil)
	if n == nil || n.ID != "busy" {
		t.Fatalf("placed on %v, want busy (bin-packing)", n)
	}
	if m.NodesEvaluated != 2 || len(m.ScoreMetaData) != 2 || m.ScoreMetaData[0].NodeID != "busy" {
		t.Fatalf("metrics: %+v", m)
	}
}

func TestPlacerTracksItsOwnPlacements(t *testing.T) {
	j := job(3, 600, 100)
	p := NewPlacer(j, cands(node("n1", 1000, 4096, nil), node("n2", 1000, 4096, nil)), nil, Options{})
	var placed []string
	for i := 0; i < 3; i++ {
		n, m := p.Place(j.TaskGroups[0], "", nil)
		if n == nil {
			if i != 2 || m.NodesExhausted != 2 || m.DimensionExhausted["cpu"] != 2 {
				t.Fatalf("placement %d failed: %+v", i, m)
			}
			continue
		}
		placed = append(placed, n.ID)
	}
	if len(placed) != 2 || placed[0] == placed[1] {
		t.Fatalf("placed %v: one 600 MHz alloc fits per 1000 MHz node", placed)
	}
}

func TestReleaseFreesRoom(t *testing.T) {
	j := job(1, 800, 100)
	old := &structs.Allocation{ID: "old", NodeID: "n1", TaskGroup: "g", DesiredStatus: "run", ClientStatus: "running",
		AllocatedResources: structs.AllocatedResourcesFor(j.TaskGroups[0])}
	p := NewPlacer(j, []NodeCandidate{{Node: node("n1", 1000, 4096, nil), Used: structs.ComparableResources{CPU: 800, MemoryMB: 100}}}, []*structs.Allocation{old}, Options{})
	if n, _ := p.Place(j.TaskGroups[0], "", nil); n != nil {
		t.Fatal("placed on a full node")
	}
	p.Release(old)
	if n, _ := p.Place(j.TaskGroups[0], "", nil); n == nil {
		t.Fatal("room freed by a stop in the same plan was not used")
	}
}

func TestFeasibility(t *testing.T) {
	cases := []struct {
		name     string
		mutate   func(j *structs.Job, n *structs.Node)
		feasible bool
		reason   string
	}{
		{"plain", func(j *structs.Job, n *structs.Node) {}, true, ""},
		{"datacenter mismatch", func(j *structs.Job, n *structs.Node) { j.Datacenters = []string{"dc2"} }, false, ""},
		{"datacenter glob", func(j *structs.Job, n *structs.Node) { j.Datacenters = []string{"dc*"} }, true, ""},
		{"datacenter wildcard", func(j *structs.Job, n *structs.Node) { j.Datacenters = []string{"*"} }, true, ""},
		{"node pool mismatch", func(j *structs.Job, n *structs.Node) { j.NodePool = "gpu" }, false, ""},
		{"node pool all", func(j *structs.Job, n *structs.Node) { j.NodePool = "all"; n.NodePool = "gpu" }, true, ""},
		{"down node", func(j *structs.Job, n *structs.Node) { n.Status = structs.NodeStatusDown }, false, ""},
		{"ineligible node", func(j *structs.Job, n *structs.Node) { n.SchedulingEligibility = structs.NodeSchedulingIneligible }, false, ""},
		{"draining node", func(j *structs.Job, n *structs.Node) { n.Drain = true }, false, ""},
		{"missing driver", func(j *structs.Job, n *structs.Node) { delete(n.Drivers, "raw_exec") }, false, "missing drivers"},
		{"unhealthy driver", func(j *structs.Job, n *structs.Node) { n.Drivers["raw_exec"].Healthy = false }, false, "missing drivers"},
		{"= attr", constraint("${attr.kernel.name}", "=", "linux"), true, ""},
		{"= attr mismatch", constraint("${attr.kernel.name}", "=", "windows"), false, "${attr.kernel.name} = windows"},
		{"= missing attr", constraint("${attr.nope}", "=", "x"), false, "${attr.nope} = x"},
		{"!= attr", constraint("${attr.kernel.name}", "!=", "windows"), true, ""},
		{"!= same", constraint("${attr.kernel.name}", "!=", "linux"), false, "${attr.kernel.name} != linux"},
		{"!= missing attr", constraint("${attr.nope}", "!=", "x"), true, ""},
		{"regexp", constraint("${attr.kernel.name}", "regexp", "^lin"), true, ""},
		{"regexp mismatch", constraint("${attr.kernel.name}", "regexp", "^win"), false, "${attr.kernel.name} regexp ^win"},
		{"version", constraint("${attr.os.version}", "version", ">= 12.0, < 13"), true, ""},
		{"version mismatch", constraint("${attr.os.version}", "version", ">= 13"), false, "${attr.os.version} version >= 13"},
		{"semver", constraint("${attr.os.version}", "semver", ">= 12.1"), true, ""},
		{"numeric order", constraint("${attr.cpu.numcores}", ">", "2"), true, ""},
		{"numeric order mismatch", constraint("${attr.cpu.numcores}", "<", "4"), false, "${attr.cpu.numcores} < 4"},
		{"is_set", constraint("${attr.kernel.name}", "is_set", ""), true, ""},
		{"is_not_set", constraint("${attr.kernel.name}", "is_not_set", ""), false, "${attr.kernel.name} is_not_set "},
		{"set_contains", constraint("${meta.tags}", "set_contains", "a,c"), true, ""},
		{"set_contains mismatch", constraint("${meta.tags}", "set_contains", "a,z"), false, "${meta.tags} set_contains a,z"},
		{"set_contains_any", constraint("${meta.tags}", "set_contains_any", "z,b"), true, ""},
		{"node.datacenter", constraint("${node.datacenter}", "=", "dc1"), true, ""},
		{"node.unique.name", constraint("${node.unique.name}", "=", "other"), false, "${node.unique.name} = other"},
		{"task constraint", func(j *structs.Job, n *structs.Node) {
			j.TaskGroups[0].Tasks[0].Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "darwin"}}
		}, false, "${attr.kernel.name} = darwin"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := job(1, 100, 100)
			n := node("n1", 1000, 1000, map[string]string{"cpu.numcores": "4"})
			n.Meta = map[string]string{"tags": "a,b,c"}
			tc.mutate(j, n)
			got, m := NewPlacer(j, cands(n), nil, Options{}).Place(j.TaskGroups[0], "", nil)
			if (got != nil) != tc.feasible {
				t.Fatalf("feasible=%v, want %v (metrics %+v)", got != nil, tc.feasible, m)
			}
			if tc.reason != "" && m.ConstraintFiltered[tc.reason] != 1 {
				t.Fatalf("ConstraintFiltered %v, want %q", m.ConstraintFiltered, tc.reason)
			}
		})
	}
}

func constraint(l, op, r string) func(j *structs.Job, n *structs.Node) {
	return func(j *structs.Job, n *structs.Node) {
		j.Constraints = []*structs.Constraint{{LTarget: l, Operand: op, RTarget: r}}
	}
}

func TestDistinctHosts(t *testing.T) {
	j := job(3, 100, 100)
	j.TaskGroups[0].Constraints = []*structs.Constraint{{Operand: "distinct_hosts", RTarget: "true"}}
	p := NewPlacer(j, cands(node("n1", 4000, 4000, nil), node("n2", 4000, 4000, nil)), nil, Options{})
	a, _ := p.Place(j.TaskGroups[0], "", nil)
	b, _ := p.Place(j.TaskGroups[0], "", nil)
	c, m := p.Place(j.TaskGroups[0], "", nil)
	if a == nil || b == nil || a.ID == b.ID || c != nil || m.ConstraintFiltered["distinct_hosts"] != 2 {
		t.Fatalf("distinct_hosts: %v %v %v %+v", a, b, c, m)
	}
}

func TestDistinctProperty(t *testing.T) {
	j := job(3, 100, 100)
	j.Constraints = []*structs.Constraint{{LTarget: "${meta.rack}", Operand: "distinct_property", RTarget: "1"}}
	n1, n2, n3 := node("n1", 4000, 4000, nil), node("n2", 4000, 4000, nil), node("n3", 4000, 4000, nil)
	n1.Meta = map[string]string{"rack": "r1"}
	n2.Meta = map[string]string{"rack": "r1"}
	n3.Meta = map[string]string{"rack": "r2"}
	p := NewPlacer(j, cands(n1, n2, n3), nil, Options{})
	a, _ := p.Place(j.TaskGroups[0], "", nil)
	b, _ := p.Place(j.TaskGroups[0], "", nil)
	c, _ := p.Place(j.TaskGroups[0], "", nil)
	if a == nil || b == nil || c != nil || a.Meta["rack"] == b.Meta["rack"] {
		t.Fatalf("distinct_property: %v %v %v", a, b, c)
	}
}

func TestJobAntiAffinitySpreads(t *testing.T) {
	j := job(2, 100, 100)
	p := NewPlacer(j, cands(node("n1", 4000, 4000, nil), node("n2", 4000, 4000, nil)), nil, Options{})
	a, _ := p.Place(j.TaskGroups[0], "", nil)
	b, _ := p.Place(j.TaskGroups[0], "", nil)
	if a.ID == b.ID {
		t.Fatal("two allocs of a group on one node while an equal node is empty")
	}
}

func TestPreferAndPenalize(t *testing.T) {
	j := job(1, 100, 100)
	busy := NodeCandidate{Node: node("busy", 2000, 2048, nil), Used: structs.ComparableResources{CPU: 1000, MemoryMB: 1024}}
	idle := NodeCandidate{Node: node("idle", 2000, 2048, nil)}
	if n, _ := NewPlacer(j, []NodeCandidate{busy, idle}, nil, Options{}).Place(j.TaskGroups[0], "idle", nil); n.ID != "idle" {
		t.Fatalf("preferred node ignored: %s", n.ID)
	}
	if n, _ := NewPlacer(j, []NodeCandidate{busy, idle}, nil, Options{}).Place(j.TaskGroups[0], "", map[string]bool{"busy": true}); n.ID != "idle" {
		t.Fatalf("penalized node chosen: %s", n.ID)
	}
}
