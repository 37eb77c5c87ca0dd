package embedded

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/storage/storagetest"
	"github.com/drover-sched/drover/structs"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return open(t, filepath.Join(t.TempDir(), "state.db"))
	})
}

// TestCrashes: a crash in the embedded home is a write transaction that
// never commits; usage records roll back with the allocs.
func TestCrashes(t *testing.T) {
	storagetest.RunCrashes(t, func(t *testing.T) (storage.Store, func(string) bool) {
		s := open(t, filepath.Join(t.TempDir(), "state.db"))
		var armed atomic.Bool
		s.crash = func() error {
			if armed.CompareAndSwap(true, false) {
				return storagetest.ErrCrash
			}
			return nil
		}
		return s, func(string) bool { armed.Store(true); return true }
	})
}

// TestStateSurvivesReopen: the embedded home keeps its state in a real
// file; what was written is there after the process reopens it.
func TestStateSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	ctx := context.Background()
	job := &structs.Job{Namespace: "default", ID: "web", Type: "service", TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1}}}
	ev := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "web", Status: structs.EvalStatusPending}
	res, err := s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, Eval: ev})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	got, err := s.Job(ctx, "default", "web")
	if err != nil || got.JobModifyIndex != res.Job.JobModifyIndex {
		t.Fatalf("job after reopen: %v %v", got, err)
	}
	if e, err := s.Eval(ctx, ev.ID); err != nil || e.Status != structs.EvalStatusPending {
		t.Fatalf("eval after reopen: %v %v", e, err)
	}
	idx, _ := s.Index(ctx, storage.TableJobs)
	if idx != res.Index {
		t.Fatalf("jobs index after reopen %d, want %d", idx, res.Index)
	}
}

func TestWatchTables(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "state.db"))
	defer s.Close()
	ctx := context.Background()
	nodes := s.WatchTables(storage.TableNodes)
	either := s.WatchTables(storage.TableJobs, storage.TableNodes)
	if _, err := s.UpsertEvals(ctx, &structs.Evaluation{ID: "e1", Namespace: "default", JobID: "j"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-nodes:
		t.Fatal("an eval write woke a nodes watcher")
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := s.UpsertNode(ctx, &structs.Node{ID: "n1"}); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan struct{}{nodes, either} {
		select {
		case <-ch:
		case <-time.After(2 * time.Second):
			t.Fatal("a node write did not wake the watcher")
		}
	}
}

// TestSecondOpenIsRefusedClearly: a state file held by another agent is
// refused (after bbolt's 5 s wait) with a message that says so.
func TestSecondOpenIsRefusedClearly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	defer s.Close()
	_, err := Open(path)
	if err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("second open: %v", err)
	}
}

// TestUsageBuiltForOlderFiles: a state file written before usage records
// existed gets them computed from its allocs when opened.
func TestUsageBuiltForOlderFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	ctx := context.Background()
	if _, err := s.UpsertNode(ctx, &structs.Node{ID: "n1", Status: structs.NodeStatusReady,
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 1000}, Memory: structs.NodeMemoryResources{MemoryMB: 1000}}}); err != nil {
		t.Fatal(err)
	}
	job := &structs.Job{Namespace: "default", ID: "web", Type: "service", TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 2,
		Tasks: []*structs.Task{{Name: "t", Resources: &structs.Resources{CPU: 100, MemoryMB: 10}}}}}}
	res, err := s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, Eval: &structs.Evaluation{ID: "e1", Namespace: "default", JobID: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	var places []*structs.Allocation
	for i := uint(0); i < 2; i++ {
		name := structs.AllocName("web", "g", i)
		places = append(places, &structs.Allocation{ID: structs.AllocIDForPlacement("e1", name, false, ""), Namespace: "default",
			EvalID: "e1", Name: name, NodeID: "n1", JobID: "web", TaskGroup: "g", DesiredStatus: structs.AllocDesiredStatusRun,
			ClientStatus: structs.AllocClientStatusPending, AllocatedResources: structs.AllocatedResourcesFor(res.Job.TaskGroups[0])})
	}
	if _, err := s.CommitPlan(ctx, &structs.Plan{EvalID: "e1", Namespace: "default", JobID: "web", JobModifyIndex: res.Job.JobModifyIndex, Placements: places}); err != nil {
		t.Fatal(err)
	}
	// Make it an older file: no usage records.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bNodeUsage); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Delete(keyUsageBuilt)
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path)
	defer s.Close()
	us, err := s.NodesWithUsage(ctx)
	if err != nil || len(us) != 1 || us[0].Used.CPU != 200 || us[0].Used.MemoryMB != 20 || us[0].Allocs != 2 {
		t.Fatalf("usage after reopening an older file: %+v %v", us, err)
	}
}

// TestJobTypeIndexBuiltForOlderFiles: a state file written before
// jobs_by_type existed gets it built when opened, so its system jobs are
// still found.
func TestJobTypeIndexBuiltForOlderFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path)
	ctx := context.Background()
	for _, j := range []*structs.Job{{Namespace: "default", ID: "agent", Type: structs.JobTypeSystem}, {Namespace: "default", ID: "web", Type: structs.JobTypeService}} {
		j.TaskGroups = []*structs.TaskGroup{{Name: "g", Count: 1, Tasks: []*structs.Task{{Name: "t"}}}}
		if _, err := s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: j, Eval: &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: j.ID}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bJobsByType); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Delete(keyJobTypesBuilt)
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path)
	defer s.Close()
	jobs, err := s.SystemJobs(ctx)
	if err != nil || len(jobs) != 1 || jobs[0].ID != "agent" {
		t.Fatalf("system jobs after reopening an older file: %v %v", jobs, err)
	}
}
