package scheduler_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/controlplane"
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
