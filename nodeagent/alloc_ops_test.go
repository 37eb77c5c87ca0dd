package nodeagent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/drivers/mock"
	"github.com/drover-sched/drover/structs"
)

// runningMockAlloc starts an agent with the mock driver and one running
// service alloc whose group allows no restarts (so a restart that used an
// attempt would fail the task).
func runningMockAlloc(t *testing.T, tasks ...*structs.Task) (*testAgent, *fakeCP, *mock.Driver, *structs.Allocation) {
	t.Helper()
	cp := newFakeCP()
	m := mock.New()
	ta := startAgent(t, cp, mockAgentConfig(t, t.TempDir(), m))
	if len(tasks) == 0 {
		tasks = []*structs.Task{mockTask("web", map[string]any{})}
	}
	alloc := testAlloc(testJob(structs.JobTypeService, tasks...))
	cp.addAlloc(alloc)
	var names []string
	for _, task := range tasks {
		names = append(names, task.Name)
	}
	cp.waitReport(t, alloc.ID, "every task running", allRunning(names...))
	return ta, cp, m, alloc
}

func TestRestartAllocIsCountedAsARestartNotAFailure(t *testing.T) {
	t.Parallel()
	ta, cp, m, alloc := runningMockAlloc(t, mockTask("web", map[string]any{}), mockTask("side", map[string]any{}))
	ctx := context.Background()

	if err := ta.RestartAlloc(ctx, alloc.ID, "web", false); err != nil {
		t.Fatal(err)
	}
	var st *structs.TaskState
	waitFor(t, 10*time.Second, "web restarted", func() bool {
		a := cp.latest(alloc.ID)
		st = a.TaskStates["web"]
		return m.Starts("web") == 2 && st != nil && st.State == structs.TaskStateRunning && st.Restarts == 1
	})
	if st.Failed || cp.latest(alloc.ID).ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("a user's restart failed the task: %+v", st)
	}
	if findEvent(st, structs.TaskRestartSignal) == nil {
		t.Errorf("no %q event: %v", structs.TaskRestartSignal, eventTypes(st))
	}
	if ev := findEvent(st, structs.TaskRestarting); ev == nil || ev.RestartReason != ReasonUserRestart || ev.StartDelay != 0 {
		t.Errorf("Restarting event %+v", ev)
	}
	if m.Starts("side") != 1 {
		t.Errorf("restarting one task restarted its sibling: %d starts", m.Starts("side"))
	}

	// The whole alloc: every running task.
	if err := ta.RestartAlloc(ctx, alloc.ID, "", false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "both restarted", func() bool {
		a := cp.latest(alloc.ID)
		return m.Starts("web") == 3 && m.Starts("side") == 2 && a.TaskStates["side"].State == structs.TaskStateRunning &&
			a.TaskStates["web"].State == structs.TaskStateRunning
	})

	for name, err := range map[string]error{
		"unknown alloc": ta.RestartAlloc(ctx, "nope", "", false),
		"unknown task":  ta.RestartAlloc(ctx, alloc.ID, "db", false),
		"task and all":  ta.RestartAlloc(ctx, alloc.ID, "web", true),
	} {
		want := fs.ErrInvalid
		if name == "unknown alloc" {
			want = fs.ErrNotExist
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
}

func TestRestartOfAStoppedTaskIsRefused(t *testing.T) {
	t.Parallel()
	cp := newFakeCP()
	m := mock.New()
	ta := startAgent(t, cp, mockAgentConfig(t, t.TempDir(), m))
	alloc := testAlloc(testJob(structs.JobTypeBatch, mockTask("once", map[string]any{"run_for": "1ms"})))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	if err := ta.RestartAlloc(context.Background(), alloc.ID, "once", false); !errors.Is(err, fs.ErrInvalid) || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("restart of a dead task: %v", err)
	}
	if err := ta.RestartAlloc(context.Background(), alloc.ID, "", false); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("restart of an alloc with nothing running: %v", err)
	}
}

func TestSignalAlloc(t *testing.T) {
	t.Parallel()
	ta, cp, m, alloc := runningMockAlloc(t)
	ctx := context.Background()
	if err := ta.SignalAlloc(ctx, alloc.ID, "web", "hup"); err != nil {
		t.Fatal(err)
	}
	if err := ta.SignalAlloc(ctx, alloc.ID, "", ""); err != nil { // every task, SIGKILL
		t.Fatal(err)
	}
	if got := m.Signals("web"); len(got) != 2 || got[0] != "SIGHUP" || got[1] != "SIGKILL" {
		t.Fatalf("signals sent %v", got)
	}
	waitFor(t, 5*time.Second, "Signaling event reported", func() bool {
		st := cp.latest(alloc.ID).TaskStates["web"]
		ev := findEvent(st, structs.TaskSignaling)
		return countEvents(st, structs.TaskSignaling) == 2 && ev.TaskSignal == "SIGKILL"
	})
	for name, c := range map[string]struct {
		err  error
		want error
	}{
		"bad signal":    {ta.SignalAlloc(ctx, alloc.ID, "web", "SIGNOPE"), fs.ErrInvalid},
		"unknown task":  {ta.SignalAlloc(ctx, alloc.ID, "db", "HUP"), fs.ErrInvalid},
		"unknown alloc": {ta.SignalAlloc(ctx, "nope", "web", "HUP"), fs.ErrNotExist},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", name, c.err, c.want)
		}
	}
}

// rawExecAlloc runs a raw_exec task that sleeps, for exec and stats.
func rawExecAlloc(t *testing.T) (*testAgent, *structs.Allocation) {
	t.Helper()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	ta := startAgent(t, cp, testConfig(t, dir))
	task := shTask("web", "sleep 300")
	task.Env = map[string]string{"GREETING": "hello from the task"}
	alloc := testAlloc(testJob(structs.JobTypeService, task))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	t.Cleanup(func() {
		cp.stopAlloc(alloc.ID)
		cp.waitReport(t, alloc.ID, "stopped", func(a *structs.Allocation) bool { return a.TerminalStatus() })
	})
	return ta, alloc
}

func TestExecAllocRunsInTheTaskContext(t *testing.T) {
	t.Parallel()
	ta, alloc := rawExecAlloc(t)
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	code, err := ta.ExecAlloc(ctx, alloc.ID, "web", &drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", `read line; echo "got $line"; echo "$GREETING"; pwd; echo oops >&2; exit 3`},
		Stdin:   strings.NewReader("ping\n"), Stdout: &stdout, Stderr: &stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	taskDir := ta.AllocDir(alloc.ID).TaskDir("web").Dir
	if code != 3 || stdout.String() != "got ping\nhello from the task\n"+taskDir+"\n" || stderr.String() != "oops\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}

	// With a terminal: the command's stdin is a tty, and its output comes
	// back through it.
	var tty bytes.Buffer
	resize := make(chan drivers.TerminalSize, 1)
	resize <- drivers.TerminalSize{Height: 40, Width: 100}
	code, err = ta.ExecAlloc(ctx, alloc.ID, "web", &drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", `sleep 0.2; test -t 0 && echo is-a-tty; stty size`}, Tty: true,
		Stdout: &tty, Resize: resize,
	})
	if err != nil || code != 0 || !strings.Contains(tty.String(), "is-a-tty") || !strings.Contains(tty.String(), "40 100") {
		t.Fatalf("tty exec: exit %d err %v output %q", code, err, tty.String())
	}

	for name, c := range map[string]struct {
		err  error
		want error
	}{
		"unknown task":  {execErr(ta.ExecAlloc(ctx, alloc.ID, "db", &drivers.ExecOptions{Command: []string{"true"}})), fs.ErrInvalid},
		"no command":    {execErr(ta.ExecAlloc(ctx, alloc.ID, "web", &drivers.ExecOptions{})), fs.ErrInvalid},
		"unknown alloc": {execErr(ta.ExecAlloc(ctx, "nope", "web", &drivers.ExecOptions{Command: []string{"true"}})), fs.ErrNotExist},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", name, c.err, c.want)
		}
	}
}

func execErr(_ int, err error) error { return err }

func TestAllocStatsOfARunningTask(t *testing.T) {
	t.Parallel()
	ta, alloc := rawExecAlloc(t)
	ctx := context.Background()
	u, err := ta.AllocStats(ctx, alloc.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	web := u.Tasks["web"]
	if web == nil || web.ResourceUsage.MemoryStats.RSS == 0 || u.ResourceUsage.MemoryStats.RSS != web.ResourceUsage.MemoryStats.RSS ||
		u.Timestamp == 0 || len(web.ResourceUsage.CpuStats.Measured) == 0 {
		t.Fatalf("stats %+v (web %+v)", u, web)
	}
	if _, err := ta.AllocStats(ctx, alloc.ID, "db"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("unknown task: %v", err)
	}
	if _, err := ta.AllocStats(ctx, "nope", ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("unknown alloc: %v", err)
	}
}

func TestHostStatsFromProc(t *testing.T) {
	t.Parallel()
	ta, _, _, _ := runningMockAlloc(t)
	hs, err := ta.HostStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if hs.Memory.Total == 0 || hs.Memory.Used > hs.Memory.Total || len(hs.CPU) == 0 || hs.Uptime == 0 ||
		hs.AllocDirStats == nil || hs.AllocDirStats.Size == 0 || len(hs.DiskStats) == 0 {
		t.Fatalf("host stats %+v", hs)
	}
	for _, c := range hs.CPU {
		if sum := c.User + c.System + c.Idle; sum < 0 || sum > 100.01 || !strings.HasPrefix(c.CPU, "cpu") {
			t.Errorf("core %+v", c)
		}
	}
}

func TestAllocFSStaysInsideTheAllocDir(t *testing.T) {
	t.Parallel()
	ta, _, _, alloc := runningMockAlloc(t)
	ctx := context.Background()
	ad := ta.AllocDir(alloc.ID)
	outside := filepath.Join(t.TempDir(), "outside.txt")
	must(t, os.WriteFile(outside, []byte("secret outside"), 0o644))
	must(t, os.WriteFile(filepath.Join(ad.SharedDir(), "data", "hello.txt"), []byte("hello, alloc"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(ad.SharedDir(), "data", "out-link")))
	must(t, os.Symlink("hello.txt", filepath.Join(ad.SharedDir(), "data", "in-link")))
	must(t, os.Symlink("../..", filepath.Join(ad.SharedDir(), "data", "up-link"))) // the alloc dir itself: inside
	must(t, os.Symlink("../../..", filepath.Join(ad.SharedDir(), "data", "above-link")))
	must(t, os.WriteFile(filepath.Join(ad.TaskDir("web").SecretsDir, "token"), []byte("s3cr3t"), 0o600))

	ls, err := ta.ListFiles(ctx, alloc.ID, "/")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range ls {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "alloc,web" {
		t.Errorf("ls / = %v", names)
	}
	fi, err := ta.StatFile(ctx, alloc.ID, "alloc/data/hello.txt")
	if err != nil || fi.Size != 12 || fi.IsDir || !strings.HasPrefix(fi.ContentType, "text/plain") {
		t.Errorf("stat: %+v %v", fi, err)
	}
	for _, p := range []string{"alloc/data/hello.txt", "alloc/data/in-link", "alloc/data/up-link/alloc/data/hello.txt"} {
		f, err := ta.OpenFile(ctx, alloc.ID, p)
		if err != nil {
			t.Errorf("open %s: %v", p, err)
			continue
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != "hello, alloc" {
			t.Errorf("%s = %q", p, b)
		}
	}

	escapes := []string{"../../..", "alloc/../../x", "../" + alloc.ID + "/alloc", "alloc/data/out-link", "alloc/data/above-link",
		"alloc/data/above-link/etc", "web/secrets/token", "web/secrets", "alloc/data/up-link/web/secrets/token"}
	for _, p := range escapes {
		if _, err := ta.OpenFile(ctx, alloc.ID, p); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("open %q: %v, want a permission error", p, err)
		}
		if _, err := ta.StatFile(ctx, alloc.ID, p); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("stat %q: %v, want a permission error", p, err)
		}
		if _, err := ta.ListFiles(ctx, alloc.ID, p); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("ls %q: %v, want a permission error", p, err)
		}
	}
	if _, err := ta.OpenFile(ctx, alloc.ID, "alloc/data/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ta.OpenFile(ctx, alloc.ID, "alloc"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("open of a directory: %v", err)
	}
	if _, err := ta.ListFiles(ctx, "nope", "/"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("unknown alloc: %v", err)
	}
	if _, err := ta.ListFiles(ctx, "..", "/"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("alloc ID \"..\": %v", err)
	}

	// Stream: what is there from the offset, then what is appended.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- ta.StreamFile(sctx, alloc.ID, "alloc/data/hello.txt", "start", 7, func(file string, off int64, data []byte, event string) error {
			got.Write(data)
			if strings.Contains(got.String(), "more") {
				cancel()
			}
			return nil
		})
	}()
	time.Sleep(300 * time.Millisecond)
	f, err := os.OpenFile(filepath.Join(ad.SharedDir(), "data", "hello.txt"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, _ = f.WriteString(" more")
	f.Close()
	select {
	case err := <-done:
		if err != nil || got.String() != "alloc more" {
			t.Errorf("stream: %q %v", got.String(), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream did not follow the append")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
