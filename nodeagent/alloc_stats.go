package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// Measured fields of a task's stats, as Nomad names them.
var (
	measuredMemory = []string{"RSS"}
	measuredCPU    = []string{"Percent", "Total Ticks"}
)

// cpuSamples keeps each launch's last CPU sample, so that the next one
// gives the CPU use over the time between them (Nomad's Percent).
type cpuSamples struct {
	mu   sync.Mutex
	last map[string]cpuSample // by launch (task) ID
}

type cpuSample struct {
	cpuNanos uint64
	at       time.Time
}

// percent returns the CPU use of launch id in percent of one core since
// its previous sample, or since startedAt for the first one, and records
// this sample.
func (c *cpuSamples) percent(id string, u *drivers.ResourceUsage, startedAt time.Time) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]cpuSample{}
	}
	at := u.Timestamp
	if at.IsZero() {
		at = time.Now()
	}
	prev, ok := c.last[id]
	c.last[id] = cpuSample{cpuNanos: u.CPUTotalNanos, at: at}
	if !ok {
		prev = cpuSample{at: startedAt}
	}
	wall := at.Sub(prev.at)
	if prev.at.IsZero() || wall <= 0 || u.CPUTotalNanos < prev.cpuNanos {
		return 0
	}
	return float64(u.CPUTotalNanos-prev.cpuNanos) / float64(wall.Nanoseconds()) * 100
}

// AllocStats samples the CPU and memory use of the alloc's running tasks
// through their drivers (raw_exec: the task's process group from /proc;
// exec: its cgroups), or of task alone when it is named, in Nomad's
// AllocResourceUsage: per task and summed. CPU Percent is of one core
// since the previous sample of the same launch (since it started, for the
// first); TotalTicks is that share of one core's MHz. Tasks that are not
// running are left out; a named task that is not running is an error
// wrapping fs.ErrInvalid, an alloc not on this node one wrapping
// fs.ErrNotExist.
func (a *Agent) AllocStats(ctx context.Context, allocID, task string) (*structs.AllocResourceUsage, error) {
	ar, err := a.allocRunnerOf(allocID)
	if err != nil {
		return nil, err
	}
	trs := ar.taskList()
	if task != "" {
		tr, err := taskRunnerOf(ar, task)
		if err != nil {
			return nil, err
		}
		if _, _, err := tr.runningLaunch(); err != nil {
			return nil, err
		}
		trs = []*taskRunner{tr}
	}
	now := time.Now()
	out := &structs.AllocResourceUsage{
		ResourceUsage: &structs.ResourceUsage{
			MemoryStats: &structs.MemoryStats{Measured: measuredMemory},
			CpuStats:    &structs.CpuStats{Measured: measuredCPU},
		},
		Tasks:     map[string]*structs.TaskResourceUsage{},
		Timestamp: now.UnixNano(),
	}
	mhzPerCore := a.mhzPerCore()
	running := map[string]bool{}
	for _, tr := range trs {
		d, id, err := tr.runningLaunch()
		if err != nil {
			continue
		}
		u, err := d.Stats(ctx, id)
		if errors.Is(err, drivers.ErrTaskNotFound) || errors.Is(err, drivers.ErrNotSupported) {
			continue // ended meanwhile, or nothing to measure
		}
		if err != nil {
			return nil, fmt.Errorf("stats of task %q: %w", tr.task.Name, err)
		}
		running[id] = true
		pct := a.cpu.percent(id, u, tr.startedAt())
		tu := &structs.TaskResourceUsage{
			ResourceUsage: &structs.ResourceUsage{
				MemoryStats: &structs.MemoryStats{RSS: u.MemoryRSSBytes, MaxUsage: u.MemoryMaxBytes, Measured: measuredMemory},
				CpuStats:    &structs.CpuStats{Percent: pct, TotalTicks: pct / 100 * mhzPerCore, Measured: measuredCPU},
			},
			Timestamp: u.Timestamp.UnixNano(),
			Pids:      map[string]*structs.ResourceUsage{},
		}
		if u.MemoryMaxBytes > 0 {
			tu.ResourceUsage.MemoryStats.Measured = []string{"RSS", "Max Usage"}
		}
		out.Tasks[tr.task.Name] = tu
		sum := out.ResourceUsage
		sum.MemoryStats.RSS += u.MemoryRSSBytes
		sum.MemoryStats.MaxUsage += u.MemoryMaxBytes
		sum.CpuStats.Percent += pct
		sum.CpuStats.TotalTicks += tu.ResourceUsage.CpuStats.TotalTicks
	}
	if task == "" {
		a.cpu.forgetAlloc(trs, running)
	}
	return out, nil
}

// forgetAlloc drops the samples of the alloc's launches that no longer run.
func (c *cpuSamples) forgetAlloc(trs []*taskRunner, running map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tr := range trs {
		tr.mu.Lock()
		id := tr.handle.ID()
		tr.mu.Unlock()
		if id != "" && !running[id] {
			delete(c.last, id)
		}
	}
}

// startedAt is when the current launch started (zero if unknown).
func (tr *taskRunner) startedAt() time.Time {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.handle != nil && !tr.handle.StartedAt.IsZero() {
		return tr.handle.StartedAt
	}
	return tr.state.StartedAt
}

// mhzPerCore is the node's CPU MHz per core.
func (a *Agent) mhzPerCore() float64 {
	n := a.Node()
	if n == nil || n.NodeResources == nil || n.NodeResources.Cpu.TotalCpuCores == 0 {
		return 0
	}
	return float64(n.NodeResources.Cpu.CpuShares) / float64(n.NodeResources.Cpu.TotalCpuCores)
}
