package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

func evalStatus(t *testing.T, addr, id string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/evaluation/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ev structs.Evaluation
	if err := json.NewDecoder(resp.Body).Decode(&ev); err != nil {
		t.Fatal(err)
	}
	return ev.Status
}

// TestPendingAndDelayedEvalsSurviveRestart: evaluations pending in the
// state file when the agent was down are processed at start; a delayed
// one (persisted with its WaitUntil) runs at its time, not before.
func TestPendingAndDelayedEvalsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "server"), 0o700); err != nil {
		t.Fatal(err)
	}
	store, err := embedded.Open(filepath.Join(dir, "server", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	job := &structs.Job{Region: "global", Namespace: "default", ID: "web", Name: "web", Type: "service", Priority: 50,
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1, Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec",
			Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
	pending := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "web", Type: "service",
		Priority: 50, TriggeredBy: structs.EvalTriggerJobRegister, Status: structs.EvalStatusPending}
	if _, err := store.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, Eval: pending}); err != nil {
		t.Fatal(err)
	}
	wait := time.Now().Add(2 * time.Second)
	delayed := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "web", Type: "service",
		Priority: 50, TriggeredBy: structs.EvalTriggerRetryFailedAlloc, Status: structs.EvalStatusPending, WaitUntil: wait}
	if _, err := store.UpsertEvals(ctx, delayed); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	a, err := New(Config{DataDir: dir, Server: true, HTTPAddr: "127.0.0.1:0", Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent run: %v", err)
		}
	}()
	select {
	case <-a.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("agent not ready")
	}
	deadline := time.Now().Add(10 * time.Second)
	addr := a.Addr()
	for evalStatus(t, addr, pending.ID) == structs.EvalStatusPending {
		if time.Now().After(deadline) {
			t.Fatal("the eval pending at start was not processed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := evalStatus(t, addr, delayed.ID); st != structs.EvalStatusPending || !time.Now().Before(wait) {
		t.Fatalf("delayed eval is %s at %v (wait until %v)", st, time.Now(), wait)
	}
	for evalStatus(t, addr, delayed.ID) == structs.EvalStatusPending {
		if time.Now().After(wait.Add(5 * time.Second)) {
			t.Fatal("the delayed eval did not fire")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if time.Now().Before(wait) {
		t.Fatal("the delayed eval ran before its wait-until")
	}
}
