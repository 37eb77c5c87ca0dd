package scheduler_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/structs"
)

// TestSpreadAndAffinityThroughTheStore: a job of count 10 spread over
// dc1/dc2 with targets 70/30 lands 7/3 through the real store and
// evaluator; scaled to 20, the new eval counts the committed allocs and
// ends 14/6; an affinity added later (a destructive update, as Nomad's)
// moves every alloc to the preferred class while the spread holds.
func TestSpreadAndAffinityThroughTheStore(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	for i := range 12 {
		dc, class := "dc1", "small"
		if i%2 == 1 {
			dc = "dc2"
		}
		if i < 6 {
			class = "large"
		}
		_, err := h.service.RegisterNode(ctx, &structs.Node{
			ID: fmt.Sprintf("node-%02d", i), Name: fmt.Sprintf("node-%02d", i), Datacenter: dc, NodeClass: class, NodePool: "default",
			Attributes: map[string]string{"kernel.name": "linux"},
			NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000},
				Memory: structs.NodeMemoryResources{MemoryMB: 8192}, Disk: structs.NodeDiskResources{DiskMB: 10000}},
			Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	j := job("web", 10, 100)
	j.Datacenters = []string{"dc1", "dc2"}
	j.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100,
		SpreadTarget: []*structs.SpreadTarget{{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 30}}}}
	run := func(j *structs.Job) {
		t.Helper()
		resp, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: j})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.eval.Process(ctx, resp.EvalID); err != nil {
			t.Fatal(err)
		}
	}
	nodes := map[string]*structs.Node{}
	count := func() (byDC, byClass map[string]int) {
		byDC, byClass = map[string]int{}, map[string]int{}
		for _, a := range h.liveAllocs("web") {
			n := nodes[a.NodeID]
			if n == nil {
				var err error
				if n, err = h.store.Node(ctx, a.NodeID); err != nil {
					t.Fatal(err)
				}
				nodes[a.NodeID] = n
			}
			byDC[n.Datacenter]++
			byClass[n.NodeClass]++
		}
		return byDC, byClass
	}

	run(j)
	if dc, _ := count(); dc["dc1"] != 7 || dc["dc2"] != 3 {
		t.Fatalf("count 10: %v, want dc1 7, dc2 3", dc)
	}
	// The metrics carry Nomad's scorer name (a spread score of exactly 0,
	// a value at its desired count, is left out as Nomad does).
	scored := 0
	for _, a := range h.liveAllocs("web") {
		if a.Metrics == nil || len(a.Metrics.ScoreMetaData) == 0 {
			t.Fatalf("alloc %s has no score metadata", a.Name)
		}
		if _, ok := a.Metrics.ScoreMetaData[0].Scores["allocation-spread"]; ok {
			scored++
		}
	}
	if scored < 5 {
		t.Fatalf("%d of 10 allocs were scored by allocation-spread", scored)
	}

	j20 := j.Copy()
	j20.TaskGroups[0].Count = 20
	run(j20)
	if dc, _ := count(); dc["dc1"] != 14 || dc["dc2"] != 6 {
		t.Fatalf("count 20: %v, want dc1 14, dc2 6", dc)
	}

	aff := j20.Copy()
	aff.TaskGroups[0].Affinities = []*structs.Affinity{{LTarget: "${node.class}", Operand: "=", RTarget: "large", Weight: 100}}
	run(aff)
	dc, class := count()
	if len(h.liveAllocs("web")) != 20 || class["large"] != 20 || dc["dc1"] != 14 || dc["dc2"] != 6 {
		t.Fatalf("with affinity: %v %v, want all 20 on large nodes, 14/6", class, dc)
	}
}
