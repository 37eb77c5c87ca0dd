package nodeagent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/drivers"
	execdriver "github.com/drover-sched/drover/drivers/exec"
	"github.com/drover-sched/drover/structs"
)

// requireExec skips where the exec driver cannot run (not root, no
// cgroups); DROVER_REQUIRE_EXEC=1 (.ci/run) fails instead.
func requireExec(t *testing.T) {
	t.Helper()
	cfg := testConfig(t, t.TempDir())
	d, err := execdriver.New(driverOptions(&cfg))
	if err != nil {
		t.Fatal(err)
	}
	if fp := d.Fingerprint(context.Background()); !fp.Healthy {
		if os.Getenv("DROVER_REQUIRE_EXEC") == "1" {
			t.Fatalf("exec driver unavailable: %s", fp.HealthDescription)
		}
		t.Skipf("exec driver unavailable here: %s", fp.HealthDescription)
	}
}

func execTask(name, script string) *structs.Task {
	return &structs.Task{Name: name, Driver: execdriver.Name,
		Config:      map[string]any{"command": "/bin/sh", "args": []any{"-c", script}},
		KillTimeout: time.Second, Resources: &structs.Resources{CPU: 100, MemoryMB: 32}}
}

// TestExecTaskOOMKilledEvent: an exec task over its memory limit is
// killed, and its Terminated event says it was OOM-killed.
func TestExecTaskOOMKilledEvent(t *testing.T) {
	requireExec(t)
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	cfg := testConfig(t, dir)
	cfg.EnabledDrivers = []string{execdriver.Name}
	startAgent(t, cp, cfg)
	task := execTask("hog", `x=$(head -c 200000000 /dev/zero | tr '\0' x)`)
	task.Resources.MemoryMB = 16
	alloc := testAlloc(testJob(structs.JobTypeBatch, task))
	cp.addAlloc(alloc)
	st := cp.waitReport(t, alloc.ID, "failed", hasStatus(structs.AllocClientStatusFailed)).TaskStates["hog"]
	ev := findEvent(st, structs.TaskTerminated)
	if ev == nil || ev.Details["oom_killed"] != "true" || !strings.Contains(ev.DisplayMessage, `Exit Message: "OOM Killed"`) || ev.Signal != 9 {
		t.Fatalf("Terminated %+v; events %v", ev, eventTypes(st))
	}
}

// TestExecTaskReattachesAfterAgentRestart: the isolated task keeps
// running while no agent runs and is re-attached, not re-run; its
// environment names the in-chroot directories.
func TestExecTaskReattachesAfterAgentRestart(t *testing.T) {
	requireExec(t)
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	cfg := testConfig(t, dir)
	cfg.EnabledDrivers = []string{execdriver.Name}
	a1 := startAgent(t, cp, cfg)
	alloc := testAlloc(testJob(structs.JobTypeService, execTask("svc",
		`echo "$NOMAD_ALLOC_DIR $NOMAD_TASK_DIR" >> /alloc/data/runs; trap 'exit 0' INT; while true; do sleep 0.1; done`)))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	rec := taskRecord(t, dir, alloc.ID, "svc")
	runs := filepath.Join(dir, "alloc", alloc.ID, "alloc", "data", "runs")
	waitFor(t, 10*time.Second, "first run recorded", func() bool { return countLines(runs) == 1 })
	a1.stop(t)
	if !processRunning(rec.Pid, rec.StartTicks) {
		t.Fatal("task died with the agent")
	}
	cp.clearReports()

	startAgent(t, cp, cfg)
	rep := cp.waitReport(t, alloc.ID, "restored running", hasStatus(structs.AllocClientStatusRunning))
	if st := rep.TaskStates["svc"]; st.Restarts != 0 || countEvents(st, structs.TaskStarted) != 1 {
		t.Fatalf("re-attach restarted the task: %d restarts, events %v", st.Restarts, eventTypes(st))
	}
	time.Sleep(200 * time.Millisecond)
	if b, _ := os.ReadFile(runs); string(b) != "/alloc /local\n" {
		t.Fatalf("runs %q: want one run that saw /alloc and /local", b)
	}
	cp.stopAlloc(alloc.ID)
	rep = cp.waitReport(t, alloc.ID, "stopped", hasStatus(structs.AllocClientStatusComplete))
	if ev := findEvent(rep.TaskStates["svc"], structs.TaskTerminated); ev == nil || ev.ExitCode != 0 {
		t.Errorf("Terminated %+v", ev)
	}
	// Its cgroups are gone with it.
	cgDirs, _ := filepath.Glob("/sys/fs/cgroup/memory/drover/*")
	for _, d := range cgDirs {
		if b, err := os.ReadFile(filepath.Join(d, "cgroup.procs")); err == nil && strings.Contains(string(b), strconv.Itoa(rec.Pid)) {
			t.Errorf("task's cgroup %s still holds it", d)
		}
	}
	waitFor(t, 5*time.Second, "no process left", func() bool { return len(procsReferencing(dir)) == 0 })
}

// TestExecDriverExecStreamsInTheTaskChroot: a command exec'd into an exec
// task runs inside its chroot as its user, with stdin passed on and a
// terminal when asked.
func TestExecDriverExecStreamsInTheTaskChroot(t *testing.T) {
	requireExec(t)
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	cfg := testConfig(t, dir)
	cfg.EnabledDrivers = []string{execdriver.Name}
	ta := startAgent(t, cp, cfg)
	alloc := testAlloc(testJob(structs.JobTypeService, execTask("box", "echo marker > /local/here; sleep 300")))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	t.Cleanup(func() {
		cp.stopAlloc(alloc.ID)
		cp.waitReport(t, alloc.ID, "stopped", func(a *structs.Allocation) bool { return a.TerminalStatus() })
	})
	var out strings.Builder
	waitFor(t, 10*time.Second, "the task's file", func() bool {
		_, err := os.Stat(filepath.Join(ta.AllocDir(alloc.ID).TaskDir("box").LocalDir, "here"))
		return err == nil
	})
	code, err := ta.ExecAlloc(context.Background(), alloc.ID, "box", &drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", `read l; echo "$l"; cat /local/here; id -u; pwd`},
		Stdin:   strings.NewReader("hi\n"), Stdout: &out, Stderr: &out,
	})
	if err != nil || code != 0 {
		t.Fatalf("exec: %d %v\n%s", code, err, out.String())
	}
	if got := out.String(); got != "hi\nmarker\n65534\n/\n" {
		t.Fatalf("exec output %q (want stdin, the task's file, nobody's uid, the chroot's /)", got)
	}
	var tty strings.Builder
	code, err = ta.ExecAlloc(context.Background(), alloc.ID, "box", &drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", `test -t 1 && echo tty`}, Tty: true, Stdout: &tty})
	if err != nil || code != 0 || !strings.Contains(tty.String(), "tty") {
		t.Fatalf("tty exec: %d %v %q", code, err, tty.String())
	}
}

// TestExecTaskAsNobodyWritesItsDirs: an exec task runs as nobody (Nomad's
// default) and, as in Nomad, can write to its local/ and secrets/ and to
// the alloc's data dir.
func TestExecTaskAsNobodyWritesItsDirs(t *testing.T) {
	requireExec(t)
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	cfg := testConfig(t, dir)
	cfg.EnabledDrivers = []string{execdriver.Name}
	startAgent(t, cp, cfg)
	task := execTask("w", `id -un > /local/who && echo s > /secrets/s && echo d > /alloc/data/d`)
	alloc := testAlloc(testJob(structs.JobTypeBatch, task))
	cp.addAlloc(alloc)
	rep := cp.waitReport(t, alloc.ID, "complete or failed", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusComplete || a.ClientStatus == structs.AllocClientStatusFailed
	})
	if rep.ClientStatus != structs.AllocClientStatusComplete {
		b, _ := os.ReadFile(filepath.Join(dir, "alloc", alloc.ID, "alloc", "logs", "w.stderr.0"))
		t.Fatalf("the task failed writing its dirs: %s", b)
	}
	who, _ := os.ReadFile(filepath.Join(dir, "alloc", alloc.ID, "w", "local", "who"))
	if strings.TrimSpace(string(who)) != "nobody" {
		t.Fatalf("the task ran as %q, want nobody", who)
	}
}
