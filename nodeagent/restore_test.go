package nodeagent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/structs"
)

func TestRestoreReattachesRunningTask(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	a1 := startAgent(t, cp, testConfig(t, dir))

	job := testJob(structs.JobTypeService, shTask("server", `echo run >> "$NOMAD_ALLOC_DIR/data/runs"; while true; do sleep 0.1; done`))
	job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 2, Interval: time.Hour, Delay: 100 * time.Millisecond, Mode: structs.RestartPolicyModeFail}
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	rec := taskRecord(t, dir, alloc.ID, "server")

	// The agent goes away without stopping its tasks (as after a crash).
	a1.stop(t)
	if !processRunning(rec.Pid, rec.StartTicks) {
		t.Fatal("task died with the agent")
	}
	cp.clearReports()

	startAgent(t, cp, testConfig(t, dir))
	rep := cp.waitReport(t, alloc.ID, "restored alloc running", hasStatus(structs.AllocClientStatusRunning))
	st := rep.TaskStates["server"]
	if st.Restarts != 0 || countEvents(st, structs.TaskStarted) != 1 || countEvents(st, structs.TaskReceived) != 1 {
		t.Fatalf("re-attach must not restart: restarts %d events %v", st.Restarts, eventTypes(st))
	}
	if got := taskRecord(t, dir, alloc.ID, "server"); got.Pid != rec.Pid {
		t.Fatalf("task pid %d after restore, want %d", got.Pid, rec.Pid)
	}
	runs := filepath.Join(dir, "alloc", alloc.ID, "alloc", "data", "runs")
	time.Sleep(200 * time.Millisecond)
	if n := countLines(runs); n != 1 {
		t.Fatalf("task ran %d times; restore started a second copy", n)
	}

	// The restored task is really watched: kill it by hand.
	if err := syscall.Kill(rec.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	rep = cp.waitReport(t, alloc.ID, "restarted after a kill by hand", func(a *structs.Allocation) bool {
		s := a.TaskStates["server"]
		return s.Restarts == 1 && s.State == structs.TaskStateRunning
	})
	st = rep.TaskStates["server"]
	if term := findEvent(st, structs.TaskTerminated); term == nil || term.Signal != int(syscall.SIGKILL) {
		t.Errorf("Terminated event %+v", term)
	}
	if ev := findEvent(st, structs.TaskRestarting); ev == nil || ev.RestartReason != ReasonWithinPolicy {
		t.Errorf("Restarting event %+v", ev)
	}
	waitFor(t, 5*time.Second, "second run", func() bool { return countLines(runs) == 2 })
	if got := taskRecord(t, dir, alloc.ID, "server"); got.Pid == rec.Pid {
		t.Error("restart reused the dead pid record")
	}

	cp.stopAlloc(alloc.ID)
	cp.waitReport(t, alloc.ID, "stopped", hasStatus(structs.AllocClientStatusComplete))
	waitFor(t, 5*time.Second, "no process left", func() bool { return len(procsReferencing(dir)) == 0 })
}

func TestRestoreTaskThatEndedWhileAgentDown(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	a1 := startAgent(t, cp, testConfig(t, dir))

	// Each task records its runs, then waits for a "go" file and exits
	// with the given code.
	waiter := func(code string) *structs.Task {
		return shTask("work", `echo run >> "$NOMAD_ALLOC_DIR/data/runs"
while [ ! -f "$NOMAD_ALLOC_DIR/data/go" ]; do sleep 0.05; done
exit `+code)
	}
	okAlloc := testAlloc(testJob(structs.JobTypeBatch, waiter("0")))
	badAlloc := testAlloc(testJob(structs.JobTypeBatch, waiter("4")))
	retryJob := testJob(structs.JobTypeBatch, waiter("4"))
	retryJob.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 1, Interval: time.Hour, Delay: 50 * time.Millisecond, Mode: structs.RestartPolicyModeFail}
	retryAlloc := testAlloc(retryJob)
	doneAlloc := testAlloc(testJob(structs.JobTypeBatch, shTask("work", `echo run >> "$NOMAD_ALLOC_DIR/data/runs"`)))
	all := []*structs.Allocation{okAlloc, badAlloc, retryAlloc, doneAlloc}
	for _, a := range all {
		cp.addAlloc(a)
	}
	for _, a := range all[:3] {
		cp.waitReport(t, a.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	}
	cp.waitReport(t, doneAlloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	a1.stop(t)

	// The tasks end while no agent runs.
	dataDir := func(a *structs.Allocation) string { return filepath.Join(dir, "alloc", a.ID, "alloc", "data") }
	for _, a := range all[:3] {
		if err := os.WriteFile(filepath.Join(dataDir(a), "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range all[:3] {
		exitFile := filepath.Join(dir, "alloc", a.ID, "work", supervisorDirName, supervisorExitFile)
		waitFor(t, 10*time.Second, "exit recorded by the supervisor", func() bool { _, err := os.Stat(exitFile); return err == nil })
	}
	cp.clearReports()

	startAgent(t, cp, testConfig(t, dir))
	rep := cp.waitReport(t, okAlloc.ID, "exit 0 while down → complete", hasStatus(structs.AllocClientStatusComplete))
	if term := findEvent(rep.TaskStates["work"], structs.TaskTerminated); term == nil || term.ExitCode != 0 {
		t.Errorf("ok: Terminated %+v", term)
	}
	rep = cp.waitReport(t, badAlloc.ID, "exit 4 while down → failed", hasStatus(structs.AllocClientStatusFailed))
	st := rep.TaskStates["work"]
	if term := findEvent(st, structs.TaskTerminated); term == nil || term.ExitCode != 4 {
		t.Errorf("bad: Terminated %+v", term)
	}
	if findEvent(st, structs.TaskNotRestarting) == nil || !st.Failed {
		t.Errorf("bad: events %v", eventTypes(st))
	}
	// With a restart left, the policy applies: one more run, then failed.
	rep = cp.waitReport(t, retryAlloc.ID, "retry alloc failed after its restart", hasStatus(structs.AllocClientStatusFailed))
	if st := rep.TaskStates["work"]; st.Restarts != 1 || countEvents(st, structs.TaskTerminated) != 2 {
		t.Errorf("retry: restarts %d events %v", st.Restarts, eventTypes(st))
	}
	if n := countLines(filepath.Join(dataDir(retryAlloc), "runs")); n != 2 {
		t.Errorf("retry alloc ran %d times, want 2", n)
	}
	// Dead tasks are not started again.
	time.Sleep(300 * time.Millisecond)
	for _, a := range []*structs.Allocation{okAlloc, badAlloc, doneAlloc} {
		if n := countLines(filepath.Join(dataDir(a), "runs")); n != 1 {
			t.Errorf("alloc %s ran %d times, want 1", a.Name, n)
		}
	}
	if r := cp.latest(doneAlloc.ID); r != nil && r.ClientStatus != structs.AllocClientStatusComplete {
		t.Errorf("completed alloc reported %s after restore", r.ClientStatus)
	}
	waitFor(t, 5*time.Second, "no process left", func() bool { return len(procsReferencing(dir)) == 0 })
}

func TestRestoreUnreadableState(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, path, allocID string)
		want    string
	}{
		{"garbage file", func(t *testing.T, path, _ string) {
			if err := os.WriteFile(path, bytes.Repeat([]byte{0xab}, 64<<10), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "state"},
		{"undecodable alloc record", func(t *testing.T, path, allocID string) {
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			err = db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketAllocs).Bucket([]byte(allocID)).Put(keyAlloc, []byte("{not json"))
			})
			if err != nil {
				t.Fatal(err)
			}
		}, "local state unreadable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			guardProcesses(t, dir)
			cp := newFakeCP()
			a1 := startAgent(t, cp, testConfig(t, dir))
			alloc := testAlloc(testJob(structs.JobTypeService, shTask("server", `echo run >> "$NOMAD_ALLOC_DIR/data/runs"; while true; do sleep 0.1; done`)))
			cp.addAlloc(alloc)
			cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
			rec := taskRecord(t, dir, alloc.ID, "server")
			a1.stop(t)

			tc.corrupt(t, filepath.Join(dir, "client", "state.db"), alloc.ID)
			cp.clearReports()
			startAgent(t, cp, testConfig(t, dir))
			rep := cp.waitReport(t, alloc.ID, "alloc failed", hasStatus(structs.AllocClientStatusFailed))
			if !strings.Contains(rep.ClientDescription, tc.want) {
				t.Errorf("description %q lacks %q", rep.ClientDescription, tc.want)
			}
			// Nothing of the alloc keeps running unwatched, and no
			// second copy was started.
			waitFor(t, 5*time.Second, "old task killed", func() bool { return !processRunning(rec.Pid, rec.StartTicks) })
			waitFor(t, 5*time.Second, "no process left", func() bool { return len(procsReferencing(dir)) == 0 })
			if n := countLines(filepath.Join(dir, "alloc", alloc.ID, "alloc", "data", "runs")); n != 1 {
				t.Errorf("task ran %d times", n)
			}
			if st := rep.TaskStates["server"]; tc.name == "garbage file" && (st == nil || findEvent(st, structs.TaskRestoreFailed) == nil) {
				t.Errorf("task state %+v", st)
			}
		})
	}
}

func TestRestoreWithDeadLeaderStopsFollower(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	a1 := startAgent(t, cp, testConfig(t, dir))

	leader := shTask("leader", `while [ ! -f "$NOMAD_ALLOC_DIR/data/go" ]; do sleep 0.05; done`)
	leader.Leader = true
	alloc := testAlloc(testJob(structs.JobTypeBatch, leader, shTask("follower", "while true; do sleep 0.1; done")))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusRunning && a.TaskStates["follower"].State == structs.TaskStateRunning
	})
	follower := taskRecord(t, dir, alloc.ID, "follower")
	a1.stop(t)

	// The leader ends while no agent runs; the follower lives on.
	if err := os.WriteFile(filepath.Join(dir, "alloc", alloc.ID, "alloc", "data", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	exitFile := filepath.Join(dir, "alloc", alloc.ID, "leader", supervisorDirName, supervisorExitFile)
	waitFor(t, 10*time.Second, "leader exit recorded", func() bool { _, err := os.Stat(exitFile); return err == nil })
	if !processRunning(follower.Pid, follower.StartTicks) {
		t.Fatal("follower died with the agent")
	}

	startAgent(t, cp, testConfig(t, dir))
	rep := cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	if st := rep.TaskStates["follower"]; findEvent(st, structs.TaskLeaderDead) == nil || st.Failed {
		t.Errorf("follower events %v", eventTypes(st))
	}
	waitFor(t, 5*time.Second, "no process left", func() bool { return len(procsReferencing(dir)) == 0 })
}
