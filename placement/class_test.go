package placement

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/structs"
)

// classFleet builds n nodes that differ only in what identifies them
// (ID, name, unique.hostname), half of them with kernel "linux" and half
// "windows": two classes.
func classFleet(n int) []NodeCandidate {
	var cs []NodeCandidate
	for i := range n {
		kernel := "linux"
		if i%2 == 1 {
			kernel = "windows"
		}
		cs = append(cs, NodeCandidate{Node: node(fmt.Sprintf("n%03d", i), 8000, 8000, map[string]string{
			"kernel.name": kernel, "unique.hostname": fmt.Sprintf("host-%d", i)})})
	}
	return cs
}

// Constraints that read only class fields are evaluated once per class
// and group in an evaluation, however many placements and nodes.
func TestFeasibilityEvaluatedOncePerClass(t *testing.T) {
	j := job(400, 100, 100)
	j.Constraints = []*structs.Constraint{
		{LTarget: "${attr.os.version}", Operand: "version", RTarget: ">= 12"},
		{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"},
	}
	for _, opts := range []Options{{EvalID: "e"}, {Exhaustive: true}} {
		p := NewPlacer(j, classFleet(100), nil, opts)
		for i := range 400 {
			n, m := p.Place(j.TaskGroups[0], "", nil)
			if n == nil || n.Attributes["kernel.name"] != "linux" {
				t.Fatalf("placement %d on %v (metrics %+v)", i, n, m)
			}
		}
		// linux: both constraints; windows: the version, then the kernel.
		if p.cc.evaluated != 4 {
			t.Fatalf("exhaustive=%v: %d constraint evaluations for 400 placements on 2 classes, want 4", opts.Exhaustive, p.cc.evaluated)
		}
	}
}

// A constraint on a unique value escapes the class: it is evaluated per
// node. The reason a node is filtered is still the first failing check in
// the job's order.
func TestEscapedConstraintsAreEvaluatedPerNode(t *testing.T) {
	j := job(1, 100, 100)
	j.Constraints = []*structs.Constraint{
		{LTarget: "${attr.unique.hostname}", Operand: "!=", RTarget: "host-0"},
		{LTarget: "${node.unique.name}", Operand: "!=", RTarget: "n002"},
		{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"},
	}
	cs := classFleet(4) // n000, n002 linux; n001, n003 windows
	n, m := NewPlacer(j, cs, nil, Options{Exhaustive: true}).Place(j.TaskGroups[0], "", nil)
	if n != nil {
		t.Fatalf("placed on %s: every node fails one constraint", n.ID)
	}
	want := map[string]int{"${attr.unique.hostname} != host-0": 1, "${node.unique.name} != n002": 1, "${attr.kernel.name} = linux": 2}
	if fmt.Sprint(m.ConstraintFiltered) != fmt.Sprint(want) {
		t.Fatalf("filtered %v, want %v", m.ConstraintFiltered, want)
	}
}

// Nodes differing in any class field get their own verdict: datacenter,
// pool, node class, a non-unique attribute or meta key, a driver's health.
// Unique attributes and meta do not split classes.
func TestClassesSplitOnEveryClassField(t *testing.T) {
	cases := []struct {
		name       string
		constraint *structs.Constraint
		differ     func(n *structs.Node)
	}{
		{"datacenter", &structs.Constraint{LTarget: "${node.datacenter}", Operand: "=", RTarget: "dc1"}, func(n *structs.Node) { n.Datacenter = "dc2" }},
		{"pool", &structs.Constraint{LTarget: "${node.pool}", Operand: "=", RTarget: "default"}, func(n *structs.Node) { n.NodePool = "other" }},
		{"node class", &structs.Constraint{LTarget: "${node.class}", Operand: "is_not_set"}, func(n *structs.Node) { n.NodeClass = "big" }},
		{"attribute", &structs.Constraint{LTarget: "${attr.cpu.arch}", Operand: "=", RTarget: "amd64"}, func(n *structs.Node) { n.Attributes["cpu.arch"] = "arm64" }},
		{"meta", &structs.Constraint{LTarget: "${meta.rack}", Operand: "=", RTarget: "r1"}, func(n *structs.Node) { n.Meta["rack"] = "r2" }},
		{"driver health", nil, func(n *structs.Node) { n.Drivers["raw_exec"] = &structs.DriverInfo{Detected: true} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := job(2, 100, 100)
			j.NodePool = structs.NodePoolAll
			j.Datacenters = []string{"*"}
			if tc.constraint != nil {
				j.Constraints = []*structs.Constraint{tc.constraint}
			}
			var cs []NodeCandidate
			for i := range 8 {
				n := node(fmt.Sprintf("n%d", i), 8000, 8000, map[string]string{"cpu.arch": "amd64"})
				n.Meta = map[string]string{"rack": "r1", "unique.serial": fmt.Sprint(i)}
				if i%2 == 1 {
					tc.differ(n)
				}
				cs = append(cs, NodeCandidate{Node: n})
			}
			p := NewPlacer(j, cs, nil, Options{Exhaustive: true})
			for range 8 {
				if n, m := p.Place(j.TaskGroups[0], "", nil); n == nil || n.ID[1]%2 == 1 {
					t.Fatalf("placed on %v (metrics %+v): the differing nodes share the others' verdict", n, m)
				}
			}
			if got := len(p.classes.first); got != 2 {
				t.Fatalf("%d classes, want 2 (unique meta must not split them)", got)
			}
		})
	}
}

// Two nodes whose hashes collide still get their own classes: the class
// is confirmed by comparing the fields.
func TestClassHashCollisionMakesANewClass(t *testing.T) {
	c := newNodeClasses()
	a := node("a", 1000, 1000, map[string]string{"kernel.name": "linux"})
	b := node("b", 1000, 1000, map[string]string{"kernel.name": "windows"})
	if c.of(a) != 0 {
		t.Fatal("first class is not 0")
	}
	h := c.hash(b)
	c.byHash[h] = append([]int{0}, c.byHash[h]...) // b's hash now leads to a's class
	if got := c.of(b); got != 1 {
		t.Fatalf("b joined class %d despite differing from a", got)
	}
	if got := c.of(node("a2", 500, 500, map[string]string{"kernel.name": "linux", "unique.hostname": "x"})); got != 0 {
		t.Fatalf("a twin of a (but for unique fields and resources) got class %d", got)
	}
}
