package nodeagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

// TestStickyDiskMovesDataToReplacement: v2 replaces v1 on the same node
// with a sticky ephemeral disk: it starts only once v1's task is dead,
// and finds v1's alloc/data and the task's local/ dir.
func TestStickyDiskMovesDataToReplacement(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	job := testJob(structs.JobTypeService, shTask("db", `trap 'sleep 0.3; echo v1-stopped >> "$NOMAD_ALLOC_DIR/data/order"; exit 0' INT
echo v1 > "$NOMAD_ALLOC_DIR/data/file"; echo local-v1 > "$NOMAD_TASK_DIR/l"; echo v1-started >> "$NOMAD_ALLOC_DIR/data/order"
while true; do sleep 0.05; done`))
	job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{Sticky: true, SizeMB: 10}
	v1 := testAlloc(job)
	cp.addAlloc(v1)
	cp.waitReport(t, v1.ID, "v1 running", hasStatus(structs.AllocClientStatusRunning))
	waitFor(t, 5*time.Second, "v1 wrote its data", func() bool {
		_, err := os.Stat(filepath.Join(dir, "alloc", v1.ID, "db", "local", "l"))
		return err == nil
	})

	job2 := job.Copy()
	job2.Version = 1
	job2.TaskGroups[0].Tasks[0] = shTask("db", `echo v2-started >> "$NOMAD_ALLOC_DIR/data/order"; cat "$NOMAD_ALLOC_DIR/data/file" "$NOMAD_TASK_DIR/l" > "$NOMAD_ALLOC_DIR/data/seen"
while true; do sleep 0.05; done`)
	v2 := testAlloc(job2)
	v2.PreviousAllocation = v1.ID
	cp.stopAlloc(v1.ID)
	cp.addAlloc(v2)

	cp.waitReport(t, v2.ID, "v2 running", hasStatus(structs.AllocClientStatusRunning))
	data := filepath.Join(dir, "alloc", v2.ID, "alloc", "data")
	waitFor(t, 5*time.Second, "v2 read the data", func() bool { return countLines(filepath.Join(data, "seen")) == 2 })
	seen, _ := os.ReadFile(filepath.Join(data, "seen"))
	if string(seen) != "v1\nlocal-v1\n" {
		t.Errorf("v2 saw %q", seen)
	}
	order, _ := os.ReadFile(filepath.Join(data, "order"))
	if got := strings.Fields(string(order)); strings.Join(got, " ") != "v1-started v1-stopped v2-started" {
		t.Errorf("order %v: v2 must start after v1 stopped", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "alloc", v1.ID, "alloc", "data", "file")); !os.IsNotExist(err) {
		t.Errorf("data still in v1's dir: %v", err)
	}
	cp.stopAlloc(v2.ID)
	cp.waitReport(t, v2.ID, "v2 stopped", hasStatus(structs.AllocClientStatusComplete))
}

// TestRemotePreviousAllocWaitedFor: the previous alloc runs on another
// node: the replacement waits until the control plane reports it stopped.
// A replacement without a sticky or migrating disk does not wait.
func TestRemotePreviousAllocWaitedFor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	cfg := testConfig(t, dir)
	cfg.DevMode = true // stops the tasks at the end
	startAgent(t, cp, cfg)

	job := testJob(structs.JobTypeService, shTask("db", "while true; do sleep 0.05; done"))
	job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{Migrate: true, SizeMB: 10}
	remote := testAlloc(job)
	remote.NodeID = "other-node"
	remote.ClientStatus = structs.AllocClientStatusRunning
	remote.DesiredStatus = structs.AllocDesiredStatusStop
	cp.mu.Lock()
	cp.allocs[remote.ID] = remote // another node's: not among this node's assignments
	cp.mu.Unlock()
	next := testAlloc(job)
	next.PreviousAllocation = remote.ID

	plainJob := testJob(structs.JobTypeService, shTask("web", "while true; do sleep 0.05; done"))
	plain := testAlloc(plainJob)
	plain.PreviousAllocation = remote.ID
	cp.addAlloc(next)
	cp.addAlloc(plain)

	cp.waitReport(t, plain.ID, "no sticky disk: runs at once", hasStatus(structs.AllocClientStatusRunning))
	time.Sleep(300 * time.Millisecond)
	if r := cp.latest(next.ID); r == nil || r.ClientStatus != structs.AllocClientStatusPending {
		t.Fatalf("replacement did not wait: %+v", r)
	}
	cp.mu.Lock()
	calls := cp.prevCalls
	cp.allocs[remote.ID].ClientStatus = structs.AllocClientStatusComplete
	cp.mu.Unlock()
	if calls == 0 {
		t.Error("the control plane was not asked")
	}
	cp.waitReport(t, next.ID, "runs once the remote previous alloc stopped", hasStatus(structs.AllocClientStatusRunning))
}
