package nodeagent

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drover-sched/drover/structs"
)

// hostSampler reads the host's use from /proc and keeps the last per-core
// CPU counters, so that each sample covers the time since the previous
// one (the first covers the time since boot).
type hostSampler struct {
	mu   sync.Mutex
	last map[string]cpuTimes
}

// cpuTimes are one core's counters from /proc/stat, in clock ticks.
type cpuTimes struct {
	user, system, idle, total uint64
}

// HostStats samples the node's memory (/proc/meminfo), per-core CPU
// (/proc/stat), uptime (/proc/uptime) and the disks holding the data dir
// and / (statfs), in Nomad's HostStats.
func (a *Agent) HostStats(ctx context.Context) (*structs.HostStats, error) {
	hs := &structs.HostStats{Timestamp: time.Now().UnixNano(), DeviceStats: []any{}}
	mem, err := readMeminfo(a.paths.memInfo)
	if err != nil {
		return nil, fmt.Errorf("host stats: %w", err)
	}
	hs.Memory = mem
	if hs.CPU, err = a.host.cpu("/proc/stat"); err != nil {
		return nil, fmt.Errorf("host stats: %w", err)
	}
	mhz := a.mhzPerCore()
	for _, c := range hs.CPU {
		hs.CPUTicksConsumed += (100 - c.Idle) / 100 * mhz
	}
	if b, err := os.ReadFile("/proc/uptime"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if up, err := strconv.ParseFloat(f[0], 64); err == nil {
				hs.Uptime = uint64(up)
			}
		}
	}
	hs.AllocDirStats, err = diskStats(a.allocsDir())
	if err != nil {
		return nil, fmt.Errorf("host stats: %w", err)
	}
	hs.DiskStats = []*structs.HostDiskStats{hs.AllocDirStats}
	if root, err := diskStats("/"); err == nil && root.Mountpoint != hs.AllocDirStats.Mountpoint {
		hs.DiskStats = append(hs.DiskStats, root)
	}
	return hs, nil
}

func readMeminfo(path string) (*structs.HostMemoryStats, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	kb := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		if n, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			kb[strings.TrimSuffix(f[0], ":")] = n
		}
	}
	m := &structs.HostMemoryStats{Total: kb["MemTotal"] << 10, Free: kb["MemFree"] << 10, Available: kb["MemAvailable"] << 10}
	if m.Total == 0 {
		return nil, fmt.Errorf("%s: no MemTotal", path)
	}
	if m.Available == 0 {
		m.Available = m.Free
	}
	m.Used = m.Total - m.Available
	return m, nil
}

// cpu returns each core's user, system and idle percentages since the
// previous call.
func (h *hostSampler) cpu(path string) ([]*structs.HostCPUStats, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last == nil {
		h.last = map[string]cpuTimes{}
	}
	var out []*structs.HostCPUStats
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// Per-core lines: cpuN user nice system idle iowait irq softirq steal ...
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		var v [10]uint64
		for i := 1; i < len(f) && i <= len(v); i++ {
			v[i-1], _ = strconv.ParseUint(f[i], 10, 64)
		}
		now := cpuTimes{user: v[0] + v[1], system: v[2] + v[5] + v[6], idle: v[3] + v[4]}
		for _, x := range v[:8] {
			now.total += x
		}
		prev := h.last[f[0]]
		h.last[f[0]] = now
		d := float64(now.total - prev.total)
		if now.total <= prev.total {
			d = 0
		}
		c := &structs.HostCPUStats{CPU: f[0], Idle: 100}
		if d > 0 {
			c.User = float64(now.user-prev.user) / d * 100
			c.System = float64(now.system-prev.system) / d * 100
			c.Idle = float64(now.idle-prev.idle) / d * 100
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no per-core cpu lines", path)
	}
	return out, nil
}

// diskStats is the use of the filesystem holding dir.
func diskStats(dir string) (*structs.HostDiskStats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bs := uint64(st.Bsize)
	d := &structs.HostDiskStats{
		Size:      st.Blocks * bs,
		Available: st.Bavail * bs,
		Used:      (st.Blocks - st.Bfree) * bs,
	}
	d.Device, d.Mountpoint = mountOf(dir)
	if d.Size > 0 {
		d.UsedPercent = float64(d.Used) / float64(d.Size) * 100
	}
	if st.Files > 0 {
		d.InodesUsedPercent = float64(st.Files-st.Ffree) / float64(st.Files) * 100
	}
	return d, nil
}

// mountOf finds the mount holding dir in /proc/self/mounts (the longest
// mount point that is a prefix of it).
func mountOf(dir string) (device, mountpoint string) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return "", dir
	}
	abs, _ := filepath.Abs(dir)
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		mp := f[1]
		if (abs == mp || strings.HasPrefix(abs, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(mountpoint) {
			device, mountpoint = f[0], mp
		}
	}
	return device, mountpoint
}
