package nodeagent

import (
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
