package nodeagent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

func TestServiceTaskRunsAndStopsWithKillSignal(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	cp.failUpdates = 2 // the reporter must retry
	ta := startAgent(t, cp, testConfig(t, dir))

	task := shTask("server", `trap 'echo got-int > "$NOMAD_ALLOC_DIR/data/signal"; exit 0' INT
env > "$NOMAD_TASK_DIR/env.txt"
echo hello-stdout; echo hello-stderr >&2
while true; do sleep 0.1; done`)
	task.Env = map[string]string{"GREETING": "hi from ${NOMAD_TASK_NAME}"}
	job := testJob(structs.JobTypeService, task)
	alloc := testAlloc(job)
	cp.addAlloc(alloc)

	rep := cp.waitReport(t, alloc.ID, "alloc running", hasStatus(structs.AllocClientStatusRunning))
	st := rep.TaskStates["server"]
	if st.State != structs.TaskStateRunning || st.StartedAt.IsZero() {
		t.Fatalf("task state %+v", st)
	}
	if got := eventTypes(st); strings.Join(got, ",") != "Received,Task Setup,Started" {
		t.Errorf("events %v", got)
	}

	rec := taskRecord(t, dir, alloc.ID, "server")
	if !processRunning(rec.Pid, rec.StartTicks) {
		t.Fatalf("task pid %d not running", rec.Pid)
	}
	if pids := procsReferencing(dir); len(pids) < 2 {
		t.Errorf("want the supervisor and the task in /proc, found %v", pids)
	}

	ad := NewAllocDir(filepath.Join(dir, "alloc"), alloc.ID)
	envFile := filepath.Join(ad.TaskDir("server").LocalDir, "env.txt")
	waitFor(t, 10*time.Second, "env file", func() bool {
		b, _ := os.ReadFile(envFile)
		return strings.Contains(string(b), "GREETING=")
	})
	envb, _ := os.ReadFile(envFile)
	env := string(envb)
	for _, want := range []string{
		"NOMAD_ALLOC_ID=" + alloc.ID, "DROVER_ALLOC_ID=" + alloc.ID,
		"NOMAD_ALLOC_NAME=" + alloc.Name, "NOMAD_ALLOC_INDEX=0",
		"NOMAD_JOB_NAME=" + job.Name, "NOMAD_GROUP_NAME=web", "NOMAD_TASK_NAME=server", "DROVER_TASK_NAME=server",
		"NOMAD_ALLOC_DIR=" + ad.SharedDir(), "NOMAD_TASK_DIR=" + ad.TaskDir("server").LocalDir,
		"NOMAD_SECRETS_DIR=" + ad.TaskDir("server").SecretsDir,
		"NOMAD_CPU_LIMIT=100", "NOMAD_MEMORY_LIMIT=64", "DROVER_MEMORY_LIMIT=64",
		"GREETING=hi from server",
	} {
		if !strings.Contains(env, want+"\n") {
			t.Errorf("task env lacks %q", want)
		}
	}
	if strings.Contains(env, supervisorEnvVar) {
		t.Error("supervisor-only env leaked into the task")
	}
	if cwd, err := os.Readlink("/proc/" + strconv.Itoa(rec.Pid) + "/cwd"); err != nil || cwd != ad.TaskDir("server").Dir {
		t.Errorf("task cwd %q (%v), want the task dir", cwd, err)
	}
	waitFor(t, 5*time.Second, "logs", func() bool {
		out, _ := os.ReadFile(ad.StdoutPath("server"))
		errb, _ := os.ReadFile(ad.StderrPath("server"))
		return strings.Contains(string(out), "hello-stdout") && strings.Contains(string(errb), "hello-stderr")
	})
	for _, d := range []string{"alloc/data", "alloc/logs", "alloc/tmp", "server/local", "server/secrets", "server/tmp"} {
		if fi, err := os.Stat(filepath.Join(ad.Dir, d)); err != nil || !fi.IsDir() {
			t.Errorf("alloc dir lacks %s", d)
		}
	}

	cp.stopAlloc(alloc.ID)
	rep = cp.waitReport(t, alloc.ID, "alloc complete after stop", hasStatus(structs.AllocClientStatusComplete))
	st = rep.TaskStates["server"]
	if st.State != structs.TaskStateDead || st.Failed || st.FinishedAt.IsZero() {
		t.Errorf("stopped task state %+v", st)
	}
	got := eventTypes(st)
	if strings.Join(got[len(got)-3:], ",") != "Killing,Terminated,Killed" {
		t.Errorf("stop events %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(ad.SharedDir(), "data", "signal")); strings.TrimSpace(string(b)) != "got-int" {
		t.Errorf("task did not get SIGINT first: %q", b)
	}
	if processRunning(rec.Pid, rec.StartTicks) {
		t.Error("task still running after stop")
	}
	waitFor(t, 5*time.Second, "no process left", func() bool { return len(procsReferencing(dir)) == 0 })

	// Removing the alloc from the node destroys it: dir and state gone.
	cp.removeAlloc(alloc.ID)
	waitFor(t, 10*time.Second, "alloc dir removed", func() bool { return !ad.Exists() })
	ta.stop(t)
}

func TestKillTimeoutEscalatesToSIGKILL(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	task := shTask("stubborn", `trap '' INT; echo ready > "$NOMAD_TASK_DIR/ready"; while true; do sleep 0.1; done`)
	task.KillTimeout = 700 * time.Millisecond
	alloc := testAlloc(testJob(structs.JobTypeService, task))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	rec := taskRecord(t, dir, alloc.ID, "stubborn")
	ready := filepath.Join(dir, "alloc", alloc.ID, "stubborn", "local", "ready")
	waitFor(t, 5*time.Second, "trap installed", func() bool { _, err := os.Stat(ready); return err == nil })

	start := time.Now()
	cp.stopAlloc(alloc.ID)
	rep := cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	if el := time.Since(start); el < 700*time.Millisecond {
		t.Errorf("stopped after %v, before the kill timeout", el)
	}
	st := rep.TaskStates["stubborn"]
	term := findEvent(st, structs.TaskTerminated)
	if term == nil || term.Signal != 9 {
		t.Fatalf("want a Terminated event with signal 9, events %+v", st.Events)
	}
	if k := findEvent(st, structs.TaskKilling); k == nil || k.KillTimeout != 700*time.Millisecond {
		t.Errorf("Killing event %+v", k)
	}
	if processRunning(rec.Pid, rec.StartTicks) {
		t.Error("task survived SIGKILL")
	}
	waitFor(t, 5*time.Second, "no process left", func() bool { return len(procsReferencing(dir)) == 0 })
}

// TestShutdownDelayBeforeKillSignal: a stopped task keeps running for its
// shutdown_delay (the longer of task and group) before its kill signal.
func TestShutdownDelayBeforeKillSignal(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	task := shTask("lingering", `trap 'date +%s%N > "$NOMAD_ALLOC_DIR/data/int"; exit 0' INT; while true; do sleep 0.05; done`)
	task.ShutdownDelay = 300 * time.Millisecond
	job := testJob(structs.JobTypeService, task)
	groupDelay := 900 * time.Millisecond
	job.TaskGroups[0].ShutdownDelay = &groupDelay
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	time.Sleep(300 * time.Millisecond) // the trap is installed

	start := time.Now()
	cp.stopAlloc(alloc.ID)
	cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	b, err := os.ReadFile(filepath.Join(dir, "alloc", alloc.ID, "alloc", "data", "int"))
	if err != nil {
		t.Fatalf("the task never got its kill signal: %v", err)
	}
	ns, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if got := time.Unix(0, ns).Sub(start); got < groupDelay {
		t.Fatalf("kill signal %v after the stop, before the group's shutdown_delay of %v", got, groupDelay)
	}
}

func TestBatchTaskOutcomes(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	ok := testAlloc(testJob(structs.JobTypeBatch, shTask("work", "echo done")))
	bad := testAlloc(testJob(structs.JobTypeBatch, shTask("work", "exit 3")))
	cp.addAlloc(ok)
	cp.addAlloc(bad)

	rep := cp.waitReport(t, ok.ID, "batch exit 0 complete", hasStatus(structs.AllocClientStatusComplete))
	st := rep.TaskStates["work"]
	if st.Failed || st.State != structs.TaskStateDead || findEvent(st, structs.TaskTerminated).ExitCode != 0 {
		t.Errorf("clean batch task state %+v", st)
	}
	if findEvent(st, structs.TaskNotRestarting) != nil {
		t.Error("a clean batch exit is not a Not Restarting")
	}

	rep = cp.waitReport(t, bad.ID, "batch exit 3 failed", hasStatus(structs.AllocClientStatusFailed))
	st = rep.TaskStates["work"]
	term := findEvent(st, structs.TaskTerminated)
	if term == nil || term.ExitCode != 3 || !strings.Contains(term.DisplayMessage, "Exit Code: 3") {
		t.Errorf("Terminated event %+v", term)
	}
	nr := findEvent(st, structs.TaskNotRestarting)
	if !st.Failed || nr == nil || nr.RestartReason != ReasonNoRestartsAllowed {
		t.Errorf("failed batch task state %+v", st)
	}
	if st.Restarts != 0 || st.FinishedAt.IsZero() {
		t.Errorf("restarts %d finished %v", st.Restarts, st.FinishedAt)
	}
}

func TestUnknownCommandFailsWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))
	task := shTask("missing", "")
	task.Config = map[string]any{"command": "/nonexistent/drover-test-command"}
	job := testJob(structs.JobTypeService, task)
	job.TaskGroups[0].RestartPolicy.Attempts = 3
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	rep := cp.waitReport(t, alloc.ID, "failed", hasStatus(structs.AllocClientStatusFailed))
	st := rep.TaskStates["missing"]
	if findEvent(st, structs.TaskDriverFailure) == nil || st.Restarts != 0 {
		t.Errorf("events %v restarts %d", eventTypes(st), st.Restarts)
	}
	if nr := findEvent(st, structs.TaskNotRestarting); nr == nil || nr.RestartReason != ReasonUnrecoverableError {
		t.Errorf("Not Restarting %+v", nr)
	}
}

func TestRestartPolicyTimelineFailMode(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	clk := newFakeClock()
	cfg := testConfig(t, dir)
	cfg.Clock = clk
	startAgent(t, cp, cfg)

	job := testJob(structs.JobTypeService, shTask("flaky", `echo run >> "$NOMAD_ALLOC_DIR/data/runs"; exit 1`))
	job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 2, Interval: 10 * time.Minute, Delay: 15 * time.Second, Mode: structs.RestartPolicyModeFail}
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	runs := filepath.Join(dir, "alloc", alloc.ID, "alloc", "data", "runs")

	for i := 1; i <= 2; i++ {
		rep := cp.waitReport(t, alloc.ID, "restart scheduled", func(a *structs.Allocation) bool {
			return a.TaskStates["flaky"] != nil && a.TaskStates["flaky"].Restarts == uint64(i)
		})
		st := rep.TaskStates["flaky"]
		ev := findEvent(st, structs.TaskRestarting)
		if ev.RestartReason != ReasonWithinPolicy || ev.StartDelay < int64(15*time.Second) || ev.StartDelay > int64(15*time.Second*5/4) {
			t.Fatalf("restart %d event %+v", i, ev)
		}
		if st.State != structs.TaskStatePending || rep.ClientStatus != structs.AllocClientStatusPending {
			t.Errorf("during the delay: task %s alloc %s", st.State, rep.ClientStatus)
		}
		// Nothing happens until the clock moves past the delay.
		waitFor(t, 5*time.Second, "delay timer", func() bool { return clk.pendingWaiters() == 1 })
		time.Sleep(100 * time.Millisecond)
		if n := countLines(runs); n != i {
			t.Fatalf("runs before the delay passed: %d, want %d", n, i)
		}
		clk.Advance(time.Duration(ev.StartDelay))
	}
	rep := cp.waitReport(t, alloc.ID, "failed after attempts", hasStatus(structs.AllocClientStatusFailed))
	st := rep.TaskStates["flaky"]
	if st.Restarts != 2 || countLines(runs) != 3 {
		t.Errorf("restarts %d runs %d; want 2 and 3", st.Restarts, countLines(runs))
	}
	nr := findEvent(st, structs.TaskNotRestarting)
	if nr == nil || !strings.Contains(nr.RestartReason, `mode is "fail"`) {
		t.Errorf("Not Restarting %+v", nr)
	}
}

func TestRestartPolicyTimelineDelayMode(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	clk := newFakeClock()
	cfg := testConfig(t, dir)
	cfg.Clock = clk
	startAgent(t, cp, cfg)

	job := testJob(structs.JobTypeService, shTask("flaky", `echo run >> "$NOMAD_ALLOC_DIR/data/runs"; exit 1`))
	job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: 10 * time.Second, Mode: structs.RestartPolicyModeDelay}
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	runs := filepath.Join(dir, "alloc", alloc.ID, "alloc", "data", "runs")

	waitRestarts := func(n uint64) *structs.TaskEvent {
		rep := cp.waitReport(t, alloc.ID, "restart", func(a *structs.Allocation) bool {
			return a.TaskStates["flaky"] != nil && a.TaskStates["flaky"].Restarts == n
		})
		waitFor(t, 5*time.Second, "delay timer", func() bool { return clk.pendingWaiters() == 1 })
		return findEvent(rep.TaskStates["flaky"], structs.TaskRestarting)
	}
	// t0: first failure, within policy.
	ev := waitRestarts(1)
	if ev.RestartReason != ReasonWithinPolicy {
		t.Fatalf("first restart %+v", ev)
	}
	clk.Advance(20 * time.Second) // t0+20s: second run, second failure
	ev = waitRestarts(2)
	if ev.RestartReason != ReasonDelay || time.Duration(ev.StartDelay) != 40*time.Second {
		t.Fatalf("second restart should wait out the interval (40s): %+v", ev)
	}
	clk.Advance(39 * time.Second)
	time.Sleep(100 * time.Millisecond)
	if n := countLines(runs); n != 2 {
		t.Fatalf("ran %d times before the interval ended", n)
	}
	clk.Advance(time.Second) // t0+60s: the interval is over, a new one starts
	ev = waitRestarts(3)
	if ev.RestartReason != ReasonWithinPolicy {
		t.Fatalf("in the new interval: %+v", ev)
	}
	if n := countLines(runs); n != 3 {
		t.Fatalf("runs %d, want 3", n)
	}
	cp.stopAlloc(alloc.ID)
	rep := cp.waitReport(t, alloc.ID, "stopped during a delay", hasStatus(structs.AllocClientStatusComplete))
	if st := rep.TaskStates["flaky"]; st.State != structs.TaskStateDead || findEvent(st, structs.TaskKilled) == nil {
		t.Errorf("stopped during delay: %+v", st)
	}
}

func TestSiblingFailureKillsOthers(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	job := testJob(structs.JobTypeService,
		shTask("steady", "while true; do sleep 0.1; done"),
		shTask("broken", "sleep 0.3; exit 2"))
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	rep := cp.waitReport(t, alloc.ID, "alloc failed", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusFailed &&
			a.TaskStates["steady"] != nil && a.TaskStates["steady"].State == structs.TaskStateDead
	})
	steady := rep.TaskStates["steady"]
	ev := findEvent(steady, structs.TaskSiblingFailed)
	if ev == nil || ev.FailedSibling != "broken" {
		t.Errorf("steady events %v", eventTypes(steady))
	}
	if steady.Failed || findEvent(steady, structs.TaskKilled) == nil {
		t.Errorf("sibling should be killed, not failed: %+v", steady)
	}
	if !rep.TaskStates["broken"].Failed {
		t.Error("broken task not failed")
	}
	waitFor(t, 5*time.Second, "no process left", func() bool { return len(procsReferencing(dir)) == 0 })
}

func TestLeaderDeathStopsOthers(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	leader := shTask("leader", "sleep 0.3")
	leader.Leader = true
	job := testJob(structs.JobTypeBatch, leader, shTask("helper", "while true; do sleep 0.1; done"))
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	rep := cp.waitReport(t, alloc.ID, "alloc complete", hasStatus(structs.AllocClientStatusComplete))
	helper := rep.TaskStates["helper"]
	if findEvent(helper, structs.TaskLeaderDead) == nil || findEvent(helper, structs.TaskKilled) == nil || helper.Failed {
		t.Errorf("helper events %v failed %v", eventTypes(helper), helper.Failed)
	}
	if l := rep.TaskStates["leader"]; l.Failed || l.State != structs.TaskStateDead {
		t.Errorf("leader %+v", l)
	}
	for name, st := range rep.TaskStates {
		if st.FinishedAt.IsZero() {
			t.Errorf("task %s has no FinishedAt", name)
		}
	}
	waitFor(t, 5*time.Second, "no process left", func() bool { return len(procsReferencing(dir)) == 0 })
}

func TestDevModeShutdownStopsTasks(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	cfg := testConfig(t, dir)
	cfg.DevMode = true
	cfg.EnabledDrivers = nil
	ta := startAgent(t, cp, cfg)
	alloc := testAlloc(testJob(structs.JobTypeService, shTask("server", "while true; do sleep 0.1; done")))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	rec := taskRecord(t, dir, alloc.ID, "server")
	ta.stop(t)
	if processRunning(rec.Pid, rec.StartTicks) {
		t.Fatal("dev agent left its task running")
	}
	if len(procsReferencing(dir)) != 0 {
		t.Fatalf("processes left: %v", procsReferencing(dir))
	}
	// The alloc's report is not turned into "complete": the next dev
	// agent runs it again.
	if got := cp.latest(alloc.ID).ClientStatus; got != structs.AllocClientStatusRunning {
		t.Errorf("reported %s after dev shutdown", got)
	}
}

func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

func TestRegisterHeartbeatAndPolling(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	cp.ttl = 300 * time.Millisecond
	ta := startAgent(t, cp, testConfig(t, dir))

	waitFor(t, 5*time.Second, "heartbeats", func() bool { _, hb, _, _ := cp.counts(); return hb >= 3 })
	cp.mu.Lock()
	n := cp.nodes[ta.NodeID()]
	cp.mu.Unlock()
	if n == nil || n.Attributes["unique.hostname"] == "" || n.NodeResources == nil {
		t.Fatalf("registered node %+v", n)
	}
	// Idle: the index is polled, the assignments are not fetched again.
	_, _, idx0, fetch0 := cp.counts()
	time.Sleep(300 * time.Millisecond)
	_, _, idx1, fetch1 := cp.counts()
	if idx1-idx0 < 3 || fetch1 != fetch0 {
		t.Errorf("idle polling: %d index polls, %d fetches", idx1-idx0, fetch1-fetch0)
	}
	// A new assignment is picked up within a poll interval or so.
	alloc := testAlloc(testJob(structs.JobTypeBatch, shTask("work", "true")))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	if _, _, _, f := cp.counts(); f != fetch1+1 {
		t.Errorf("fetches after one new assignment: %d", f-fetch1)
	}
}

func TestSecondAgentOnSameDataDirRefused(t *testing.T) {
	dir := t.TempDir()
	cp := newFakeCP()
	ta := startAgent(t, cp, testConfig(t, dir))
	waitFor(t, 5*time.Second, "first agent registered", func() bool { r, _, _, _ := cp.counts(); return r >= 1 })
	b, err := New(cp, testConfig(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("second agent on one data dir: %v", err)
	}
	ta.stop(t)
}

// TestAllocStoppedBeforeItStartedIsReportedComplete: an alloc the server
// stopped before this node ever ran it is reported complete, not left
// pending (its job summary and garbage collection depend on it).
func TestAllocStoppedBeforeItStartedIsReportedComplete(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	alloc := testAlloc(testJob(structs.JobTypeService, shTask("never", "sleep 100")))
	alloc.DesiredStatus = structs.AllocDesiredStatusStop
	cp.addAlloc(alloc)
	rep := cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	if rep.ClientDescription == "" {
		t.Error("no description of why it never ran")
	}
	if NewAllocDir(filepath.Join(dir, "alloc"), alloc.ID).Exists() {
		t.Error("an alloc dir was built for an alloc that never runs")
	}
}
