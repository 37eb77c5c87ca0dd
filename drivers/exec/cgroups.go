package exec

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drover-sched/drover/drivers"
)

// Names of drover's cgroups: v1 <hierarchy>/drover/<task ID>, v2
// /sys/fs/cgroup/drover.slice/<task ID> (Nomad's are nomad and
// nomad.slice).
const (
	cgroupParentV1 = "drover"
	cgroupParentV2 = "drover.slice"
)

// cgroups is the host's cgroup layout: v2 (unified) when the root of
// /sys/fs/cgroup is cgroup2, else the v1 hierarchies of the controllers
// drover uses.
type cgroups struct {
	v2 bool
	// root is the v2 mount point.
	root string
	// v1 maps a controller (memory, cpu, cpuacct) to its hierarchy's
	// mount point.
	v1 map[string]string
}

// detectCgroups reads the cgroup mounts from mountinfo.
func detectCgroups(mountinfo string) (*cgroups, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &cgroups{v1: map[string]string{}}
	var v2root string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+3 > len(fields) || len(fields) < 5 {
			continue
		}
		mnt, fstype, super := fields[4], fields[sep+1], fields[sep+3]
		switch fstype {
		case "cgroup2":
			if mnt == "/sys/fs/cgroup" {
				v2root = mnt
			}
		case "cgroup":
			for _, opt := range strings.Split(super, ",") {
				if opt == "memory" || opt == "cpu" || opt == "cpuacct" {
					c.v1[opt] = mnt
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if v2root != "" {
		return &cgroups{v2: true, root: v2root}, nil
	}
	for _, ctl := range []string{"memory", "cpu", "cpuacct"} {
		if c.v1[ctl] == "" {
			return nil, fmt.Errorf("no cgroup v1 %s hierarchy and no cgroup v2 at /sys/fs/cgroup", ctl)
		}
	}
	return c, nil
}

// version names the layout for the fingerprint.
func (c *cgroups) version() string {
	if c.v2 {
		return "v2"
	}
	return "v1"
}

// paths are the task's cgroup directories, one per hierarchy.
func (c *cgroups) paths(taskID string) []string {
	if c.v2 {
		return []string{filepath.Join(c.root, cgroupParentV2, taskID)}
	}
	seen := map[string]bool{}
	var out []string
	for _, ctl := range []string{"memory", "cpu", "cpuacct"} {
		p := filepath.Join(c.v1[ctl], cgroupParentV1, taskID)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func (c *cgroups) dir(ctl, taskID string) string {
	if c.v2 {
		return filepath.Join(c.root, cgroupParentV2, taskID)
	}
	return filepath.Join(c.v1[ctl], cgroupParentV1, taskID)
}

func writeFile(dir, name, value string) error {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0o644); err != nil {
		return fmt.Errorf("cgroup %s: %w", name, err)
	}
	return nil
}

// create makes the task's cgroups with its limits: memory (the hard limit
// is memory_max when set, the soft one memory) and CPU shares from its MHz,
// as Nomad sets them.
func (c *cgroups) create(taskID string, r drivers.Resources) ([]string, error) {
	limit := int64(r.LimitMB()) << 20
	soft := int64(r.MemoryMB) << 20
	shares := max(r.CPU, 2)
	paths := c.paths(taskID)
	if c.v2 {
		for _, dir := range []string{c.root, filepath.Join(c.root, cgroupParentV2)} {
			if dir != c.root {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return nil, fmt.Errorf("create cgroup: %w", err)
				}
			}
			if err := writeFile(dir, "cgroup.subtree_control", "+memory +cpu"); err != nil {
				return nil, err
			}
		}
		dir := paths[0]
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create cgroup: %w", err)
		}
		// runc's conversion of shares (2..262144) to a weight (1..10000).
		weight := 1 + ((int64(shares)-2)*9999)/262142
		for name, v := range map[string]string{
			"memory.max": strconv.FormatInt(limit, 10), "cpu.weight": strconv.FormatInt(weight, 10),
		} {
			if err := writeFile(dir, name, v); err != nil {
				c.remove(taskID)
				return nil, err
			}
		}
		if limit > soft {
			_ = writeFile(dir, "memory.low", strconv.FormatInt(soft, 10))
		}
		_ = writeFile(dir, "memory.swap.max", "0")
		return paths, nil
	}
	for _, dir := range paths {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			c.remove(taskID)
			return nil, fmt.Errorf("create cgroup: %w", err)
		}
	}
	mem, cpu := c.dir("memory", taskID), c.dir("cpu", taskID)
	if err := writeFile(mem, "memory.limit_in_bytes", strconv.FormatInt(limit, 10)); err != nil {
		c.remove(taskID)
		return nil, err
	}
	// No swapping past the limit, where swap is accounted.
	_ = writeFile(mem, "memory.memsw.limit_in_bytes", strconv.FormatInt(limit, 10))
	if limit > soft {
		_ = writeFile(mem, "memory.soft_limit_in_bytes", strconv.FormatInt(soft, 10))
	}
	if err := writeFile(cpu, "cpu.shares", strconv.Itoa(shares)); err != nil {
		c.remove(taskID)
		return nil, err
	}
	return paths, nil
}

// statValue reads "key N" from a flat-keyed cgroup file.
func statValue(file, key string) (uint64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == key {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

func readUint(file string) (uint64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// oomKilled reports whether the kernel OOM-killed a process of the task's
// cgroup.
func (c *cgroups) oomKilled(taskID string) bool {
	var n uint64
	if c.v2 {
		n, _ = statValue(filepath.Join(c.dir("memory", taskID), "memory.events"), "oom_kill")
	} else {
		n, _ = statValue(filepath.Join(c.dir("memory", taskID), "memory.oom_control"), "oom_kill")
	}
	return n > 0
}

// usage samples the task's memory (resident, without page cache; and the
// peak) and its CPU time.
func (c *cgroups) usage(taskID string) (*drivers.ResourceUsage, error) {
	mem := c.dir("memory", taskID)
	u := &drivers.ResourceUsage{Timestamp: time.Now()}
	if c.v2 {
		rss, ok := statValue(filepath.Join(mem, "memory.stat"), "anon")
		if !ok {
			return nil, fmt.Errorf("read memory.stat of task %s", taskID)
		}
		u.MemoryRSSBytes = rss
		u.MemoryMaxBytes, _ = readUint(filepath.Join(mem, "memory.peak"))
		usec, _ := statValue(filepath.Join(mem, "cpu.stat"), "usage_usec")
		u.CPUTotalNanos = usec * 1000
		return u, nil
	}
	rss, ok := statValue(filepath.Join(mem, "memory.stat"), "total_rss")
	if !ok {
		return nil, fmt.Errorf("read memory.stat of task %s", taskID)
	}
	u.MemoryRSSBytes = rss
	u.MemoryMaxBytes, _ = readUint(filepath.Join(mem, "memory.max_usage_in_bytes"))
	u.CPUTotalNanos, _ = readUint(filepath.Join(c.dir("cpuacct", taskID), "cpuacct.usage"))
	return u, nil
}

// procs lists the pids in the task's cgroups.
func (c *cgroups) procs(taskID string) []int {
	var out []int
	for _, dir := range c.paths(taskID) {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// remove kills whatever is left in the task's cgroups and removes them.
func (c *cgroups) remove(taskID string) error {
	var errs []error
	for _, dir := range c.paths(taskID) {
		for i := 0; ; i++ {
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			if i == 50 {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
				break
			}
			for _, pid := range c.procs(taskID) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}
