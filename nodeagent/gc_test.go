package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

// TestGCMaxAllocs: with gc_max_allocs = 2, finished allocs are destroyed
// oldest first (dir and state gone, never run again) while running allocs
// are never collected, even over the limit; an alloc the control plane
// stops listing is destroyed.
func TestGCMaxAllocs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	cfg := testConfig(t, dir)
	cfg.GCMaxAllocs = 2
	cfg.DevMode = true // stops the services at the end
	ta := startAgent(t, cp, cfg)

	var services []*structs.Allocation
	for i := 0; i < 3; i++ {
		a := testAlloc(testJob(structs.JobTypeService, shTask("s", "while true; do sleep 0.1; done")))
		services = append(services, a)
		cp.addAlloc(a)
	}
	for _, a := range services {
		cp.waitReport(t, a.ID, "service running", hasStatus(structs.AllocClientStatusRunning))
	}
	var batches []*structs.Allocation
	for i := 0; i < 3; i++ {
		a := testAlloc(testJob(structs.JobTypeBatch, shTask("b", `echo run >> "$NOMAD_ALLOC_DIR/../../runs-`+fmt.Sprint(i)+`"`)))
		batches = append(batches, a)
		cp.addAlloc(a)
		cp.waitReport(t, a.ID, "batch complete", hasStatus(structs.AllocClientStatusComplete))
	}
	allocDir := func(a *structs.Allocation) string { return filepath.Join(dir, "alloc", a.ID) }
	for _, a := range batches {
		waitFor(t, 10*time.Second, "finished alloc collected", func() bool { _, err := os.Stat(allocDir(a)); return os.IsNotExist(err) })
	}
	for _, a := range services {
		if _, err := os.Stat(allocDir(a)); err != nil {
			t.Errorf("running alloc collected: %v", err)
		}
		if r := cp.latest(a.ID); r.ClientStatus != structs.AllocClientStatusRunning {
			t.Errorf("running alloc %s", r.ClientStatus)
		}
	}
	stored, err := ta.state.LoadAllocs()
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 3 {
		t.Errorf("%d allocs in local state, want the 3 running ones", len(stored))
	}
	time.Sleep(300 * time.Millisecond) // polls go on: a collected alloc is not run again
	for i := range batches {
		if n := countLines(filepath.Join(dir, "alloc", fmt.Sprintf("runs-%d", i))); n != 1 {
			t.Errorf("batch %d ran %d times", i, n)
		}
	}

	// The control plane stops listing a running alloc: it is stopped and
	// destroyed.
	cp.removeAlloc(services[0].ID)
	waitFor(t, 10*time.Second, "removed alloc destroyed", func() bool {
		_, err := os.Stat(allocDir(services[0]))
		return os.IsNotExist(err)
	})
}
