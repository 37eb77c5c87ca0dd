package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/controlplane"
	evqueue "github.com/drover-sched/drover/events/embedded"
	"github.com/drover-sched/drover/placement"
	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

// BenchmarkEvaluateEmbedded measures the embedded home's evaluate path for
// a new service job: from the registered eval to the committed plan
// (snapshot, candidate nodes, reconcile, placement, one bbolt
// transaction). Each iteration evaluates one more job in the same store,
// so a cost that grew with the other jobs' allocs would show. Design
// target: ≥ 5,000 placements/s on one core at count 5,000 on 1,000 nodes
// (run with -cpu 1).
func BenchmarkEvaluateEmbedded(b *testing.B) {
	for _, tc := range []struct{ count, nodes int }{{1000, 100}, {5000, 1000}, {10000, 1000}} {
		b.Run(fmt.Sprintf("count=%d/nodes=%d", tc.count, tc.nodes), func(b *testing.B) {
			store, err := embedded.Open(filepath.Join(b.TempDir(), "state.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			ctx := context.Background()
			svc := controlplane.New(controlplane.Config{Store: store, Logger: zap.NewNop()})
			for i := 0; i < tc.nodes; i++ {
				id := fmt.Sprintf("node-%04d", i)
				if _, err := svc.RegisterNode(ctx, &structs.Node{ID: id, Name: id, Datacenter: "dc1",
					NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 1 << 40},
						Memory: structs.NodeMemoryResources{MemoryMB: 1 << 40}, Disk: structs.NodeDiskResources{DiskMB: 1 << 40}},
					Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}}); err != nil {
					b.Fatal(err)
				}
			}
			ev := &scheduler.Evaluator{State: store, Reconcile: reconcile.Reconcile, Update: placement.UpdateType,
				RescheduleTracker: reconcile.NextRescheduleTracker}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				resp, err := svc.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job(fmt.Sprintf("bench-%d", i), tc.count, 100)})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := ev.Process(ctx, resp.EvalID); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(tc.count*b.N)/b.Elapsed().Seconds(), "placements/s")
			allocs, _ := store.AllocsByJob(ctx, "default", "bench-0")
			if len(allocs) != tc.count {
				b.Fatalf("placed %d, want %d", len(allocs), tc.count)
			}
		})
	}
}

// memDir returns a temporary directory in memory (/dev/shm) when the
// machine has one, else on disk: there a write never waits for the
// kernel's writeback of other processes' dirty pages.
func memDir(b *testing.B) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "drover-bench-")
		if err == nil {
			b.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return b.TempDir()
}

// BenchmarkEvaluateParallel shows evaluations of different jobs computing
// in parallel: jobs evaluated through the embedded broker by 1 worker,
// then by 2 and by the default number of workers (commits are serialized
// by the store), in two shapes: 20 jobs of count 500 on 500 nodes (the
// commit is most of the work) and 40 jobs of count 100 on 5,000 nodes
// (reading and sampling the fleet weighs more). The store skips fsync
// (embedded.Options.NoSync) and lives in memory (memDir) so that the
// figure is the computation's, not the disk's latency (on a shared
// machine the latter dominates and varies with the neighbours). Compare
// placements/s; "cores" is the CPU time the run got per second of wall
// clock, which the neighbours' load caps.
func BenchmarkEvaluateParallel(b *testing.B) {
	for _, shape := range []struct{ jobs, count, nodes int }{{20, 500, 500}, {40, 100, 5000}} {
		for _, workers := range []int{1, 2, scheduler.DefaultWorkers()} {
			b.Run(fmt.Sprintf("jobs=%d,count=%d,nodes=%d/workers=%d", shape.jobs, shape.count, shape.nodes, workers), func(b *testing.B) {
				benchParallel(b, shape.jobs, shape.count, shape.nodes, workers)
			})
		}
	}
}

func benchParallel(b *testing.B, jobs, count, nodes, workers int) {
	store, err := embedded.OpenWith(filepath.Join(memDir(b), "state.db"), embedded.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	broker := evqueue.New(evqueue.Config{})
	defer broker.Close()
	svc := controlplane.New(controlplane.Config{Store: store, Queue: broker, Logger: zap.NewNop()})
	for i := 0; i < nodes; i++ {
		id := fmt.Sprintf("node-%04d", i)
		if _, err := svc.RegisterNode(ctx, &structs.Node{ID: id, Name: id, Datacenter: "dc1",
			NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 1 << 40},
				Memory: structs.NodeMemoryResources{MemoryMB: 1 << 40}, Disk: structs.NodeDiskResources{DiskMB: 1 << 40}},
			Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}}); err != nil {
			b.Fatal(err)
		}
	}
	ev := &scheduler.Evaluator{State: store, Queue: broker, Reconcile: reconcile.Reconcile, Update: placement.UpdateType,
		RescheduleTracker: reconcile.NextRescheduleTracker}
	idle := func() bool { s := broker.Stats(); return s.Ready+s.Waiting+s.Unacked+s.Delayed == 0 }
	var cpu time.Duration // the process's CPU time in the timed part
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The jobs are registered first (their evals wait in the
		// broker), so that only the evaluations are timed.
		b.StopTimer()
		for j := 0; j < jobs; j++ {
			if _, err := svc.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job(fmt.Sprintf("par-%d-%d", i, j), count, 100)}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		before := cpuTime()
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { scheduler.RunWorkers(wctx, workers, broker, ev, zap.NewNop()); close(done) }()
		for !idle() {
			time.Sleep(time.Millisecond)
		}
		stop()
		<-done
		cpu += cpuTime() - before
	}
	b.StopTimer()
	b.ReportMetric(float64(jobs*count*b.N)/b.Elapsed().Seconds(), "placements/s")
	b.ReportMetric(cpu.Seconds()/b.Elapsed().Seconds(), "cores")
	b.ReportMetric(float64(jobs*count*b.N)/cpu.Seconds(), "placements/cpu-s")
	if allocs, _ := store.AllocsByJob(ctx, "default", "par-0-0"); len(allocs) != count {
		b.Fatalf("placed %d, want %d", len(allocs), count)
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
