package embedded

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// TestGroupCommit: writes that arrive while a transaction commits share
// the next one; a write that fails there gets its error and leaves
// nothing behind, and the others still commit.
func TestGroupCommit(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "state.db"))
	defer s.Close()
	ctx := context.Background()
	if _, err := s.UpsertNode(ctx, &structs.Node{ID: "n1", Status: structs.NodeStatusReady,
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 1000}, Memory: structs.NodeMemoryResources{MemoryMB: 1000}}}); err != nil {
		t.Fatal(err)
	}
	job := &structs.Job{Namespace: "default", ID: "web", Type: "service", TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1}}}
	res, err := s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, Eval: &structs.Evaluation{ID: "e0", Namespace: "default", JobID: "web"}})
	if err != nil {
		t.Fatal(err)
	}

	// Hold the first write inside its transaction until the others queue.
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.crash = func() error {
		once.Do(func() { close(started); <-release })
		return nil
	}
	before := s.commits.txs.Load()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := s.UpsertEvals(ctx, &structs.Evaluation{ID: "first", Namespace: "default", JobID: "web"}); err != nil {
			t.Error(err)
		}
	}()
	<-started
	const n = 20
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i == 7 { // a stale plan: conflicts inside the shared transaction
				name := structs.AllocName("web", "g", 0)
				a := &structs.Allocation{ID: structs.AllocIDForPlacement("stale", name, false, ""), Namespace: "default", EvalID: "stale",
					Name: name, NodeID: "n1", JobID: "web", TaskGroup: "g", DesiredStatus: structs.AllocDesiredStatusRun}
				_, errs[i] = s.CommitPlan(ctx, &structs.Plan{EvalID: "stale", Namespace: "default", JobID: "web",
					JobModifyIndex: res.Job.JobModifyIndex + 100, Placements: []*structs.Allocation{a}})
				return
			}
			_, errs[i] = s.UpsertEvals(ctx, &structs.Evaluation{ID: fmt.Sprintf("e%02d", i), Namespace: "default", JobID: "web"})
		}(i)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.commits.mu.Lock()
		queued := len(s.commits.queue)
		s.commits.mu.Unlock()
		if queued == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes queued", queued)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()

	// The first transaction, the shared one that met the stale plan, and
	// the shared one without it.
	if txs := s.commits.txs.Load() - before; txs != 3 {
		t.Fatalf("%d write transactions for 21 writes, want 3", txs)
	}
	for i, err := range errs {
		if i == 7 {
			if !errors.Is(err, storage.ErrConflict) {
				t.Fatalf("stale plan in a shared transaction: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if _, err := s.Eval(ctx, fmt.Sprintf("e%02d", i)); err != nil {
			t.Fatalf("eval of write %d: %v", i, err)
		}
	}
	if allocs, _ := s.AllocsByJob(ctx, "default", "web"); len(allocs) != 0 {
		t.Fatalf("the failed write left %d allocs", len(allocs))
	}
}
