package nodeagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

func lifecycleTask(name, hook string, sidecar bool, script string) *structs.Task {
	t := shTask(name, script)
	if hook != "" {
		t.Lifecycle = &structs.TaskLifecycle{Hook: hook, Sidecar: sidecar}
	}
	return t
}

// mark appends a line to the alloc's order file.
func mark(line string) string { return `echo ` + line + ` >> "$NOMAD_ALLOC_DIR/data/order"` }

func readOrder(t *testing.T, dir, allocID string) []string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "alloc", allocID, "alloc", "data", "order"))
	return strings.Fields(string(b))
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// TestLifecycleBatchOrderAndSidecars: prestart runs to completion and the
// prestart sidecar is up before the main task starts; poststart starts
// after it; once the main task is done the sidecar is stopped, the
// poststop task runs last, and the batch alloc completes.
func TestLifecycleBatchOrderAndSidecars(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	alloc := testAlloc(testJob(structs.JobTypeBatch,
		lifecycleTask("main", "", false, mark("main-start")+`; sleep 0.3; `+mark("main-end")),
		lifecycleTask("pre", structs.TaskLifecycleHookPrestart, false, `sleep 0.2; `+mark("pre-done")),
		lifecycleTask("side", structs.TaskLifecycleHookPrestart, true,
			`trap '`+mark("side-stop")+`; exit 0' INT; `+mark("side-start")+`; while true; do sleep 0.05; done`),
		lifecycleTask("post", structs.TaskLifecycleHookPoststart, false, mark("poststart")),
		lifecycleTask("cleanup", structs.TaskLifecycleHookPoststop, false, mark("poststop")),
	))
	cp.addAlloc(alloc)
	rep := cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	order := readOrder(t, dir, alloc.ID)
	before := func(a, b string) {
		if ia, ib := indexOf(order, a), indexOf(order, b); ia < 0 || ib < 0 || ia > ib {
			t.Errorf("%s should come before %s: %v", a, b, order)
		}
	}
	before("pre-done", "main-start")
	before("side-start", "main-start")
	before("main-start", "poststart")
	before("main-end", "side-stop")
	before("side-stop", "poststop")
	if len(order) != 7 {
		t.Errorf("order %v: a task ran more or less than once", order)
	}
	for name, st := range rep.TaskStates {
		if st.State != structs.TaskStateDead || st.Failed {
			t.Errorf("task %s: %s failed=%v", name, st.State, st.Failed)
		}
	}
	if findEvent(rep.TaskStates["side"], structs.TaskMainDead) == nil {
		t.Errorf("sidecar events %v", eventTypes(rep.TaskStates["side"]))
	}
	if rep.TaskStates["pre"].Restarts != 0 || rep.TaskStates["post"].Restarts != 0 {
		t.Error("an ephemeral lifecycle task was restarted after success")
	}
	waitFor(t, 5*time.Second, "no process left", func() bool { return len(procsReferencing(dir)) == 0 })
}

// TestLifecycleServiceStopRunsPoststop: a service alloc whose ephemeral
// prestart task succeeded is not restarted (even in a service job); on
// stop the main task goes first, the sidecar next, and the poststop task
// still runs.
func TestLifecycleServiceStopRunsPoststop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	alloc := testAlloc(testJob(structs.JobTypeService,
		lifecycleTask("main", "", false, `trap '`+mark("main-stop")+`; exit 0' INT; `+mark("main-start")+`; while true; do sleep 0.05; done`),
		lifecycleTask("pre", structs.TaskLifecycleHookPrestart, false, mark("pre-done")),
		lifecycleTask("side", structs.TaskLifecycleHookPoststart, true,
			`trap '`+mark("side-stop")+`; exit 0' INT; `+mark("side-start")+`; while true; do sleep 0.05; done`),
		lifecycleTask("cleanup", structs.TaskLifecycleHookPoststop, false, mark("poststop")),
	))
	alloc.Job.TaskGroups[0].RestartPolicy.Attempts = 2
	cp.addAlloc(alloc)
	rep := cp.waitReport(t, alloc.ID, "running with its sidecar", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusRunning && a.TaskStates["side"].State == structs.TaskStateRunning
	})
	if st := rep.TaskStates["pre"]; !st.Successful() || st.Restarts != 0 {
		t.Errorf("prestart task %+v", st)
	}
	if st := rep.TaskStates["cleanup"]; st.State != structs.TaskStatePending {
		t.Errorf("poststop task started early: %s", st.State)
	}
	cp.stopAlloc(alloc.ID)
	rep = cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	want := "pre-done main-start side-start main-stop side-stop poststop"
	if got := strings.Join(readOrder(t, dir, alloc.ID), " "); got != want {
		t.Errorf("order %q, want %q", got, want)
	}
	if st := rep.TaskStates["cleanup"]; !st.Successful() || findEvent(st, structs.TaskStarted) == nil {
		t.Errorf("poststop task %+v", st)
	}
	waitFor(t, 5*time.Second, "no process left", func() bool { return len(procsReferencing(dir)) == 0 })
}

// TestLifecycleFailedPrestart: a prestart task that fails keeps the main
// task from ever starting and fails the alloc.
func TestLifecycleFailedPrestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	alloc := testAlloc(testJob(structs.JobTypeBatch,
		lifecycleTask("main", "", false, mark("main")),
		lifecycleTask("pre", structs.TaskLifecycleHookPrestart, false, `exit 2`),
	))
	cp.addAlloc(alloc)
	// The alloc is failed as soon as the prestart task is (failed wins
	// over pending, as in Nomad); the main task is killed after that.
	rep := cp.waitReport(t, alloc.ID, "failed with the main task dead", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusFailed &&
			a.TaskStates["main"] != nil && a.TaskStates["main"].State == structs.TaskStateDead
	})
	st := rep.TaskStates["main"]
	if st.State != structs.TaskStateDead || findEvent(st, structs.TaskStarted) != nil || findEvent(st, structs.TaskSiblingFailed) == nil {
		t.Errorf("main task %+v events %v", st, eventTypes(st))
	}
	if order := readOrder(t, dir, alloc.ID); len(order) != 0 {
		t.Errorf("main ran: %v", order)
	}
}
