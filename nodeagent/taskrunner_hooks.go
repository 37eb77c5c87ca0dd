package nodeagent

import (
	"fmt"

	"github.com/drover-sched/drover/structs"
)

// taskHook is one step of a task's life. A hook implements one or more of
// the hook-point interfaces below; the task runner calls them in list
// order at fixed points: the task dir, then the task's environment and
// command line. (Log rotation lives in the task supervisor, which owns the
// task's output; lifecycle ordering is the alloc runner's gates.)
type taskHook interface {
	Name() string
}

// taskPrestartHook runs before the task's first start in this runner. An
// error fails the task (Setup Failure).
type taskPrestartHook interface {
	taskHook
	Prestart(tr *taskRunner) error
}

// taskPoststartHook runs after each start.
type taskPoststartHook interface {
	taskHook
	Poststart(tr *taskRunner, h *supervisorHandle) error
}

// taskExitedHook runs after each exit of the task, before the restart
// decision.
type taskExitedHook interface {
	taskHook
	Exited(tr *taskRunner, ex *exitRecord) error
}

// taskStopHook runs when the task is killed.
type taskStopHook interface {
	taskHook
	Stop(tr *taskRunner) error
}

// taskDirHook builds the task's directories.
type taskDirHook struct{}

func (*taskDirHook) Name() string { return "task_dir" }

func (*taskDirHook) Prestart(tr *taskRunner) error {
	ev := newTaskEvent(structs.TaskSetup)
	tr.update("", ev)
	td, err := tr.allocDir.BuildTask(tr.task.Name)
	if err != nil {
		return err
	}
	tr.taskDir = td
	return nil
}

// taskEnvHook builds the task's environment and asks its driver for the
// command line.
type taskEnvHook struct{}

func (*taskEnvHook) Name() string { return "task_env" }

func (*taskEnvHook) Prestart(tr *taskRunner) error {
	d := tr.agent.drivers[tr.task.Driver]
	if d == nil {
		return fmt.Errorf("driver %q is not enabled on this node", tr.task.Driver)
	}
	tr.drv = d
	tr.env = buildTaskEnv(tr.alloc, tr.task, tr.allocDir, tr.taskDir, tr.agent.Node(), agentEnviron())
	proc, err := d.Prepare(tr.task, tr.env)
	if err != nil {
		return err
	}
	tr.proc = proc
	return nil
}
