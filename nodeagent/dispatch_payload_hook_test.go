package nodeagent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-sched/drover/drivers/mock"
	"github.com/drover-sched/drover/structs"
)

// TestDispatchPayloadWritten: a dispatched job's payload is in the task's
// local/ directory, at its dispatch_payload file, before the task starts.
func TestDispatchPayloadWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cp := newFakeCP()
	startAgent(t, cp, mockAgentConfig(t, dir, mock.New()))
	task := mockTask("work", map[string]any{"run_for": "10ms"})
	task.DispatchPayload = &structs.DispatchPayloadConfig{File: "input/data.json"}
	job := testJob(structs.JobTypeBatch, task)
	job.ParentID, job.Dispatched, job.Payload = "proc", true, []byte(`{"n": 1}`)
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	local := NewAllocDir(filepath.Join(dir, "alloc"), alloc.ID).TaskDir("work").LocalDir
	if b, err := os.ReadFile(filepath.Join(local, "input", "data.json")); err != nil || string(b) != `{"n": 1}` {
		t.Fatalf("payload file = %q %v", b, err)
	}
}
