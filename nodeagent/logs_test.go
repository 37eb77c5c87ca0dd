package nodeagent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

// TestLogRotationKeepsMaxFiles: 3.5 MiB of stdout with max_file_size = 1
// MiB and max_files = 2 leaves files 2 (full) and 3 (the rest); a restart
// of the task goes on in the newest file.
func TestLogRotationKeepsMaxFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	task := shTask("writer", `head -c 3670016 /dev/zero; echo to-stderr >&2`)
	task.LogConfig = &structs.LogConfig{MaxFiles: 2, MaxFileSizeMB: 1}
	alloc := testAlloc(testJob(structs.JobTypeBatch, task))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))

	logDir := NewAllocDir(filepath.Join(dir, "alloc"), alloc.ID).LogDir()
	files, err := listLogFiles(logDir, "writer.stdout")
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int64{}
	for _, f := range files {
		got[f.Index] = f.Size
	}
	if len(got) != 2 || got[2] != 1<<20 || got[3] != 512<<10 {
		t.Fatalf("stdout files (index → bytes) %v, want {2: 1MiB, 3: 512KiB}", got)
	}
	b, err := os.ReadFile(filepath.Join(logDir, "writer.stderr.0"))
	if err != nil || string(b) != "to-stderr\n" {
		t.Fatalf("stderr %q %v", b, err)
	}

	// A new rotator (a restarted task) appends to the newest file and
	// rotates from there.
	r, err := newFileRotator(logDir, "writer.stdout", 2, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write(make([]byte, 600<<10)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	files, _ = listLogFiles(logDir, "writer.stdout")
	if len(files) != 2 || files[0].Index != 3 || files[0].Size != 1<<20 || files[1].Index != 4 || files[1].Size != 88<<10 {
		t.Fatalf("after a second writer: %+v", files)
	}
}

// TestLogsFlowWhileAgentDown: the supervisor owns the task's output, so a
// task's log grows while no agent runs.
func TestLogsFlowWhileAgentDown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	cfg := testConfig(t, dir)
	a1 := startAgent(t, cp, cfg)

	alloc := testAlloc(testJob(structs.JobTypeService, shTask("ticker", `i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.05; done`)))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	out := NewAllocDir(filepath.Join(dir, "alloc"), alloc.ID).StdoutPath("ticker")
	waitFor(t, 5*time.Second, "first ticks", func() bool { return countLines(out) > 2 })
	a1.stop(t)
	before := countLines(out)
	waitFor(t, 5*time.Second, "ticks while no agent runs", func() bool { return countLines(out) > before+5 })

	cfg.DevMode = true // stop the task at the end
	startAgent(t, cp, cfg)
	cp.waitReport(t, alloc.ID, "restored", hasStatus(structs.AllocClientStatusRunning))
	b, _ := os.ReadFile(out)
	if !strings.HasPrefix(string(b), "tick 1\ntick 2\n") {
		t.Errorf("log starts %q", string(b)[:min(len(b), 40)])
	}
}

// collectLogs runs StreamLogs and returns the data and the files it came
// from.
func collectLogs(t *testing.T, a *Agent, ctx context.Context, allocID, task, typ, origin string, offset int64, follow bool) (string, []string, error) {
	t.Helper()
	var out strings.Builder
	var files []string
	err := a.StreamLogs(ctx, allocID, task, typ, origin, offset, follow, func(file string, off int64, data []byte) error {
		if len(data) > 0 {
			out.Write(data)
			if len(files) == 0 || files[len(files)-1] != file {
				files = append(files, file)
			}
		}
		return nil
	})
	return out.String(), files, err
}

// TestStreamLogs: a task's output read from the start or the end, across
// rotated files, followed until the task is dead; unknown allocs, tasks
// and bad arguments are refused.
func TestStreamLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	ta := startAgent(t, cp, testConfig(t, dir))
	ctx := context.Background()

	done := testAlloc(testJob(structs.JobTypeBatch, shTask("w", `printf 'one\ntwo\n'; printf 'err\n' >&2`)))
	cp.addAlloc(done)
	cp.waitReport(t, done.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	// Pretend the output had rotated: files 0 (gone), 1 and 2.
	logDir := ta.AllocDir(done.ID).LogDir()
	if err := os.Rename(filepath.Join(logDir, "w.stdout.0"), filepath.Join(logDir, "w.stdout.1")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logDir, "w.stdout.2"), []byte("three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, files, err := collectLogs(t, ta.Agent, ctx, done.ID, "w", LogTypeStdout, LogOriginStart, 0, false)
	if err != nil || got != "one\ntwo\nthree\n" || strings.Join(files, ",") != "alloc/logs/w.stdout.1,alloc/logs/w.stdout.2" {
		t.Fatalf("from the start: %q from %v (%v)", got, files, err)
	}
	if got, _, _ := collectLogs(t, ta.Agent, ctx, done.ID, "w", LogTypeStdout, LogOriginStart, 5, false); got != "wo\nthree\n" {
		t.Errorf("offset 5 from the start: %q", got)
	}
	if got, _, _ := collectLogs(t, ta.Agent, ctx, done.ID, "w", LogTypeStdout, LogOriginEnd, 10, false); got != "two\nthree\n" {
		t.Errorf("10 bytes from the end: %q", got)
	}
	// Following a dead task's log returns once it is read.
	if got, _, err := collectLogs(t, ta.Agent, ctx, done.ID, "w", LogTypeStderr, LogOriginStart, 0, true); got != "err\n" || err != nil {
		t.Errorf("stderr followed: %q %v", got, err)
	}

	// Following a running task: its output arrives as it is written, and
	// the stream ends when the task is stopped.
	live := testAlloc(testJob(structs.JobTypeService, shTask("w", `i=0; while [ $i -lt 1000 ]; do i=$((i+1)); echo line $i; sleep 0.02; done`)))
	cp.addAlloc(live)
	cp.waitReport(t, live.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	type result struct {
		out string
		err error
	}
	res := make(chan result, 1)
	go func() {
		out, _, err := collectLogs(t, ta.Agent, ctx, live.ID, "w", LogTypeStdout, LogOriginStart, 0, true)
		res <- result{out, err}
	}()
	out := NewAllocDir(filepath.Join(dir, "alloc"), live.ID).StdoutPath("w")
	waitFor(t, 10*time.Second, "some output", func() bool { return countLines(out) >= 10 })
	cp.stopAlloc(live.ID)
	select {
	case r := <-res:
		if r.err != nil || !strings.HasPrefix(r.out, "line 1\nline 2\n") || strings.Count(r.out, "\n") < 10 {
			t.Errorf("followed: %d lines, %v", strings.Count(r.out, "\n"), r.err)
		}
		if b, _ := os.ReadFile(out); string(b) != r.out {
			t.Errorf("followed stream differs from the file: %d vs %d bytes", len(r.out), len(b))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("follow did not end after the task was stopped")
	}

	for _, tc := range []struct {
		alloc, task, typ, origin string
		notExist                 bool
	}{
		{"no-such-alloc", "w", LogTypeStdout, LogOriginStart, true},
		{"../client", "w", LogTypeStdout, LogOriginStart, true},
		{done.ID, "nope", LogTypeStdout, LogOriginStart, true},
		{done.ID, "w", "stdin", LogOriginStart, false},
		{done.ID, "w", LogTypeStdout, "middle", false},
		{done.ID, "", LogTypeStdout, LogOriginStart, false},
	} {
		_, _, err := collectLogs(t, ta.Agent, ctx, tc.alloc, tc.task, tc.typ, tc.origin, 0, false)
		if err == nil || errors.Is(err, fs.ErrNotExist) != tc.notExist || (!tc.notExist && !errors.Is(err, ErrBadLogRequest)) {
			t.Errorf("%+v: %v", tc, err)
		}
	}
}
