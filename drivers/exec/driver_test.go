package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/internal/drivertest"
)

func TestMain(m *testing.M) { drivertest.Main(m) }

// newDriver returns an exec driver, or skips the test where exec cannot
// run (not root, no cgroups); DROVER_REQUIRE_EXEC=1 (.ci/run) fails then.
func newDriver(t *testing.T) *Driver {
	t.Helper()
	d, err := New(drivertest.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	if d.unhealthy != "" {
		if os.Getenv("DROVER_REQUIRE_EXEC") == "1" {
			t.Fatalf("exec driver unavailable: %s", d.unhealthy)
		}
		t.Skipf("exec driver unavailable here: %s", d.unhealthy)
	}
	t.Cleanup(d.Close)
	return d
}

// taskConfig is a launch config whose alloc/data the task's user may
// write, as the agent's alloc dir makes it.
func taskConfig(t *testing.T, name, script string) *drivers.TaskConfig {
	cfg := drivertest.TaskConfig(t, name, map[string]any{"command": "/bin/sh", "args": []any{"-c", script}})
	if err := os.Chmod(filepath.Join(cfg.SharedDir, "data"), 0o777); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func start(t *testing.T, d *Driver, cfg *drivers.TaskConfig) {
	t.Helper()
	if _, err := d.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Destroy(context.Background(), cfg.ID, true) })
}

func readReport(t *testing.T, cfg *drivers.TaskConfig) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cfg.SharedDir, "data", "report"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		out[k] = v
	}
	return out
}

// TestIsolation: the task sees only its own PIDs, cannot read a file
// outside its chroot, runs as nobody, has read-only host directories, its
// own IPC namespace and no view of the driver's state dir.
func TestIsolation(t *testing.T) {
	d := newDriver(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("host only"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := taskConfig(t, "probe", fmt.Sprintf(`out=/alloc/data/report
set -- /proc/[0-9]*
echo "pids: $*" > $out
echo "uid: $(id -u)" >> $out
if cat %s >/dev/null 2>&1; then echo "secret: read"; else echo "secret: unreadable"; fi >> $out
if touch /usr/drover-probe 2>/dev/null; then echo "usr: writable"; else echo "usr: read-only"; fi >> $out
if [ -n "$(ls -A /.drover 2>/dev/null)" ]; then echo "state: visible"; else echo "state: hidden"; fi >> $out
echo "ipc: $(readlink /proc/self/ns/ipc)" >> $out
echo "cwd: $(pwd)" >> $out
echo hello > /local/out`, secret))
	start(t, d, cfg)
	if ex := drivertest.WaitExit(t, d, cfg.ID, 20*time.Second); !ex.Successful() {
		b, _ := os.ReadFile(filepath.Join(cfg.LogDir, "probe.stderr.0"))
		t.Fatalf("probe exit %+v: %s", ex, b)
	}
	r := readReport(t, cfg)
	hostIPC, _ := os.Readlink("/proc/self/ns/ipc")
	want := map[string]string{"pids": "/proc/1", "uid": "65534", "secret": "unreadable", "usr": "read-only", "state": "hidden", "cwd": "/"}
	for k, v := range want {
		if r[k] != v {
			t.Errorf("%s: %q, want %q (report %v)", k, r[k], v, r)
		}
	}
	if r["ipc"] == "" || r["ipc"] == hostIPC {
		t.Errorf("task IPC namespace %q, host's %q", r["ipc"], hostIPC)
	}
	if b, err := os.ReadFile(filepath.Join(cfg.LocalDir, "out")); err != nil || string(b) != "hello\n" {
		t.Errorf("task's /local/out on the host: %q %v", b, err)
	}
	// The task's mounts never showed on the host.
	if entries, _ := os.ReadDir(filepath.Join(cfg.TaskDir, "usr")); len(entries) != 0 {
		t.Errorf("host sees %d entries under the task's /usr mount point", len(entries))
	}
}

// TestOOMKilled: a task over its memory limit is killed by the kernel and
// the exit says so.
func TestOOMKilled(t *testing.T) {
	d := newDriver(t)
	cfg := taskConfig(t, "hog", `x=$(head -c 200000000 /dev/zero | tr '\0' x); echo survived`)
	cfg.Resources = drivers.Resources{CPU: 100, MemoryMB: 16}
	start(t, d, cfg)
	ex := drivertest.WaitExit(t, d, cfg.ID, 60*time.Second)
	if !ex.OOMKilled || ex.Signal != 9 {
		t.Fatalf("exit %+v, want an OOM kill", ex)
	}
}

// TestCgroupLimits: memory_max is the hard limit, memory the soft one,
// CPU shares the MHz; the cgroups go with Destroy.
func TestCgroupLimits(t *testing.T) {
	d := newDriver(t)
	// The shell stays (no exec of a last command): right after it
	// starts, and while it execs a command, the cgroup holds no resident
	// memory of the task yet (total_rss 0, seen under load).
	cfg := taskConfig(t, "limited", `echo started > /local/started; while true; do sleep 1; done`)
	cfg.Resources = drivers.Resources{CPU: 250, MemoryMB: 32, MemoryMaxMB: 64}
	start(t, d, cfg)
	mem, cpu := d.cg.dir("memory", cfg.ID), d.cg.dir("cpu", cfg.ID)
	read := func(dir, name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if d.cg.v2 {
		if got := read(mem, "memory.max"); got != fmt.Sprint(64<<20) {
			t.Errorf("memory.max %s", got)
		}
	} else {
		if got := read(mem, "memory.limit_in_bytes"); got != fmt.Sprint(64<<20) {
			t.Errorf("memory.limit_in_bytes %s", got)
		}
		if got := read(mem, "memory.soft_limit_in_bytes"); got != fmt.Sprint(32<<20) {
			t.Errorf("memory.soft_limit_in_bytes %s", got)
		}
		if got := read(cpu, "cpu.shares"); got != "250" {
			t.Errorf("cpu.shares %s", got)
		}
	}
	drivertest.WaitFor(t, 5*time.Second, "the task in its cgroup", func() bool { return len(d.cg.procs(cfg.ID)) > 0 })
	drivertest.WaitFor(t, 10*time.Second, "the task started", func() bool {
		_, err := os.Stat(filepath.Join(cfg.LocalDir, "started"))
		return err == nil
	})
	st, err := d.Stats(context.Background(), cfg.ID)
	if err != nil || st.MemoryRSSBytes == 0 {
		t.Fatalf("stats %+v %v", st, err)
	}
	if err := d.Destroy(context.Background(), cfg.ID, true); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.cg.paths(cfg.ID) {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s left after Destroy: %v", p, err)
		}
	}
}

// TestRecoverExecAndStop: a new driver (a restarted agent) re-attaches;
// exec runs inside the task's chroot as its user; a task that ignores its
// kill signal is killed after the timeout.
func TestRecoverExecAndStop(t *testing.T) {
	d1 := newDriver(t)
	cfg := taskConfig(t, "svc", `trap '' INT; echo started > /local/started; while true; do sleep 0.1; done`)
	h, err := d1.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d1.Destroy(context.Background(), cfg.ID, true) })
	d1.Close()

	d2 := newDriver(t)
	if err := d2.Recover(context.Background(), h.Copy()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d2.Destroy(context.Background(), cfg.ID, true) })
	drivertest.WaitFor(t, 10*time.Second, "task started", func() bool {
		_, err := os.Stat(filepath.Join(cfg.LocalDir, "started"))
		return err == nil
	})
	res, err := d2.Exec(context.Background(), cfg.ID, []string{"/bin/sh", "-c", "id -u; cat /local/started; ls /alloc"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.HasPrefix(string(res.Stdout), "65534\nstarted\n") || !strings.Contains(string(res.Stdout), "data") {
		t.Fatalf("exec: %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if err := d2.Stop(context.Background(), cfg.ID, 300*time.Millisecond, "SIGINT"); err != nil {
		t.Fatal(err)
	}
	if ex := drivertest.WaitExit(t, d2, cfg.ID, 5*time.Second); ex.Signal != 9 {
		t.Fatalf("exit %+v, want SIGKILL after the timeout", ex)
	}
}

func TestStartErrors(t *testing.T) {
	d := newDriver(t)
	// A command missing inside the chroot fails the start, unrecoverably.
	cfg := drivertest.TaskConfig(t, "missing", map[string]any{"command": "/opt/not-in-chroot"})
	if _, err := d.Start(context.Background(), cfg); err == nil || !drivers.IsUnrecoverable(err) || !strings.Contains(err.Error(), "inside the task's chroot") {
		t.Fatalf("Start: %v", err)
	}
	for _, p := range d.cg.paths(cfg.ID) {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s left after a failed start", p)
		}
	}
	cfg = drivertest.TaskConfig(t, "user", map[string]any{"command": "/bin/true"})
	cfg.User = "no-such-user-here"
	if _, err := d.Start(context.Background(), cfg); err == nil || !drivers.IsUnrecoverable(err) {
		t.Fatalf("Start with an unknown user: %v", err)
	}
}
