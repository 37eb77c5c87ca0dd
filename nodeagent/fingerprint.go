package nodeagent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/drover-sched/drover/structs"
)

// FallbackCPUMHzPerCore is the frequency assumed for each core when
// neither /proc/cpuinfo nor sysfs cpufreq reports one (common on VMs and
// arm64). It is deliberately conservative; set Config.CPUTotalCompute to
// state the node's real capacity.
const FallbackCPUMHzPerCore = 1000

// Sources of the CPU frequency, in the order they are tried.
const (
	cpuFreqSourceCPUInfo  = "cpuinfo"
	cpuFreqSourceSysfs    = "sysfs"
	cpuFreqSourceFallback = "fallback"
	cpuFreqSourceConfig   = "config"
)

// hostPaths are the files fingerprinting reads; tests point them elsewhere.
type hostPaths struct {
	cpuInfo   string // /proc/cpuinfo
	sysCPU    string // /sys/devices/system/cpu
	memInfo   string // /proc/meminfo
	osRelease string // /etc/os-release
}

var defaultHostPaths = hostPaths{
	cpuInfo:   "/proc/cpuinfo",
	sysCPU:    "/sys/devices/system/cpu",
	memInfo:   "/proc/meminfo",
	osRelease: "/etc/os-release",
}

// cpuFacts is what fingerprinting learns about the CPU.
type cpuFacts struct {
	cores      int
	modelName  string
	mhzPerCore int64
	totalMHz   int64
	source     string
}

// fingerprintCPU reads core count, model and frequency. cores <= 0 means
// runtime.NumCPU; totalOverride > 0 replaces the computed total (MHz).
func fingerprintCPU(p hostPaths, cores int, totalOverride int64) cpuFacts {
	if cores <= 0 {
		cores = runtime.NumCPU()
	}
	f := cpuFacts{cores: cores}
	model, mhz := parseCPUInfo(p.cpuInfo)
	f.modelName = model
	if f.modelName == "" {
		f.modelName = "unknown"
	}
	switch {
	case mhz > 0:
		f.mhzPerCore, f.source = mhz, cpuFreqSourceCPUInfo
	default:
		if s := sysfsMaxMHz(p.sysCPU); s > 0 {
			f.mhzPerCore, f.source = s, cpuFreqSourceSysfs
		} else {
			f.mhzPerCore, f.source = FallbackCPUMHzPerCore, cpuFreqSourceFallback
		}
	}
	f.totalMHz = f.mhzPerCore * int64(cores)
	if totalOverride > 0 {
		f.totalMHz, f.source = totalOverride, cpuFreqSourceConfig
	}
	return f
}

// parseCPUInfo returns the CPU model and the highest "cpu MHz" listed in a
// /proc/cpuinfo file (0 when none is).
func parseCPUInfo(path string) (model string, mhz int64) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0
	}
	var best float64
	var part string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name", "Model Name", "cpu model":
			if model == "" {
				model = v
			}
		case "Hardware", "Model":
			if part == "" {
				part = v
			}
		case "cpu MHz", "CPU MHz", "clock":
			v = strings.TrimSuffix(strings.TrimSpace(strings.TrimSuffix(v, "MHz")), "MHz")
			if x, err := strconv.ParseFloat(v, 64); err == nil && x > best {
				best = x
			}
		}
	}
	if model == "" {
		model = part
	}
	return model, int64(math.Round(best))
}

// sysfsMaxMHz returns the highest cpufreq cpuinfo_max_freq over the CPUs
// under dir (sysfs reports kHz), or 0.
func sysfsMaxMHz(dir string) int64 {
	matches, _ := filepath.Glob(filepath.Join(dir, "cpu[0-9]*", "cpufreq", "cpuinfo_max_freq"))
	var best int64
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		if khz, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && khz/1000 > best {
			best = khz / 1000
		}
	}
	return best
}

// memTotalBytes reads MemTotal from a meminfo file, falling back to
// sysinfo(2).
func memTotalBytes(path string) (uint64, error) {
	if b, err := os.ReadFile(path); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				fields := strings.Fields(rest)
				if len(fields) >= 1 {
					if kb, err := strconv.ParseUint(fields[0], 10, 64); err == nil {
						return kb * 1024, nil
					}
				}
			}
		}
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, fmt.Errorf("read total memory: %w", err)
	}
	return uint64(si.Totalram) * uint64(si.Unit), nil
}

// osRelease reads ID and VERSION_ID from an os-release file.
func osRelease(path string) (name, version string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return runtime.GOOS, ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"'`)
		switch k {
		case "ID":
			name = v
		case "VERSION_ID":
			version = v
		}
	}
	if name == "" {
		name = runtime.GOOS
	}
	return name, version
}

// diskFree returns free and total bytes of the filesystem holding dir.
func diskFree(dir string) (free, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

func utsString(b [65]byte) string {
	if i := bytes.IndexByte(b[:], 0); i >= 0 {
		return string(b[:i])
	}
	return string(b[:])
}

// fingerprint describes this machine: the node's attributes and the
// resources it offers.
func fingerprint(cfg *Config, p hostPaths, drivers map[string]*structs.DriverInfo) (map[string]string, *structs.NodeResources, error) {
	attrs := map[string]string{}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return nil, nil, fmt.Errorf("uname: %w", err)
	}
	attrs["kernel.name"] = runtime.GOOS
	attrs["kernel.version"] = utsString(uts.Release)
	attrs["kernel.arch"] = utsString(uts.Machine)
	attrs["os.name"], attrs["os.version"] = osRelease(p.osRelease)
	attrs["cpu.arch"] = runtime.GOARCH

	cpu := fingerprintCPU(p, 0, cfg.CPUTotalCompute)
	attrs["cpu.numcores"] = strconv.Itoa(cpu.cores)
	attrs["cpu.modelname"] = cpu.modelName
	attrs["cpu.frequency"] = strconv.FormatInt(cpu.mhzPerCore, 10)
	attrs["cpu.totalcompute"] = strconv.FormatInt(cpu.totalMHz, 10)

	mem, err := memTotalBytes(p.memInfo)
	if err != nil {
		return nil, nil, err
	}
	attrs["memory.totalbytes"] = strconv.FormatUint(mem, 10)

	free, total, err := diskFree(cfg.DataDir)
	if err != nil {
		return nil, nil, err
	}
	attrs["unique.storage.bytesfree"] = strconv.FormatUint(free, 10)
	attrs["unique.storage.bytestotal"] = strconv.FormatUint(total, 10)
	attrs["unique.storage.volume"] = cfg.DataDir

	host, err := os.Hostname()
	if err != nil {
		return nil, nil, fmt.Errorf("hostname: %w", err)
	}
	attrs["unique.hostname"] = host
	attrs["drover.version"] = cfg.Version
	// Nomad's CLI and API clients read the agent version from here.
	attrs["nomad.version"] = cfg.Version
	for _, d := range drivers {
		for k, v := range d.Attributes {
			attrs[k] = v
		}
	}

	memMB := int64(mem / (1 << 20))
	if cfg.MemoryTotalMB > 0 {
		memMB = cfg.MemoryTotalMB
		attrs["memory.totalbytes"] = strconv.FormatInt(memMB<<20, 10)
	}
	res := &structs.NodeResources{
		Cpu:    structs.NodeCpuResources{CpuShares: cpu.totalMHz, TotalCpuCores: uint16(min(cpu.cores, math.MaxUint16))},
		Memory: structs.NodeMemoryResources{MemoryMB: memMB},
		Disk:   structs.NodeDiskResources{DiskMB: int64(free / (1 << 20))},
	}
	return attrs, res, nil
}

// loadOrCreateNodeID returns the node ID stored at path, generating and
// storing one the first time.
func loadOrCreateNodeID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if validUUID(id) {
			return id, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read node ID: %w", err)
	}
	id := structs.GenerateUUID()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write node ID: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write node ID: %w", err)
	}
	return id, nil
}

func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}
