// Package scalebench runs drover's embedded home at scale and reports
// figures (issue 10): the C1M shape (many nodes registered directly in the
// store, many large service jobs submitted through the HTTP API and
// evaluated by the server's own workers) and the burst shape (thousands
// of one-alloc jobs registered as fast as the API takes them, then
// purged). It starts a real server (package agent, bbolt file, broker,
// workers, HTTP API on 127.0.0.1) in this process and talks to it with
// Nomad's Go client. It measures; it asserts nothing but completion.
package scalebench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/agent"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

// server is a running embedded server and a Nomad API client of it.
type server struct {
	agent  *agent.Agent
	client *api.Client
	stop   func() error
	dir    string
}

// startServer runs a server (no client) with its state under dir.
// Nodes are registered directly in the store and never heartbeat, so the
// heartbeat TTL is a day.
func startServer(dir string, workers int) (*server, error) {
	a, err := agent.New(agent.Config{DataDir: dir, Server: true, HTTPAddr: "127.0.0.1:0", Workers: workers,
		HeartbeatTTL: 24 * time.Hour})
	if err != nil {
		return nil, err
	}
	if err := a.Listen(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select {
	case <-a.Ready():
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("server stopped at start: %w", err)
	}
	cfg := api.DefaultConfig()
	cfg.Address = "http://" + a.ListenAddr()
	client, err := api.NewClient(cfg)
	if err != nil {
		cancel()
		<-done
		return nil, err
	}
	return &server{agent: a, client: client, dir: dir, stop: func() error { cancel(); return <-done }}, nil
}

// addNodes registers n ready nodes with the given capacity directly in
// the store, in parallel (concurrent writes share commits).
func addNodes(ctx context.Context, s *embedded.Store, n int, cpu, memMB, diskMB int64) error {
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	work := make(chan int)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				id := fmt.Sprintf("bench-node-%05d", i)
				_, err := s.UpsertNode(ctx, &structs.Node{ID: id, Name: id, Datacenter: "dc1", NodePool: structs.DefaultNodePool,
					Status: structs.NodeStatusReady, Attributes: map[string]string{"kernel.name": "linux", "unique.hostname": id},
					NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: cpu},
						Memory: structs.NodeMemoryResources{MemoryMB: memMB}, Disk: structs.NodeDiskResources{DiskMB: diskMB}},
					Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}})
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("register nodes: %w", err)
	default:
		return nil
	}
}

// serviceJob is a Nomad service job of one group of count allocs, each
// 50 MHz, 64 MiB and 150 MiB of disk (room for its logs).
func serviceJob(id string, count int) *api.Job {
	str := func(s string) *string { return &s }
	num := func(n int) *int { return &n }
	return &api.Job{ID: str(id), Name: str(id), Type: str("service"), Datacenters: []string{"dc1"},
		TaskGroups: []*api.TaskGroup{{Name: str("web"), Count: num(count), EphemeralDisk: &api.EphemeralDisk{SizeMB: num(allocDiskMB)},
			Tasks: []*api.Task{{Name: "server", Driver: "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep", "args": []string{"3600"}},
				Resources: &api.Resources{CPU: num(50), MemoryMB: num(64)}}}}}}
}

// inParallel runs fn(i) for i in [0, n) on width goroutines and returns
// the first error.
func inParallel(n, width int, fn func(i int) error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	work := make(chan int)
	for w := 0; w < width; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	return first
}

// placed counts the allocs holding resources, from the node usage
// records (every bench node is ready: the candidate read lists them all,
// without copying them).
func placed(ctx context.Context, s *embedded.Store) (int, error) {
	us, err := s.CandidateNodes(ctx, storage.NodeQuery{NodePool: structs.NodePoolAll})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, u := range us {
		n += u.Allocs
	}
	return n, nil
}

// waitPlaced polls until placed reaches want (or ctx ends), calling each
// (if set) after every poll with the count.
func waitPlaced(ctx context.Context, s *embedded.Store, want func(n int) bool, each func(n int)) error {
	for {
		n, err := placed(ctx, s)
		if err != nil {
			return err
		}
		if each != nil {
			each(n)
		}
		if want(n) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for placements (%d so far): %w", n, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// rssMiB is this process's resident set size in MiB (Linux), or 0.
func rssMiB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// cpuSeconds is the CPU time (user and system) this process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// storeMiB is the size of the server's state file in MiB.
func storeMiB(dir string) float64 {
	fi, err := os.Stat(filepath.Join(dir, "server", "state.db"))
	if err != nil {
		return 0
	}
	return float64(fi.Size()) / (1 << 20)
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// allocDiskMB is each bench alloc's ephemeral disk: more than its logs'
// 100 MiB, as validation requires.
const allocDiskMB = 150
