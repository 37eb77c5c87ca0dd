package rawexec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/internal/drivertest"
)

func TestMain(m *testing.M) { drivertest.Main(m) }

func newDriver(t *testing.T) *Driver {
	t.Helper()
	d, err := New(drivertest.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func sh(script string) map[string]any {
	return map[string]any{"command": "/bin/sh", "args": []any{"-c", script}}
}

func TestStartWaitLogsAndExitCode(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	cfg := drivertest.TaskConfig(t, "work", sh(`echo out; echo err >&2; echo "$NOMAD_TASK_NAME" > name; exit 3`))
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if h.Driver != Name || h.ID() != cfg.ID || len(h.DriverState) == 0 {
		t.Fatalf("handle %+v", h)
	}
	ex := drivertest.WaitExit(t, d, cfg.ID, 10*time.Second)
	if ex.ExitCode != 3 || ex.Successful() {
		t.Fatalf("exit %+v", ex)
	}
	if b, _ := os.ReadFile(filepath.Join(cfg.LogDir, "work.stdout.0")); string(b) != "out\n" {
		t.Errorf("stdout log %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(cfg.LogDir, "work.stderr.0")); string(b) != "err\n" {
		t.Errorf("stderr log %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(cfg.TaskDir, "name")); string(b) != "work\n" {
		t.Errorf("task ran in %s with env? name file %q", cfg.TaskDir, b)
	}
	if err := d.Destroy(context.Background(), cfg.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(context.Background(), cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Fatalf("Wait after Destroy: %v", err)
	}
}

func TestStartMissingCommandIsUnrecoverable(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	_, err := d.Start(context.Background(), drivertest.TaskConfig(t, "work", map[string]any{"command": "/no/such/program"}))
	if err == nil || !drivers.IsUnrecoverable(err) {
		t.Fatalf("Start: %v (unrecoverable %v)", err, drivers.IsUnrecoverable(err))
	}
	_, err = d.Start(context.Background(), drivertest.TaskConfig(t, "work", map[string]any{"command": 7}))
	if err == nil || !drivers.IsUnrecoverable(err) || !strings.Contains(err.Error(), "command: must be a string") {
		t.Fatalf("Start with a bad config: %v", err)
	}
}

func TestStopSignalsThenKills(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	// Exits on its signal.
	polite := drivertest.TaskConfig(t, "polite", sh(`trap 'exit 0' TERM; while true; do sleep 0.05; done`))
	// Ignores it.
	stubborn := drivertest.TaskConfig(t, "stubborn", sh(`trap '' INT TERM; echo ready > ready; while true; do sleep 0.05; done`))
	for _, c := range []*drivers.TaskConfig{polite, stubborn} {
		if _, err := d.Start(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	drivertest.WaitFor(t, 5*time.Second, "stubborn task ready", func() bool {
		_, err := os.Stat(filepath.Join(stubborn.TaskDir, "ready"))
		return err == nil
	})
	time.Sleep(100 * time.Millisecond) // the polite one's trap is set too
	if err := d.Stop(context.Background(), polite.ID, 5*time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if ex := drivertest.WaitExit(t, d, polite.ID, time.Second); ex.ExitCode != 0 || ex.Signal != 0 {
		t.Errorf("polite exit %+v", ex)
	}
	if err := d.Stop(context.Background(), stubborn.ID, 200*time.Millisecond, "SIGINT"); err != nil {
		t.Fatal(err)
	}
	if ex := drivertest.WaitExit(t, d, stubborn.ID, time.Second); ex.Signal != 9 {
		t.Errorf("stubborn exit %+v, want SIGKILL", ex)
	}
}

func TestRecoverAfterAgentRestart(t *testing.T) {
	t.Parallel()
	d1 := newDriver(t)
	cfg := drivertest.TaskConfig(t, "work", sh(`while [ ! -f go ]; do sleep 0.05; done; exit 5`))
	h, err := d1.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	d1.Close() // the agent goes away; the task runs on

	d2 := newDriver(t)
	if err := d2.Recover(context.Background(), h.Copy()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.TaskDir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if ex := drivertest.WaitExit(t, d2, cfg.ID, 10*time.Second); ex.ExitCode != 5 {
		t.Fatalf("exit after recover %+v", ex)
	}

	// A task that ended while no agent watched is recovered with its exit.
	d3 := newDriver(t)
	if err := d3.Recover(context.Background(), h.Copy()); err != nil {
		t.Fatal(err)
	}
	if ex := drivertest.WaitExit(t, d3, cfg.ID, time.Second); ex.ExitCode != 5 {
		t.Fatalf("exit recorded while down %+v", ex)
	}

	// A launch that never started its task is not found.
	never := drivertest.TaskConfig(t, "never", sh("true"))
	err = d3.Recover(context.Background(), &drivers.TaskHandle{Driver: Name, Config: never})
	if !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Fatalf("Recover of a launch that never ran: %v", err)
	}
}

func TestSignalExecAndStats(t *testing.T) {
	t.Parallel()
	d := newDriver(t)
	cfg := drivertest.TaskConfig(t, "work", sh(`trap 'echo got > usr1' USR1; while true; do sleep 0.05; done`))
	if _, err := d.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	defer d.Destroy(context.Background(), cfg.ID, true)
	time.Sleep(100 * time.Millisecond)
	if err := d.Signal(cfg.ID, "SIGUSR1"); err != nil {
		t.Fatal(err)
	}
	drivertest.WaitFor(t, 5*time.Second, "USR1 trapped", func() bool {
		_, err := os.Stat(filepath.Join(cfg.TaskDir, "usr1"))
		return err == nil
	})
	res, err := d.Exec(context.Background(), cfg.ID, []string{"/bin/sh", "-c", `pwd; echo "$NOMAD_TASK_NAME"; exit 4`})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 4 || string(res.Stdout) != cfg.TaskDir+"\nwork\n" {
		t.Fatalf("exec %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	st, err := d.Stats(context.Background(), cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.MemoryRSSBytes == 0 {
		t.Fatalf("stats %+v", st)
	}
	if err := d.Destroy(context.Background(), cfg.ID, false); !errors.Is(err, drivers.ErrTaskRunning) {
		t.Fatalf("Destroy of a running task without force: %v", err)
	}
	if err := d.Destroy(context.Background(), cfg.ID, true); err != nil {
		t.Fatal(err)
	}
}
