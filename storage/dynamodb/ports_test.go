package dynamodb_test

import (
	"slices"
	"testing"

	"github.com/drover-sched/drover/internal/awstest"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

// TestPortsAcrossChunks: an evaluation places a group with a static-free
// network (two dynamic ports) on one node in several transactions (small
// chunks), then a destructive update replaces every alloc: the node's
// host port attributes always equal the ports of its live allocs, no port
// is held twice, and the releases and takes of one node in one chunk do
// not trip over each other.
func TestPortsAcrossChunks(t *testing.T) {
	t.Parallel()
	count := awstest.OnMoto(30, 12)
	h := newHome(t, ddb.Config{ChunkActions: 20})
	_, err := h.service.RegisterNode(ctx, &structs.Node{
		ID: "n1", Name: "n1", Datacenter: "dc1", NodePool: "default", Attributes: map[string]string{"kernel.name": "linux"},
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 100000},
			Memory: structs.NodeMemoryResources{MemoryMB: 1 << 20}, Disk: structs.NodeDiskResources{DiskMB: 1 << 20},
			Networks:       []*structs.NetworkResource{{Mode: "host", Device: "lo", IP: "127.0.0.1"}},
			MinDynamicPort: 20000, MaxDynamicPort: 20000 + 4*count},
		Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	job := testJob("web", count, 10)
	job.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: "host", DynamicPorts: []structs.Port{{Label: "http"}, {Label: "admin"}}}}
	if err := h.eval.Process(ctx, h.register(job)); err != nil {
		t.Fatal(err)
	}
	h.checkPorts(count)
	changed := job.Copy()
	changed.TaskGroups[0].Tasks[0].Env = map[string]string{"V": "2"}
	changed.TaskGroups[0].Update = nil // all at once
	if err := h.eval.Process(ctx, h.register(changed)); err != nil {
		t.Fatal(err)
	}
	h.checkPorts(count)
	for _, a := range h.live("web") {
		if a.JobVersion != 1 {
			t.Fatalf("alloc %s still runs version %d after the update", a.Name, a.JobVersion)
		}
	}
}

// checkPorts asserts that the node's held ports are exactly its live
// allocs' (two each, all different) and the usage counters are exact.
func (h *home) checkPorts(live int) {
	h.t.Helper()
	h.checkInvariants()
	usage, err := h.store.NodesWithUsage(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	allocs, err := h.store.AllocsByNode(ctx, "n1")
	if err != nil {
		h.t.Fatal(err)
	}
	var want []int
	n := 0
	for _, a := range allocs {
		if a.HoldsResources() {
			want = append(want, a.AllocatedResources.HostPorts()...)
			n++
		}
	}
	slices.Sort(want)
	if n != live || len(want) != 2*live || len(slices.Compact(slices.Clone(want))) != len(want) {
		h.t.Fatalf("%d live allocs holding ports %v; want %d allocs with two distinct ports each", n, want, live)
	}
	if !slices.Equal(usage[0].Ports, want) {
		h.t.Fatalf("node holds ports %v, its live allocs %v", usage[0].Ports, want)
	}
}
