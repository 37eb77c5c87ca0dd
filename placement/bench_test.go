package placement

import (
	"fmt"
	"testing"

	"github.com/drover-sched/drover/structs"
)

// BenchmarkPlace measures placement alone: one Placer over 1,000 ready
// nodes (fingerprinted like drover's agents, a constraint on the kernel)
// placing the 5,000 allocs of one service group, as one evaluation does
// after the reconciler. placements/s counts Place calls per second of the
// whole run, NewPlacer included. The exhaustive case scores every node for
// every placement (drover before sampling).
//
//	go test -run '^$' -bench BenchmarkPlace -benchmem -cpu 1 ./placement/
func BenchmarkPlace(b *testing.B) {
	const nodes, count = 1000, 5000
	var cs []NodeCandidate
	for i := range nodes {
		n := node(fmt.Sprintf("%08x-node-%04d", i*2654435761, i), 4000+int64(i%4)*1000, 8192, map[string]string{
			"cpu.arch": "amd64", "cpu.numcores": "4", "os.name": "debian", "driver.raw_exec": "1",
			"unique.hostname": fmt.Sprintf("host-%d", i), "nomad.version": "1.6.5",
		})
		cs = append(cs, NodeCandidate{Node: n, Used: structs.ComparableResources{CPU: int64(i%7) * 200, MemoryMB: int64(i%5) * 512}})
	}
	j := job(count, 100, 128)
	j.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"sampled", Options{EvalID: "6f0c8f0e-2d7b-4c1e-9a52-3b8e0f6d1a27"}},
		{"exhaustive", Options{Exhaustive: true}},
	} {
		b.Run(fmt.Sprintf("%s/count=%d/nodes=%d", tc.name, count, nodes), func(b *testing.B) {
			b.ReportAllocs()
			placed := 0
			for b.Loop() {
				p := NewPlacer(j, cs, nil, tc.opts)
				for range count {
					if n, _ := p.Place(j.TaskGroups[0], "", nil); n != nil {
						placed++
					}
				}
			}
			if placed != b.N*count {
				b.Fatalf("placed %d of %d", placed, b.N*count)
			}
			b.ReportMetric(float64(placed)/b.Elapsed().Seconds(), "placements/s")
		})
	}
}

// BenchmarkPlacePreferences measures placement of a group with an even
// spread over 10 racks and an affinity for a node class held by a fifth
// of the 1,000 nodes: its sample widens to max(count, 100) feasible nodes
// per placement, as Nomad's stack does for such groups.
//
//	go test -run '^$' -bench BenchmarkPlacePreferences -benchmem -cpu 1 ./placement/
func BenchmarkPlacePreferences(b *testing.B) {
	const nodes, count = 1000, 1000
	var cs []NodeCandidate
	for i := range nodes {
		n := node(fmt.Sprintf("%08x-node-%04d", i*2654435761, i), 4000+int64(i%4)*1000, 8192, map[string]string{
			"cpu.arch": "amd64", "unique.hostname": fmt.Sprintf("host-%d", i)})
		n.Meta = map[string]string{"rack": fmt.Sprintf("r%d", i%10)}
		if i%5 == 0 {
			n.NodeClass = "large"
		}
		cs = append(cs, NodeCandidate{Node: n, Used: structs.ComparableResources{CPU: int64(i%7) * 200, MemoryMB: int64(i%5) * 512}})
	}
	j := job(count, 100, 128)
	j.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${meta.rack}", Weight: 50}}
	j.TaskGroups[0].Affinities = []*structs.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "large", Weight: 50}}
	b.Run(fmt.Sprintf("count=%d/nodes=%d", count, nodes), func(b *testing.B) {
		b.ReportAllocs()
		placed := 0
		for b.Loop() {
			p := NewPlacer(j, cs, nil, Options{EvalID: "6f0c8f0e-2d7b-4c1e-9a52-3b8e0f6d1a27"})
			for range count {
				if n, _ := p.Place(j.TaskGroups[0], "", nil); n != nil {
					placed++
				}
			}
		}
		if placed != b.N*count {
			b.Fatalf("placed %d of %d", placed, b.N*count)
		}
		b.ReportMetric(float64(placed)/b.Elapsed().Seconds(), "placements/s")
	})
}
