package nodeagent

import (
	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// A task's life, as the task runner drives it through its driver:
//
//	received ─▶ prestart hooks (task dir, environment, artifacts,
//	            templates; before every start: each hook does its work
//	            once and hands back its result again on a restart)
//	    ─▶ driver.Start ─▶ poststart hooks ─▶ driver.Wait ─▶ exited hooks
//	    ─▶ restart policy: again (prestart, driver.Start) or dead
//	    (a recoverable prestart failure goes to the restart policy too)
//	in-place alloc update ─▶ update hooks (templates re-render; their
//	    change_mode restarts or signals the running task)
//	kill: prekill hooks ─▶ shutdown delay ─▶ driver.Stop (signal, kill after the timeout)
//	    ─▶ stop hooks ─▶ dead
//	agent restart: driver.Recover(handle) ─▶ driver.Wait ...
//
// taskHook is one step of a task's life. A hook implements one or more of
// the hook-point interfaces below; the task runner calls them in list
// order at fixed points. (Log rotation belongs to the drivers, which own
// the task's output; lifecycle ordering is the alloc runner's gates.)
type taskHook interface {
	Name() string
}

// taskPrestartRequest is what a prestart hook is told.
type taskPrestartRequest struct {
	Alloc    *structs.Allocation
	Task     *structs.Task
	AllocDir AllocDir
	TaskDir  TaskDir
	Node     *structs.Node
	// Capabilities are the task driver's: its filesystem isolation
	// decides the paths in the task's environment.
	Capabilities drivers.Capabilities
	// HostEnv is the agent's environment.
	HostEnv []string
	// Network is the alloc's network namespace (bridge mode), nil in
	// host mode.
	Network *drivers.NetworkIsolation
	// Emit records a task event.
	Emit func(*structs.TaskEvent)
	// Done is closed when the task runner is done (the task is dead, or
	// the agent stopped watching it): goroutines a hook starts end then.
	Done <-chan struct{}
}

// taskPrestartResponse is what prestart hooks hand back.
type taskPrestartResponse struct {
	// Env is the task's environment (task_env).
	Env *taskEnv
	// Mounts are the host volumes the task mounts (volumes).
	Mounts []drivers.MountConfig
}

// taskPrestartHook runs before the task's first start in this runner. An
// error fails the task (Setup Failure).
type taskPrestartHook interface {
	taskHook
	Prestart(req *taskPrestartRequest, resp *taskPrestartResponse) error
}

// hookError is a prestart failure with the task event that reports it;
// a recoverable one goes to the task's restart policy instead of failing
// the task at once (Nomad's recoverable hook errors).
type hookError struct {
	err         error
	event       *structs.TaskEvent
	recoverable bool
}

func (e *hookError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error.
func (e *hookError) Unwrap() error { return e.err }

// taskUpdateHook is told of an in-place update of the task's alloc, with
// the task as the new job version has it. It runs on the alloc runner's
// goroutine and must not block.
type taskUpdateHook interface {
	taskHook
	Update(alloc *structs.Allocation, task *structs.Task)
}

// taskRestoreHook is told that the task was re-attached after an agent
// restart (no prestart ran in this agent), with the request and the
// environment a prestart would have had.
type taskRestoreHook interface {
	taskHook
	Restore(req *taskPrestartRequest, resp *taskPrestartResponse) error
}

// taskPoststartHook runs after each start, with the launch's handle.
type taskPoststartHook interface {
	taskHook
	Poststart(task *structs.Task, h *drivers.TaskHandle) error
}

// taskExitedHook runs after each exit of the task, before the restart
// decision.
type taskExitedHook interface {
	taskHook
	Exited(task *structs.Task, ex *drivers.ExitResult) error
}

// taskPreKillHook runs when the task is told to stop, before its
// shutdown delay and kill signal (services deregister here).
type taskPreKillHook interface {
	taskHook
	PreKill(task *structs.Task)
}

// taskStopHook runs when the task is killed.
type taskStopHook interface {
	taskHook
	Stop(task *structs.Task) error
}

// taskDirHook builds the task's directories (its event only the first
// time: on restarts the build only repairs).
type taskDirHook struct{ built bool }

func (*taskDirHook) Name() string { return "task_dir" }

func (h *taskDirHook) Prestart(req *taskPrestartRequest, _ *taskPrestartResponse) error {
	if !h.built {
		req.Emit(newTaskEvent(structs.TaskSetup))
	}
	_, err := req.AllocDir.BuildTask(req.Task.Name)
	h.built = err == nil
	return err
}

// taskEnvHook builds the task's environment, with the directories' paths
// as the task sees them.
type taskEnvHook struct{}

func (*taskEnvHook) Name() string { return "task_env" }

func (*taskEnvHook) Prestart(req *taskPrestartRequest, resp *taskPrestartResponse) error {
	resp.Env = buildTaskEnv(req.Alloc, req.Task, req.AllocDir, req.TaskDir, req.Node, req.HostEnv, req.Capabilities.FSIsolation, req.Network)
	return nil
}
