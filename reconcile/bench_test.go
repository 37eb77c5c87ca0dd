package reconcile

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

// BenchmarkReconcile measures a service job with count N whose N running
// allocs (on N/10 nodes) all need a destructive update, max_parallel 10:
// the biggest single decision a rolling update asks of the reconciler.
//
// The scale-up case is a new job of count 5,000 with no alloc yet: every
// name is placed, the shape where the cost per placement (its name and
// record) is the whole cost.
//
//	go test -run '^$' -bench BenchmarkReconcile -benchmem -cpu 1 ./reconcile/
func BenchmarkReconcile(b *testing.B) {
	b.Run("scaleup=5000", func(b *testing.B) {
		in := benchInput(5000, 500)
		in.Allocs = nil
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			res := Reconcile(in)
			if len(res.Place) != 5000 {
				b.Fatalf("placements: %d", len(res.Place))
			}
		}
	})
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("allocs=%d", n), func(b *testing.B) {
			in := benchInput(n, n/10)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res := Reconcile(in)
				if len(res.DestructiveUpdate) != 10 {
					b.Fatalf("destructive updates: %d", len(res.DestructiveUpdate))
				}
			}
		})
	}
}

// benchInput builds the benchmark's input: version 1 of a job whose allocs
// all run version 0.
func benchInput(count, nodes int) Input {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	newTG := func() *structs.TaskGroup {
		return &structs.TaskGroup{
			Name: "web", Count: count,
			Update:           &structs.UpdateStrategy{MaxParallel: 10, HealthCheck: "checks", MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute, ProgressDeadline: 10 * time.Minute},
			ReschedulePolicy: &structs.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true},
			Tasks:            []*structs.Task{{Name: "main", Driver: "raw_exec", KillTimeout: 5 * time.Second}},
		}
	}
	old := &structs.Job{ID: "bench", Namespace: "default", Type: structs.JobTypeService, Version: 0, CreateIndex: 10, TaskGroups: []*structs.TaskGroup{newTG()}}
	job := &structs.Job{ID: "bench", Namespace: "default", Type: structs.JobTypeService, Version: 1, CreateIndex: 10, TaskGroups: []*structs.TaskGroup{newTG()}}
	allocs := make([]*structs.Allocation, count)
	for i := range allocs {
		allocs[i] = &structs.Allocation{
			ID:            fmt.Sprintf("%08x-0000-4000-8000-%012x", i*2654435761%(1<<32), i),
			Namespace:     "default",
			Name:          structs.AllocName("bench", "web", uint(i)),
			NodeID:        fmt.Sprintf("node-%04d", i%nodes),
			JobID:         "bench",
			Job:           old,
			TaskGroup:     "web",
			DesiredStatus: structs.AllocDesiredStatusRun,
			ClientStatus:  structs.AllocClientStatusRunning,
			TaskStates:    map[string]*structs.TaskState{"main": {State: structs.TaskStateRunning, StartedAt: now.Add(-time.Hour)}},
			CreateTime:    now.Add(-time.Hour).UnixNano(),
			ModifyTime:    now.Add(-time.Hour).UnixNano(),
		}
	}
	return Input{
		Job: job, Namespace: "default", JobID: "bench", Allocs: allocs,
		TaintedNodes: map[string]*structs.Node{}, EvalID: "eval-bench", EvalPriority: 50, Now: now,
		Update: func(a *structs.Allocation, j *structs.Job, _ *structs.TaskGroup) (UpdateKind, *structs.Allocation) {
			if a.Job.Version == j.Version {
				return UpdateIgnore, nil
			}
			return UpdateDestructive, nil
		},
	}
}
