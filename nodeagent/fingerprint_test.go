package nodeagent

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/drover-sched/drover/structs"
)

func TestFingerprintAttributesAndResources(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	cfg.EnabledDrivers = nil
	cfg.DevMode = true
	a, err := New(newFakeCP(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := a.Node()
	for _, k := range []string{
		"kernel.name", "kernel.version", "os.name", "os.version", "cpu.arch", "cpu.numcores",
		"cpu.modelname", "cpu.frequency", "cpu.totalcompute", "memory.totalbytes",
		"unique.hostname", "driver.raw_exec", "nomad.version", "drover.version",
	} {
		if _, ok := n.Attributes[k]; !ok {
			t.Errorf("attribute %s missing", k)
		}
	}
	if n.Attributes["kernel.name"] != "linux" {
		t.Errorf("kernel.name = %q", n.Attributes["kernel.name"])
	}
	cores, _ := strconv.Atoi(n.Attributes["cpu.numcores"])
	total, _ := strconv.ParseInt(n.Attributes["cpu.totalcompute"], 10, 64)
	freq, _ := strconv.ParseInt(n.Attributes["cpu.frequency"], 10, 64)
	if cores < 1 || freq < 1 || total != freq*int64(cores) {
		t.Errorf("cpu: cores %d freq %d total %d", cores, freq, total)
	}
	mem, _ := strconv.ParseUint(n.Attributes["memory.totalbytes"], 10, 64)
	if mem < 64<<20 {
		t.Errorf("memory.totalbytes = %d", mem)
	}
	r := n.NodeResources
	if r.Cpu.CpuShares != total || int(r.Cpu.TotalCpuCores) != cores {
		t.Errorf("NodeResources.Cpu = %+v", r.Cpu)
	}
	if r.Memory.MemoryMB != int64(mem>>20) {
		t.Errorf("NodeResources.Memory = %+v, want %d MiB", r.Memory, mem>>20)
	}
	if r.Disk.DiskMB <= 0 {
		t.Errorf("NodeResources.Disk = %+v", r.Disk)
	}
	if n.Datacenter != "dc1" || n.NodePool != "default" || n.Name != "test-node" {
		t.Errorf("node placement fields: dc %q pool %q name %q", n.Datacenter, n.NodePool, n.Name)
	}
	if d := n.Drivers[DriverRawExec]; d == nil || !d.Detected || !d.Healthy {
		t.Errorf("raw_exec driver in dev mode: %+v", d)
	}
	if n.SchedulingEligibility != structs.NodeSchedulingEligible {
		t.Errorf("eligibility %q", n.SchedulingEligibility)
	}

	// Outside dev mode raw_exec is off unless enabled.
	cfg2 := testConfig(t, t.TempDir())
	cfg2.EnabledDrivers = nil
	b, err := New(newFakeCP(), cfg2)
	if err != nil {
		t.Fatal(err)
	}
	if nb := b.Node(); nb.Drivers[DriverRawExec] != nil || nb.Attributes["driver.raw_exec"] != "" {
		t.Errorf("raw_exec enabled outside dev mode: %+v", nb.Drivers)
	}
}

func TestNodeIDStableAcrossAgents(t *testing.T) {
	dir := t.TempDir()
	a1, err := New(newFakeCP(), testConfig(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	a2, err := New(newFakeCP(), testConfig(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if a1.NodeID() == "" || a1.NodeID() != a2.NodeID() {
		t.Fatalf("node IDs %q and %q differ on one data dir", a1.NodeID(), a2.NodeID())
	}
	if a2.Node().ID != a1.NodeID() {
		t.Fatalf("node ID not on node")
	}
	a3, err := New(newFakeCP(), testConfig(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if a3.NodeID() == a1.NodeID() {
		t.Fatal("two data dirs share a node ID")
	}
}

func TestFingerprintCPUFrequencySources(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// An arm64 VM: no MHz anywhere in cpuinfo.
	arm := write("arm/cpuinfo", "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n\n"+
		"processor\t: 1\nBogoMIPS\t: 50.00\n")
	x86 := write("x86/cpuinfo", "processor\t: 0\nmodel name\t: Test CPU @ 2.40GHz\ncpu MHz\t\t: 2394.454\n\nprocessor\t: 1\nmodel name\t: Test CPU @ 2.40GHz\ncpu MHz\t\t: 2800.100\n")
	noSys := filepath.Join(dir, "nosys")
	sys := filepath.Join(dir, "sys")
	write("sys/cpu0/cpufreq/cpuinfo_max_freq", "3000000\n")
	write("sys/cpu1/cpufreq/cpuinfo_max_freq", "3200000\n")

	cases := []struct {
		name       string
		paths      hostPaths
		override   int64
		wantPer    int64
		wantTotal  int64
		wantSource string
	}{
		{"cpuinfo", hostPaths{cpuInfo: x86, sysCPU: sys}, 0, 2800, 4 * 2800, cpuFreqSourceCPUInfo},
		{"sysfs", hostPaths{cpuInfo: arm, sysCPU: sys}, 0, 3200, 4 * 3200, cpuFreqSourceSysfs},
		{"fallback", hostPaths{cpuInfo: arm, sysCPU: noSys}, 0, FallbackCPUMHzPerCore, 4 * FallbackCPUMHzPerCore, cpuFreqSourceFallback},
		{"missing cpuinfo", hostPaths{cpuInfo: filepath.Join(dir, "none"), sysCPU: noSys}, 0, FallbackCPUMHzPerCore, 4 * FallbackCPUMHzPerCore, cpuFreqSourceFallback},
		{"override", hostPaths{cpuInfo: arm, sysCPU: noSys}, 9000, FallbackCPUMHzPerCore, 9000, cpuFreqSourceConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := fingerprintCPU(c.paths, 4, c.override)
			if f.mhzPerCore != c.wantPer || f.totalMHz != c.wantTotal || f.source != c.wantSource {
				t.Errorf("got per-core %d total %d source %s; want %d %d %s", f.mhzPerCore, f.totalMHz, f.source, c.wantPer, c.wantTotal, c.wantSource)
			}
			if f.modelName == "" {
				t.Error("empty model name")
			}
		})
	}

	// Through the agent: the fallback reaches the node's attributes and
	// resources, and the config override wins.
	cfg := testConfig(t, t.TempDir())
	a, err := New(newFakeCP(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.paths.cpuInfo, a.paths.sysCPU = arm, noSys
	if err := a.refreshNode(); err != nil {
		t.Fatal(err)
	}
	n := a.Node()
	cores, _ := strconv.ParseInt(n.Attributes["cpu.numcores"], 10, 64)
	if n.Attributes["cpu.frequency"] != strconv.Itoa(FallbackCPUMHzPerCore) || n.NodeResources.Cpu.CpuShares != cores*FallbackCPUMHzPerCore {
		t.Errorf("fallback not applied: %s MHz, %d total", n.Attributes["cpu.frequency"], n.NodeResources.Cpu.CpuShares)
	}
	a.cfg.CPUTotalCompute = 12345
	if err := a.refreshNode(); err != nil {
		t.Fatal(err)
	}
	if n := a.Node(); n.NodeResources.Cpu.CpuShares != 12345 || n.Attributes["cpu.totalcompute"] != "12345" {
		t.Errorf("override not applied: %d", n.NodeResources.Cpu.CpuShares)
	}
	a.cfg.MemoryTotalMB = 1024
	if err := a.refreshNode(); err != nil {
		t.Fatal(err)
	}
	if n := a.Node(); n.NodeResources.Memory.MemoryMB != 1024 || n.Attributes["memory.totalbytes"] != strconv.Itoa(1024<<20) {
		t.Errorf("memory override not applied: %d MiB, %s bytes", n.NodeResources.Memory.MemoryMB, n.Attributes["memory.totalbytes"])
	}
}
