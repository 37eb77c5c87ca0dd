package placement

import (
	"reflect"
	"slices"
	"testing"

	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/structs"
)

// netNode is node() with a host network and a dynamic port range.
func netNode(id string, lo, hi int, reserved string) *structs.Node {
	n := node(id, 100000, 100000, nil)
	n.NodeResources.Networks = []*structs.NetworkResource{{Mode: "host", Device: "eth0", IP: "10.0.0." + id[len(id)-1:]}}
	n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = lo, hi
	if reserved != "" {
		n.ReservedResources = &structs.NodeReservedResources{Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: reserved}}
	}
	return n
}

// portJob is job() whose group asks for the static ports and dynamic
// labels given.
func portJob(count int, static map[string]int, dynamic ...string) *structs.Job {
	j := job(count, 10, 10)
	nw := &structs.NetworkResource{Mode: "host"}
	for _, l := range slices.Sorted(mapKeys(static)) {
		nw.ReservedPorts = append(nw.ReservedPorts, structs.Port{Label: l, Value: static[l]})
	}
	for _, l := range dynamic {
		nw.DynamicPorts = append(nw.DynamicPorts, structs.Port{Label: l})
	}
	j.TaskGroups[0].Networks = []*structs.NetworkResource{nw}
	return j
}

func mapKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestStaticPortGivenWithNodeAddress(t *testing.T) {
	j := portJob(1, map[string]int{"http": 8080})
	p := NewPlacer(j, cands(netNode("n1", 20000, 20010, "")), nil, Options{EvalID: "e1"})
	opt, _ := p.PlaceAlloc(j.TaskGroups[0], "", nil)
	if opt == nil {
		t.Fatal("not placed")
	}
	wantNet := []*structs.NetworkResource{{Mode: "host", Device: "eth0", IP: "10.0.0.1",
		ReservedPorts: []structs.Port{{Label: "http", Value: 8080, HostNetwork: "default"}}}}
	if !reflect.DeepEqual(opt.Networks, wantNet) {
		t.Fatalf("networks %+v", opt.Networks[0])
	}
	if want := []structs.AllocatedPortMapping{{Label: "http", Value: 8080, HostIP: "10.0.0.1"}}; !reflect.DeepEqual(opt.Ports, want) {
		t.Fatalf("ports %+v", opt.Ports)
	}
	// A second alloc of the group needs the same static port: the node
	// has room for it but not the port.
	opt2, m := p.PlaceAlloc(j.TaskGroups[0], "", nil)
	if opt2 != nil {
		t.Fatalf("a second alloc got static port 8080 on %s too", opt2.Node.ID)
	}
	if m.NodesExhausted != 1 || m.DimensionExhausted["network: reserved port collision http=8080"] != 1 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestStaticPortAvoidsHeldAndReservedPorts(t *testing.T) {
	j := portJob(1, map[string]int{"http": 8080})
	held := NodeCandidate{Node: netNode("n1", 20000, 20010, ""), Ports: []int{8080}}
	reserved := NodeCandidate{Node: netNode("n2", 20000, 20010, "22,8000-8090")}
	free := NodeCandidate{Node: netNode("n3", 20000, 20010, "")}
	p := NewPlacer(j, []NodeCandidate{held, reserved, free}, nil, Options{EvalID: "e1"})
	opt, m := p.PlaceAlloc(j.TaskGroups[0], "", nil)
	if opt == nil || opt.Node.ID != "n3" {
		t.Fatalf("placed on %v (metrics %+v), want n3: n1 holds 8080, n2 reserves it", opt, m)
	}
}

func TestNodeWithoutNetworkIsFiltered(t *testing.T) {
	j := portJob(1, nil, "http")
	p := NewPlacer(j, cands(node("n1", 1000, 1000, nil)), nil, Options{EvalID: "e1"})
	opt, m := p.PlaceAlloc(j.TaskGroups[0], "", nil)
	if opt != nil || m.NodesFiltered != 1 || m.ConstraintFiltered["missing network"] != 1 {
		t.Fatalf("placed %v on a node without a network (metrics %+v)", opt, m)
	}
}

// Dynamic ports come from the node's range, avoid what is held, reserved
// and taken by the plan, and fill the range before the node is
// exhausted.
func TestDynamicPortsFillTheRange(t *testing.T) {
	j := portJob(10, nil, "http", "admin")
	n := netNode("n1", 20000, 20009, "20003")
	c := NodeCandidate{Node: n, Ports: []int{20000, 20005}}
	p := NewPlacer(j, []NodeCandidate{c}, nil, Options{EvalID: "e1"})
	seen := map[int]bool{}
	for i := range 3 { // 10 ports, 3 held or reserved: three allocs of two
		opt, m := p.PlaceAlloc(j.TaskGroups[0], "", nil)
		if opt == nil {
			t.Fatalf("alloc %d not placed: %+v", i, m)
		}
		for _, pm := range opt.Ports {
			if pm.Value < 20000 || pm.Value > 20009 || pm.Value == 20000 || pm.Value == 20003 || pm.Value == 20005 || seen[pm.Value] {
				t.Fatalf("alloc %d got port %d (taken, reserved or outside the range; seen %v)", i, pm.Value, seen)
			}
			seen[pm.Value] = true
		}
	}
	opt, m := p.PlaceAlloc(j.TaskGroups[0], "", nil)
	if opt != nil || m.DimensionExhausted["network: dynamic port selection failed"] != 1 {
		t.Fatalf("a fourth alloc fit a range with one free port: %v %+v", opt, m)
	}
}

// The same eval over the same nodes picks the same ports; another eval
// picks others.
func TestDynamicPortsAreDeterministicPerEval(t *testing.T) {
	pick := func(evalID string) []structs.AllocatedPortMapping {
		j := portJob(5, nil, "http")
		p := NewPlacer(j, cands(netNode("n1", 20000, 32000, "")), nil, Options{EvalID: evalID})
		var out []structs.AllocatedPortMapping
		for range 5 {
			opt, _ := p.PlaceAlloc(j.TaskGroups[0], "", nil)
			out = append(out, opt.Ports...)
		}
		return out
	}
	a, b, other := pick("eval-1"), pick("eval-1"), pick("eval-2")
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("one eval picked %v then %v", a, b)
	}
	if reflect.DeepEqual(a, other) {
		t.Fatalf("two evals picked the same ports %v", a)
	}
}

// A stop in the same plan gives its ports back: the replacement may take
// the same static port on the same node.
func TestReleaseFreesPorts(t *testing.T) {
	j := portJob(1, map[string]int{"http": 8080})
	old := &structs.Allocation{ID: "old", NodeID: "n1", TaskGroup: "g", DesiredStatus: "run", ClientStatus: "running",
		AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
			Ports: []structs.AllocatedPortMapping{{Label: "http", Value: 8080, HostIP: "10.0.0.1"}}}}}
	c := NodeCandidate{Node: netNode("n1", 20000, 20010, ""), Ports: []int{8080}}
	p := NewPlacer(j, []NodeCandidate{c}, []*structs.Allocation{old}, Options{EvalID: "e1"})
	if opt, _ := p.PlaceAlloc(j.TaskGroups[0], "", nil); opt != nil {
		t.Fatal("placed on a held static port")
	}
	p.Release(old)
	opt, m := p.PlaceAlloc(j.TaskGroups[0], "", nil)
	if opt == nil {
		t.Fatalf("the port a stop gave back was not used: %+v", m)
	}
	p.Reserve(old) // the stop is dropped after all: the port is held twice now
	if book := p.byID["n1"].ports; book.used[8080] != 2 {
		t.Fatalf("port 8080 holders %d after Reserve, want 2", book.used[8080])
	}
}

func TestParsePortSpec(t *testing.T) {
	got, err := structs.ParsePortSpec(" 22, 80,8000-8003,80")
	if err != nil || !slices.Equal(got, []int{22, 80, 8000, 8001, 8002, 8003}) {
		t.Fatalf("ParsePortSpec = %v, %v", got, err)
	}
	for _, bad := range []string{"x", "0", "70000", "90-80", "1-a"} {
		if _, err := structs.ParsePortSpec(bad); err == nil {
			t.Errorf("ParsePortSpec(%q) accepted", bad)
		}
	}
}

// Changing a group's ports replaces its allocs (the tasks were started
// with the old ones); a change elsewhere that is in place keeps them.
func TestNetworkChangeIsDestructive(t *testing.T) {
	old := portJob(1, map[string]int{"http": 8080})
	old.Version = 0
	existing := &structs.Allocation{ID: "a", NodeID: "n1", TaskGroup: "g", Job: old, JobVersion: 0,
		DesiredStatus: "run", ClientStatus: "running"}
	moved := portJob(1, map[string]int{"http": 9090})
	moved.Version = 1
	if kind, _ := UpdateType(existing, moved, moved.TaskGroups[0]); kind != reconcile.UpdateDestructive {
		t.Fatalf("static port 8080 → 9090: update kind %v, want destructive", kind)
	}
	scaled := portJob(3, map[string]int{"http": 8080})
	scaled.Version = 1
	if kind, _ := UpdateType(existing, scaled, scaled.TaskGroups[0]); kind != reconcile.UpdateInPlace {
		t.Fatalf("count change with the same ports: update kind %v, want in place", kind)
	}
}

// A bridge-mode group's alloc gets host ports on the node as a host-mode
// one does, and its network keeps the mode and hostname (the node agent
// and `nomad alloc status` read them).
func TestBridgeNetworkKeepsItsMode(t *testing.T) {
	j := portJob(1, map[string]int{"http": 8080})
	j.TaskGroups[0].Networks[0].Mode, j.TaskGroups[0].Networks[0].Hostname = "bridge", "web-1"
	p := NewPlacer(j, cands(netNode("n1", 20000, 20010, "")), nil, Options{EvalID: "e1"})
	opt, _ := p.PlaceAlloc(j.TaskGroups[0], "", nil)
	if opt == nil {
		t.Fatal("not placed")
	}
	wantNet := []*structs.NetworkResource{{Mode: "bridge", Hostname: "web-1", Device: "eth0", IP: "10.0.0.1",
		ReservedPorts: []structs.Port{{Label: "http", Value: 8080, HostNetwork: "default"}}}}
	if !reflect.DeepEqual(opt.Networks, wantNet) {
		t.Fatalf("networks %+v", opt.Networks[0])
	}
}
