package nodeagent

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/drivers/mock"
	"github.com/drover-sched/drover/structs"
)

// TestMaxRunDuration: a batch alloc that runs past its group's
// max_run_duration (from its creation time) has its tasks killed with a
// Killing event saying why; its poststop task never runs; the alloc
// reports complete with "allocation exceeded max_run_duration", as
// Nomad's.
func TestMaxRunDuration(t *testing.T) {
	t.Parallel()
	cp := newFakeCP()
	m := mock.New()
	startAgent(t, cp, mockAgentConfig(t, t.TempDir(), m))
	main := mockTask("main", nil) // runs until stopped
	post := mockTask("post", map[string]any{"run_for": "10ms"})
	post.Lifecycle = &structs.TaskLifecycle{Hook: structs.TaskLifecycleHookPoststop}
	job := testJob(structs.JobTypeBatch, main, post)
	d := 300 * time.Millisecond
	job.TaskGroups[0].MaxRunDuration = &d
	alloc := testAlloc(job)
	alloc.CreateTime = time.Now().UnixNano()
	cp.addAlloc(alloc)

	rep := cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	if rep.ClientDescription != AllocTimeoutReasonMaxRunDuration {
		t.Errorf("description %q", rep.ClientDescription)
	}
	if time.Since(time.Unix(0, alloc.CreateTime)) < d {
		t.Errorf("stopped before its max_run_duration")
	}
	for _, name := range []string{"main", "post"} {
		st := rep.TaskStates[name]
		ev := findEvent(st, structs.TaskKilling)
		if ev == nil || ev.DisplayMessage != AllocTimeoutReasonMaxRunDuration || st.State != structs.TaskStateDead || st.Failed {
			t.Errorf("%s: Killing %+v, state %+v, events %v", name, ev, st, eventTypes(st))
		}
	}
	if m.Starts("post") != 0 {
		t.Errorf("the poststop task ran (%d starts)", m.Starts("post"))
	}
}

// TestMaxRunDurationNotForServices: a service job's group never carries
// one (the parser refuses it), and the hook ignores it if one does.
func TestMaxRunDurationNotForServices(t *testing.T) {
	d := time.Millisecond
	job := testJob(structs.JobTypeService, mockTask("main", nil))
	job.TaskGroups[0].MaxRunDuration = &d
	if _, ok := maxRunDuration(testAlloc(job)); ok {
		t.Fatal("max_run_duration applied to a service job")
	}
	job.Type = structs.JobTypeSysBatch
	if got, ok := maxRunDuration(testAlloc(job)); !ok || got != d {
		t.Fatalf("sysbatch: %v %v", got, ok)
	}
}
