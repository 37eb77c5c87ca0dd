package nodeagent

import (
	"context"
	"testing"
	"time"

	"github.com/drover-sched/drover/internal/dockertest"
	"github.com/drover-sched/drover/structs"
)

// BenchmarkDockerAllocStart measures the time from a docker alloc's
// assignment (the alloc appears at the control plane, polled every 5 ms)
// to its container running (the task's Started), the test image present:
//
//	DROVER_REQUIRE_DOCKER=1 go test -run '^$' -bench BenchmarkDockerAllocStart -benchtime 20x ./nodeagent/
//
// ns/op is that time; stopping each alloc is not timed.
func BenchmarkDockerAllocStart(b *testing.B) {
	image := dockertest.Image(b)
	cp := newFakeCP()
	cfg := Config{DataDir: b.TempDir(), NodeName: "bench", EnabledDrivers: []string{"docker"}, PollInterval: 5 * time.Millisecond}
	a, err := New(cp, cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	running := func(id string) bool {
		r := cp.latest(id)
		return r != nil && r.ClientStatus == structs.AllocClientStatusRunning
	}
	var started time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		alloc := testAlloc(testJob(structs.JobTypeService, dockerTask("web", image, "sleep")))
		start := time.Now()
		cp.addAlloc(alloc)
		for !running(alloc.ID) {
			time.Sleep(time.Millisecond)
		}
		b.StopTimer()
		st := cp.latest(alloc.ID).TaskStates["web"]
		started += st.StartedAt.Sub(start)
		cp.stopAlloc(alloc.ID)
		for r := cp.latest(alloc.ID); r == nil || r.ClientStatus != structs.AllocClientStatusComplete; r = cp.latest(alloc.ID) {
			time.Sleep(5 * time.Millisecond)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(started.Microseconds())/1000/float64(b.N), "ms-to-started")
}
