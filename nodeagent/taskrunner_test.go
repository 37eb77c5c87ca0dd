package nodeagent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/drivers/mock"
	"github.com/drover-sched/drover/structs"
)

// Task runner tests on the mock driver: no processes, each task steered by
// its config.

// mockAgentConfig is testConfig with only the mock driver m enabled.
func mockAgentConfig(t *testing.T, dir string, m *mock.Driver) Config {
	cfg := testConfig(t, dir)
	cfg.EnabledDrivers = []string{mock.Name}
	cfg.ExtraDrivers = map[string]drivers.Driver{mock.Name: m}
	return cfg
}

func mockTask(name string, config map[string]any) *structs.Task {
	return &structs.Task{Name: name, Driver: mock.Name, Config: config, KillTimeout: time.Second,
		Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}
}

func TestMockRestartsWithinPolicyThenFails(t *testing.T) {
	t.Parallel()
	cp := newFakeCP()
	m := mock.New()
	startAgent(t, cp, mockAgentConfig(t, t.TempDir(), m))
	job := testJob(structs.JobTypeService, mockTask("web", map[string]any{"run_for": "10ms", "exit_code": 2}))
	job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 2, Interval: time.Hour, Delay: 10 * time.Millisecond, Mode: structs.RestartPolicyModeFail}
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	rep := cp.waitReport(t, alloc.ID, "failed", hasStatus(structs.AllocClientStatusFailed))
	st := rep.TaskStates["web"]
	if st.Restarts != 2 || m.Starts("web") != 3 || countEvents(st, structs.TaskTerminated) != 3 {
		t.Fatalf("restarts %d starts %d events %v", st.Restarts, m.Starts("web"), eventTypes(st))
	}
	if ev := findEvent(st, structs.TaskTerminated); ev.ExitCode != 2 {
		t.Errorf("Terminated %+v", ev)
	}
	if ev := findEvent(st, structs.TaskNotRestarting); ev == nil || !ev.FailsTask {
		t.Errorf("Not Restarting %+v", ev)
	}
}

func TestMockStartErrors(t *testing.T) {
	t.Parallel()
	cp := newFakeCP()
	m := mock.New()
	startAgent(t, cp, mockAgentConfig(t, t.TempDir(), m))
	policy := &structs.RestartPolicy{Attempts: 1, Interval: time.Hour, Delay: 10 * time.Millisecond, Mode: structs.RestartPolicyModeFail}

	// Unrecoverable: fails at once, the restart attempt unused.
	unrec := testJob(structs.JobTypeBatch, mockTask("work", map[string]any{"start_error": "no such image"}))
	unrec.TaskGroups[0].RestartPolicy = policy
	a1 := testAlloc(unrec)
	// Recoverable: retried within the policy.
	rec := testJob(structs.JobTypeBatch, mockTask("work", map[string]any{"start_error": "daemon busy", "start_error_recoverable": true}))
	rec.TaskGroups[0].RestartPolicy = policy
	a2 := testAlloc(rec)
	cp.addAlloc(a1)
	cp.addAlloc(a2)

	st := cp.waitReport(t, a1.ID, "failed", hasStatus(structs.AllocClientStatusFailed)).TaskStates["work"]
	if ev := findEvent(st, structs.TaskDriverFailure); ev == nil || ev.DriverError != "no such image" {
		t.Fatalf("Driver Failure %+v in %v", ev, eventTypes(st))
	}
	if ev := findEvent(st, structs.TaskNotRestarting); ev == nil || ev.RestartReason != ReasonUnrecoverableError || st.Restarts != 0 {
		t.Fatalf("unrecoverable start: restarts %d, %+v", st.Restarts, ev)
	}
	st = cp.waitReport(t, a2.ID, "failed", hasStatus(structs.AllocClientStatusFailed)).TaskStates["work"]
	if st.Restarts != 1 || countEvents(st, structs.TaskDriverFailure) != 2 {
		t.Fatalf("recoverable start: restarts %d, events %v", st.Restarts, eventTypes(st))
	}
}

func TestMockKillWaitsForTheTaskThenForcesIt(t *testing.T) {
	t.Parallel()
	cp := newFakeCP()
	m := mock.New()
	startAgent(t, cp, mockAgentConfig(t, t.TempDir(), m))
	polite := mockTask("polite", map[string]any{"kill_after": "20ms"})
	polite.KillSignal = "SIGTERM"
	stubborn := mockTask("stubborn", map[string]any{"kill_after": "1h"})
	stubborn.KillTimeout = 50 * time.Millisecond
	alloc := testAlloc(testJob(structs.JobTypeService, polite, stubborn))
	cp.addAlloc(alloc)
	// Both running: a task stopped while pending is never signalled.
	cp.waitReport(t, alloc.ID, "both running", allRunning("polite", "stubborn"))
	cp.stopAlloc(alloc.ID)
	rep := cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))

	p := rep.TaskStates["polite"]
	if ev := findEvent(p, structs.TaskKilling); ev == nil || ev.KillTimeout != time.Second || ev.DisplayMessage != "Sent SIGTERM. Waiting 1s before force killing" {
		t.Errorf("polite Killing %+v", ev)
	}
	if ev := findEvent(p, structs.TaskTerminated); ev == nil || ev.Signal != 15 {
		t.Errorf("polite Terminated %+v", ev)
	}
	s := rep.TaskStates["stubborn"]
	if ev := findEvent(s, structs.TaskTerminated); ev == nil || ev.Signal != 9 {
		t.Errorf("stubborn Terminated %+v (want SIGKILL after the kill timeout)", ev)
	}
	for _, st := range []*structs.TaskState{p, s} {
		if st.Failed || findEvent(st, structs.TaskKilled) == nil {
			t.Errorf("task state %+v events %v", st, eventTypes(st))
		}
	}
}

func TestMockReattachesAfterAgentRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cp := newFakeCP()
	a1 := startAgent(t, cp, mockAgentConfig(t, dir, mock.New()))
	job := testJob(structs.JobTypeBatch,
		mockTask("long", map[string]any{"run_for": "1h"}),
		mockTask("short", map[string]any{"run_for": "300ms", "exit_code": 0}))
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	// Both started by the first agent (the short one may be dead already).
	cp.waitReport(t, alloc.ID, "both started", func(a *structs.Allocation) bool {
		for _, name := range []string{"long", "short"} {
			if st := a.TaskStates[name]; st == nil || countEvents(st, structs.TaskStarted) != 1 {
				return false
			}
		}
		return true
	})
	a1.stop(t)
	cp.clearReports()

	// A new driver instance, as in a new agent process: the long task is
	// running still, the short one ended while no agent watched.
	m2 := mock.New()
	startAgent(t, cp, mockAgentConfig(t, dir, m2))
	rep := cp.waitReport(t, alloc.ID, "short task dead", func(a *structs.Allocation) bool {
		return a.TaskStates["short"] != nil && a.TaskStates["short"].State == structs.TaskStateDead
	})
	if m2.Starts("long") != 0 || m2.Starts("short") != 0 {
		t.Fatalf("re-attach started tasks again: long %d short %d", m2.Starts("long"), m2.Starts("short"))
	}
	for name, st := range rep.TaskStates {
		if countEvents(st, structs.TaskStarted) != 1 {
			t.Errorf("%s: events %v", name, eventTypes(st))
		}
	}
	if st := rep.TaskStates["long"]; st.State != structs.TaskStateRunning {
		t.Errorf("long task %s", st.State)
	}
	if st := rep.TaskStates["short"]; st.Failed || findEvent(st, structs.TaskTerminated) == nil {
		t.Errorf("short task %+v %v", st, eventTypes(st))
	}
}

func TestMockRecoverFailureStartsANewLaunch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cp := newFakeCP()
	a1 := startAgent(t, cp, mockAgentConfig(t, dir, mock.New()))
	alloc := testAlloc(testJob(structs.JobTypeService, mockTask("web", map[string]any{"recover_error": "daemon lost the container"})))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	a1.stop(t)

	m2 := mock.New()
	startAgent(t, cp, mockAgentConfig(t, dir, m2))
	// The Driver Failure is reported before the new launch: the task is
	// still running as restored until it has Started again.
	rep := cp.waitReport(t, alloc.ID, "running again after a Driver Failure", func(a *structs.Allocation) bool {
		st := a.TaskStates["web"]
		return a.ClientStatus == structs.AllocClientStatusRunning && findEvent(st, structs.TaskDriverFailure) != nil &&
			countEvents(st, structs.TaskStarted) >= 2
	})
	if ev := findEvent(rep.TaskStates["web"], structs.TaskDriverFailure); ev.DriverError != "re-attach: daemon lost the container" {
		t.Fatalf("Driver Failure %+v", ev)
	}
	if m2.Starts("web") != 1 || countEvents(rep.TaskStates["web"], structs.TaskStarted) != 2 {
		t.Fatalf("starts %d, events %v", m2.Starts("web"), eventTypes(rep.TaskStates["web"]))
	}
}

func TestMockDriverMessagesOOMAndLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cp := newFakeCP()
	startAgent(t, cp, mockAgentConfig(t, dir, mock.New()))
	alloc := testAlloc(testJob(structs.JobTypeBatch, mockTask("work", map[string]any{
		"run_for": "20ms", "exit_code": 137, "oom_killed": true,
		"driver_message": "Downloading image", "stdout_string": "hello from ${NOMAD_TASK_NAME}\n",
	})))
	cp.addAlloc(alloc)
	st := cp.waitReport(t, alloc.ID, "failed", hasStatus(structs.AllocClientStatusFailed)).TaskStates["work"]
	types := eventTypes(st)
	if i, j := slices.Index(types, structs.TaskEventDriverMessage), slices.Index(types, structs.TaskStarted); i < 0 || i > j {
		t.Errorf("driver message before Started: %v", types)
	}
	if ev := findEvent(st, structs.TaskEventDriverMessage); ev.DisplayMessage != "Downloading image" {
		t.Errorf("driver event %+v", ev)
	}
	ev := findEvent(st, structs.TaskTerminated)
	if ev == nil || ev.Details["oom_killed"] != "true" || ev.DisplayMessage != `Exit Code: 137, Exit Message: "OOM Killed"` {
		t.Errorf("Terminated %+v", ev)
	}
	// The config was interpolated with the task's environment.
	b, _ := os.ReadFile(filepath.Join(dir, "alloc", alloc.ID, "alloc", "logs", "work.stdout.0"))
	if string(b) != "hello from work\n" {
		t.Errorf("stdout %q", b)
	}
}

// TestDriverHealthChangeReregistersNode: a driver that turns unhealthy
// (a Docker Engine that stopped answering) is seen by the control plane
// at the next driver fingerprint, and again when it recovers.
func TestDriverHealthChangeReregistersNode(t *testing.T) {
	t.Parallel()
	cp := newFakeCP()
	m := mock.New()
	cfg := mockAgentConfig(t, t.TempDir(), m)
	cfg.DriverFingerprintInterval = 20 * time.Millisecond
	ta := startAgent(t, cp, cfg)
	driver := func() *structs.DriverInfo {
		cp.mu.Lock()
		defer cp.mu.Unlock()
		if n := cp.nodes[ta.NodeID()]; n != nil {
			return n.Drivers[mock.Name]
		}
		return nil
	}
	waitFor(t, 5*time.Second, "registered healthy", func() bool { d := driver(); return d != nil && d.Healthy })
	m.SetUnhealthy("engine gone")
	waitFor(t, 5*time.Second, "unhealthy seen", func() bool { d := driver(); return d != nil && !d.Healthy && d.HealthDescription == "engine gone" })
	regs, _, _, _ := cp.counts()
	time.Sleep(100 * time.Millisecond)
	if r, _, _, _ := cp.counts(); r != regs {
		t.Errorf("registered %d more times with nothing changed", r-regs)
	}
	m.SetUnhealthy("")
	waitFor(t, 5*time.Second, "healthy again", func() bool { d := driver(); return d != nil && d.Healthy })
}
