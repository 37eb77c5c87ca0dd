package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestKillStartedLeavesNothing: what an interrupted run cleans up. An
// "agent" started with Start and a detached "task supervisor" under its
// data dir (which outlives the agent, as real ones do), with a task
// child, are all killed; the data dir and the empty directory above it
// are removed.
func TestKillStartedLeavesNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc: Linux only")
	}
	root, err := os.MkdirTemp("", "proctest-interrupt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	dir := filepath.Join(root, "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	agent, err := Start("/bin/sh", "-c", "exec sleep 60", "agent", "-data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	// Its own session, as the agent's supervisors are; the sh waits for
	// its sleep (the task).
	sup := exec.Command("/bin/sh", "-c", "sleep 60; true", "task-supervisor", filepath.Join(dir, "spec.json"))
	sup.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	supDone := make(chan struct{})
	go func() { _ = sup.Wait(); close(supDone) }()
	t.Cleanup(func() { _ = sup.Process.Kill() })
	var task []int
	if !Poll(5*time.Second, func() bool { task = TasksUnder(dir); return len(task) == 1 }) {
		t.Fatalf("the supervisor's task not found under %s: %v", dir, task)
	}

	if n := KillStarted(); n < 2 {
		t.Errorf("KillStarted killed %d processes, want the agent and the supervisor at least", n)
	}
	for what, done := range map[string]chan struct{}{"agent": agent.Done, "supervisor": supDone} {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("the %s survived KillStarted", what)
		}
	}
	if Poll(5*time.Second, func() bool { return syscall.Kill(task[0], 0) != nil }) == false {
		t.Errorf("the task %d survived KillStarted", task[0])
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("%s left behind (%v)", root, err)
	}
}

// TestTestTempRoot: only a data dir inside a test's t.TempDir names a
// root to remove.
func TestTestTempRoot(t *testing.T) {
	tmp := os.TempDir()
	for dir, want := range map[string]string{
		filepath.Join(tmp, "TestChaosProcseeds123", "001", "c0"): filepath.Join(tmp, "TestChaosProcseeds123"),
		filepath.Join(tmp, "TestChaosProcseeds123"):              "",
		filepath.Join(tmp, "proctest-interrupt-1", "agent"):      "",
		"/var/lib/drover": "",
	} {
		if got := testTempRoot(dir); got != want {
			t.Errorf("testTempRoot(%q) = %q, want %q", dir, got, want)
		}
	}
}
