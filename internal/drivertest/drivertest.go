// Package drivertest holds what the task drivers' tests share: the test
// binary re-executed as drover's task supervisor, task configs over real
// directories, and waiting for a task's exit. It is for tests only.
package drivertest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/drivers/shared/supervisor"
	"github.com/drover-sched/drover/structs"
)

// supervisorEnv makes the test binary act as a task supervisor.
const supervisorEnv = "DROVER_DRIVERTEST_SUPERVISOR"

// Main runs the tests, or, when the test binary was re-executed as a task
// supervisor, the supervisor. Call it from TestMain.
func Main(m *testing.M) {
	if os.Getenv(supervisorEnv) == "1" {
		os.Exit(supervisor.Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// Options are driver options whose supervisors are this test binary.
func Options(t testing.TB) drivers.Options {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return drivers.Options{
		SupervisorCommand: []string{exe},
		// A race-enabled supervisor would sleep 1s at each exit.
		SupervisorEnv: []string{supervisorEnv + "=1", "GORACE=atexit_sleep_ms=0"},
	}
}

// TaskConfig returns a launch config of task name with the given driver
// config, over fresh directories laid out as an alloc dir.
func TaskConfig(t testing.TB, name string, config map[string]any) *drivers.TaskConfig {
	t.Helper()
	root := t.TempDir()
	alloc := filepath.Join(root, "alloc")
	task := filepath.Join(root, name)
	cfg := &drivers.TaskConfig{
		ID:         structs.GenerateUUID(),
		AllocID:    structs.GenerateUUID(),
		Namespace:  structs.DefaultNamespace,
		JobID:      "job",
		TaskGroup:  "group",
		AllocName:  "job.group[0]",
		Name:       name,
		Config:     config,
		Env:        map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "NOMAD_TASK_NAME": name},
		Resources:  drivers.Resources{CPU: 100, MemoryMB: 64},
		Logs:       drivers.LogConfig{MaxFiles: 2, MaxFileBytes: 1 << 20},
		AllocDir:   root,
		SharedDir:  alloc,
		LogDir:     filepath.Join(alloc, "logs"),
		TaskDir:    task,
		LocalDir:   filepath.Join(task, "local"),
		SecretsDir: filepath.Join(task, "secrets"),
		TmpDir:     filepath.Join(task, "tmp"),
		StateDir:   filepath.Join(task, ".drover"),
	}
	for _, d := range []string{cfg.LogDir, filepath.Join(alloc, "data"), filepath.Join(alloc, "tmp"), cfg.LocalDir, cfg.SecretsDir, cfg.TmpDir, cfg.StateDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// WaitExit waits up to timeout for the task's exit.
func WaitExit(t testing.TB, d drivers.Driver, taskID string, timeout time.Duration) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ch, err := d.Wait(ctx, taskID)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	ex, ok := <-ch
	if !ok {
		t.Fatalf("task %s did not exit within %v", taskID, timeout)
	}
	return ex
}

// WaitFor polls cond until it holds or timeout passes.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
