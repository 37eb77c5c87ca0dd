package nodeagent

import (
	"github.com/drover-sched/drover/structs"
)

// Task lifecycle, as Nomad's lifecycle block orders a group's tasks:
//
//	prestart (not sidecar)  runs to completion before the main tasks start
//	prestart sidecar        started before the main tasks, runs beside them
//	main                    (no lifecycle block) the group's work
//	poststart               started once every main task has started
//	poststop                runs once every other task is dead
//
// Sidecars are stopped when the main tasks are dead; a task that is not a
// sidecar and has a lifecycle hook is done once it exits successfully,
// whatever the job type.

func lifecycleHook(t *structs.Task) string {
	if t.Lifecycle == nil {
		return ""
	}
	return t.Lifecycle.Hook
}

// isMainTask reports a task without a lifecycle hook.
func isMainTask(t *structs.Task) bool { return lifecycleHook(t) == "" }

// isPoststopTask reports a poststop task.
func isPoststopTask(t *structs.Task) bool {
	return lifecycleHook(t) == structs.TaskLifecycleHookPoststop
}

// isSidecarTask reports a prestart or poststart sidecar.
func isSidecarTask(t *structs.Task) bool {
	h := lifecycleHook(t)
	return t.Lifecycle != nil && t.Lifecycle.Sidecar && (h == structs.TaskLifecycleHookPrestart || h == structs.TaskLifecycleHookPoststart)
}

// isEphemeralTask reports a lifecycle task that is not a sidecar: it is
// done once it exits successfully.
func isEphemeralTask(t *structs.Task) bool { return lifecycleHook(t) != "" && !isSidecarTask(t) }

// lifecycleGates are the points at which waiting tasks may start. A gate
// only ever opens.
type lifecycleGates struct {
	main, poststart, poststop chan struct{}
	mainOpen                  bool
	poststartOpen             bool
	poststopOpen              bool
}

func newLifecycleGates() *lifecycleGates {
	return &lifecycleGates{main: make(chan struct{}), poststart: make(chan struct{}), poststop: make(chan struct{})}
}

// gateFor returns the channel a task waits on before its first start (nil
// for prestart tasks, which start at once).
func (g *lifecycleGates) gateFor(t *structs.Task) <-chan struct{} {
	switch lifecycleHook(t) {
	case structs.TaskLifecycleHookPrestart:
		return nil
	case structs.TaskLifecycleHookPoststart:
		return g.poststart
	case structs.TaskLifecycleHookPoststop:
		return g.poststop
	}
	return g.main
}

// update opens the gates that the task states allow; it reports the gates
// it opened, for logs.
func (g *lifecycleGates) update(tasks []*taskRunner) []string {
	var opened []string
	states := make(map[*taskRunner]*structs.TaskState, len(tasks))
	for _, tr := range tasks {
		states[tr] = tr.State()
	}
	if !g.mainOpen {
		ready := true
		for _, tr := range tasks {
			if lifecycleHook(tr.task) != structs.TaskLifecycleHookPrestart {
				continue
			}
			st := states[tr]
			if isSidecarTask(tr.task) {
				ready = ready && !st.StartedAt.IsZero()
			} else {
				ready = ready && st.Successful()
			}
		}
		if ready {
			g.mainOpen = true
			close(g.main)
			opened = append(opened, "main")
		}
	}
	if g.mainOpen && !g.poststartOpen {
		ready := true
		for _, tr := range tasks {
			if isMainTask(tr.task) && states[tr].StartedAt.IsZero() {
				ready = false
			}
		}
		if ready {
			g.poststartOpen = true
			close(g.poststart)
			opened = append(opened, "poststart")
		}
	}
	if !g.poststopOpen {
		ready := true
		for _, tr := range tasks {
			if !isPoststopTask(tr.task) && states[tr].State != structs.TaskStateDead {
				ready = false
			}
		}
		if ready {
			g.poststopOpen = true
			close(g.poststop)
			opened = append(opened, "poststop")
		}
	}
	return opened
}
