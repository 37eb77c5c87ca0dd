package structs

import "testing"

// TestLegacyResources: an alloc answers Nomad's older Resources (the sum)
// and TaskResources (per task) from its AllocatedResources, as Nomad's
// CLI reads them in `node status` and `alloc status`.
func TestLegacyResources(t *testing.T) {
	a := &Allocation{AllocatedResources: &AllocatedResources{
		Tasks: map[string]*AllocatedTaskResources{
			"a": {Cpu: AllocatedCpuResources{CpuShares: 100}, Memory: AllocatedMemoryResources{MemoryMB: 64}},
			"b": {Cpu: AllocatedCpuResources{CpuShares: 250}, Memory: AllocatedMemoryResources{MemoryMB: 128, MemoryMaxMB: 256}},
		},
		Shared: AllocatedSharedResources{DiskMB: 300}}}
	a.LegacyResources()
	if r := a.Resources; r == nil || r.CPU != 350 || r.MemoryMB != 192 || r.DiskMB != 300 || r.MemoryMaxMB != 256 {
		t.Fatalf("resources: %+v", a.Resources)
	}
	if r := a.TaskResources["b"]; r == nil || r.CPU != 250 || r.MemoryMB != 128 {
		t.Fatalf("task resources: %+v", a.TaskResources)
	}
	(&Allocation{}).LegacyResources() // no allocated resources: nothing to do, no panic
}
