package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// The operations of Nomad's client allocation routes (restart, signal,
// exec) on this node's allocations. Their errors follow one convention,
// which the HTTP API maps to status codes: an alloc that is not on this
// node wraps fs.ErrNotExist (404); a task the alloc lacks, a task that is
// not running, a bad signal or command wraps fs.ErrInvalid (400).

// DefaultSignal is the signal SignalAlloc sends when none is named
// (Nomad's `alloc signal` default).
const DefaultSignal = "SIGKILL"

// allocRunnerOf returns the runner of an alloc on this node.
func (a *Agent) allocRunnerOf(allocID string) (*allocRunner, error) {
	if ar := a.runner(allocID); ar != nil {
		return ar, nil
	}
	return nil, fmt.Errorf("unknown allocation %q on node %s: %w", allocID, a.nodeID, fs.ErrNotExist)
}

// taskRunnerOf returns the runner of task in ar.
func taskRunnerOf(ar *allocRunner, task string) (*taskRunner, error) {
	for _, tr := range ar.taskList() {
		if tr.task.Name == task {
			return tr, nil
		}
	}
	return nil, fmt.Errorf("allocation %s has no task %q: %w", ar.id, task, fs.ErrInvalid)
}

// RestartAlloc restarts a task of the alloc, or with task "" every running
// task (allTasks asks for the same: drover does not re-run tasks that have
// finished, such as completed prestart tasks). A restart stops the task
// with its kill signal and timeout and starts it again at once: it is
// counted in the task's Restarts with a "Restart Signaled" and a
// "Restarting" event, and uses none of the restart policy's attempts, as
// Nomad's. It returns once the restarts are asked for, not done.
func (a *Agent) RestartAlloc(ctx context.Context, allocID, task string, allTasks bool) error {
	ar, err := a.allocRunnerOf(allocID)
	if err != nil {
		return err
	}
	if task != "" && allTasks {
		return fmt.Errorf("restart: name a task or ask for all tasks, not both: %w", fs.ErrInvalid)
	}
	if task != "" {
		tr, err := taskRunnerOf(ar, task)
		if err != nil {
			return err
		}
		return tr.Restart(restartSignaledEvent())
	}
	restarted := 0
	for _, tr := range ar.taskList() {
		if tr.Restart(restartSignaledEvent()) == nil {
			restarted++
		}
	}
	if restarted == 0 {
		return fmt.Errorf("allocation %s has no running task to restart: %w", allocID, fs.ErrInvalid)
	}
	a.logger.Info("restart requested", zap.String("alloc_id", allocID), zap.Int("tasks", restarted))
	return nil
}

// SignalAlloc sends signal (a name such as "SIGHUP" or "HUP", or a number;
// "" means DefaultSignal) to a running task of the alloc, or with task ""
// to every running task, through the task's driver. A "Signaling" event
// records it.
func (a *Agent) SignalAlloc(ctx context.Context, allocID, task, signal string) error {
	ar, err := a.allocRunnerOf(allocID)
	if err != nil {
		return err
	}
	if signal == "" {
		signal = DefaultSignal
	}
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return fmt.Errorf("signal: %v: %w", err, fs.ErrInvalid)
	}
	name := drivers.SignalName(sig)
	if task != "" {
		tr, err := taskRunnerOf(ar, task)
		if err != nil {
			return err
		}
		return tr.Signal(name)
	}
	sent := 0
	var errs []error
	for _, tr := range ar.taskList() {
		if _, _, err := tr.runningLaunch(); err != nil {
			continue
		}
		if err := tr.Signal(name); err != nil {
			errs = append(errs, err)
			continue
		}
		sent++
	}
	if sent == 0 && len(errs) == 0 {
		return fmt.Errorf("allocation %s has no running task to signal: %w", allocID, fs.ErrInvalid)
	}
	return errors.Join(errs...)
}

// ExecAlloc runs opts.Command in the context of a running task of the
// alloc through its driver (the task's environment and working directory;
// for the exec driver its chroot, user and cgroups) and returns the
// command's exit code. Drivers that implement drivers.ExecStreamer stream
// stdin, stdout and stderr and honour opts.Tty; others run the command
// with Driver.Exec (no stdin, output sent when it has ended). A driver
// without exec, or an empty command, is an error wrapping fs.ErrInvalid.
func (a *Agent) ExecAlloc(ctx context.Context, allocID, task string, opts *drivers.ExecOptions) (int, error) {
	ar, err := a.allocRunnerOf(allocID)
	if err != nil {
		return 0, err
	}
	if task == "" {
		return 0, fmt.Errorf("exec: a task name is required: %w", fs.ErrInvalid)
	}
	tr, err := taskRunnerOf(ar, task)
	if err != nil {
		return 0, err
	}
	if opts == nil || len(opts.Command) == 0 || opts.Command[0] == "" {
		return 0, fmt.Errorf("exec: a command is required: %w", fs.ErrInvalid)
	}
	d, id, err := tr.runningLaunch()
	if err != nil {
		return 0, err
	}
	if !d.Capabilities().Exec {
		return 0, fmt.Errorf("task %q: driver %s does not support exec: %w", task, d.Name(), fs.ErrInvalid)
	}
	a.logger.Info("exec in task", zap.String("alloc_id", allocID), zap.String("task", task),
		zap.String("command", opts.Command[0]), zap.Bool("tty", opts.Tty))
	if s, ok := d.(drivers.ExecStreamer); ok {
		code, err := s.ExecStreaming(ctx, id, opts)
		return code, execError(task, err)
	}
	res, err := d.Exec(ctx, id, opts.Command)
	if err != nil {
		return 0, execError(task, err)
	}
	if opts.Stdout != nil {
		if _, err := opts.Stdout.Write(res.Stdout); err != nil {
			return 0, err
		}
	}
	errOut := opts.Stderr
	if opts.Tty {
		errOut = opts.Stdout
	}
	if errOut != nil {
		if _, err := errOut.Write(res.Stderr); err != nil {
			return 0, err
		}
	}
	return res.ExitCode, nil
}

// execError wraps a driver's exec error: a task the driver no longer has
// is not running.
func execError(task string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, drivers.ErrTaskNotFound):
		return fmt.Errorf("task %q is not running: %w", task, fs.ErrInvalid)
	case errors.Is(err, drivers.ErrNotSupported):
		return fmt.Errorf("task %q: %v: %w", task, err, fs.ErrInvalid)
	default:
		return fmt.Errorf("exec in task %q: %w", task, err)
	}
}

// CheckTask reports whether task of the alloc runs on this node now: an
// alloc not here wraps fs.ErrNotExist; an unknown or stopped task wraps
// fs.ErrInvalid.
func (a *Agent) CheckTask(ctx context.Context, allocID, task string) error {
	ar, err := a.allocRunnerOf(allocID)
	if err != nil {
		return err
	}
	tr, err := taskRunnerOf(ar, task)
	if err != nil {
		return err
	}
	_, _, err = tr.runningLaunch()
	return err
}

// AllocChecks returns the latest result of each service check of the
// alloc, by check ID, in Nomad's shape (GET
// /v1/client/allocation/:id/checks): pending until a check has run, the
// last results kept once the alloc's tasks are dead; empty for an alloc
// without checks. An alloc not on this node wraps fs.ErrNotExist.
func (a *Agent) AllocChecks(ctx context.Context, allocID string) (map[string]*structs.CheckQueryResult, error) {
	ar, err := a.allocRunnerOf(allocID)
	if err != nil {
		return nil, err
	}
	return ar.checks.Results(), nil
}
