package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drover-sched/drover/drivers"
)

// Pool is the tasks of one process driver, each under its own supervisor:
// the part of the Driver interface that raw_exec and exec share (launch,
// recover, wait, stop, destroy, signal). A driver builds each launch's
// Spec and adds what is its own (isolation, exec, stats).
type Pool struct {
	// Driver is the driver's name, recorded in handles.
	Driver   string
	Launcher *Launcher

	mu    sync.Mutex
	tasks map[string]*pooled
}

// pooled is one task of a Pool.
type pooled struct {
	cfg  *drivers.TaskConfig
	task *Task
}

// NewPool returns an empty pool whose supervisors start with l.
func NewPool(driver string, l *Launcher) *Pool {
	return &Pool{Driver: driver, Launcher: l, tasks: map[string]*pooled{}}
}

// Launch starts spec's task under a new supervisor and returns its
// handle. A failure that retrying cannot fix wraps
// *drivers.UnrecoverableError.
func (p *Pool) Launch(cfg *drivers.TaskConfig, spec *Spec) (*drivers.TaskHandle, error) {
	h, err := p.Launcher.Launch(spec)
	if err != nil {
		var se *StartError
		if errors.As(err, &se) && se.Unrecoverable {
			return nil, drivers.Unrecoverable(err)
		}
		return nil, err
	}
	p.put(cfg, Watch(h))
	return p.handle(cfg, h)
}

func (p *Pool) handle(cfg *drivers.TaskConfig, h *Handle) (*drivers.TaskHandle, error) {
	st, err := json.Marshal(h.State())
	if err != nil {
		return nil, fmt.Errorf("encode task state: %w", err)
	}
	return &drivers.TaskHandle{Version: drivers.TaskHandleVersion, Driver: p.Driver, Config: cfg,
		StartedAt: h.Task().StartedAt, DriverState: st}, nil
}

// Recover re-attaches to the task of a handle persisted by an earlier
// agent (see drivers.Driver.Recover).
func (p *Pool) Recover(th *drivers.TaskHandle) error {
	if th == nil || th.Config == nil {
		return fmt.Errorf("recover: handle without a task config: %w", drivers.ErrTaskNotFound)
	}
	st := &State{RunID: th.Config.ID}
	if len(th.DriverState) > 0 {
		if err := json.Unmarshal(th.DriverState, st); err != nil {
			return fmt.Errorf("decode task state: %w", err)
		}
	}
	h, ex, launched := Reattach(th.Config.StateDir, st)
	switch {
	case h != nil:
		p.put(th.Config, Watch(h))
	case ex != nil:
		p.put(th.Config, Ended(ex))
	case !launched:
		return drivers.ErrTaskNotFound
	}
	return nil
}

func (p *Pool) put(cfg *drivers.TaskConfig, t *Task) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.tasks[cfg.ID]; old != nil {
		old.task.Close()
	}
	p.tasks[cfg.ID] = &pooled{cfg: cfg, task: t}
}

// Get returns the config and the supervised task of taskID.
func (p *Pool) Get(taskID string) (*drivers.TaskConfig, *Task, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.tasks[taskID]
	if e == nil {
		return nil, nil, fmt.Errorf("task %s: %w", taskID, drivers.ErrTaskNotFound)
	}
	return e.cfg, e.task, nil
}

// Wait implements drivers.Driver.
func (p *Pool) Wait(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	_, t, err := p.Get(taskID)
	if err != nil {
		return nil, err
	}
	in := t.Wait(ctx)
	out := make(chan *drivers.ExitResult, 1)
	go func() {
		defer close(out)
		if ex, ok := <-in; ok {
			out <- ExitResult(ex)
		}
	}()
	return out, nil
}

// Stop implements drivers.Driver.
func (p *Pool) Stop(ctx context.Context, taskID string, timeout time.Duration, signal string) error {
	_, t, err := p.Get(taskID)
	if err != nil {
		return err
	}
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return err
	}
	return t.Stop(ctx, timeout, sig)
}

// Signal implements drivers.Driver.
func (p *Pool) Signal(taskID, signal string) error {
	_, t, err := p.Get(taskID)
	if err != nil {
		return err
	}
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return err
	}
	return t.Signal(sig)
}

// Destroy forgets taskID; a running task is stopped at once when force is
// set, an error otherwise.
func (p *Pool) Destroy(ctx context.Context, taskID string, force bool) error {
	_, t, err := p.Get(taskID)
	if errors.Is(err, drivers.ErrTaskNotFound) {
		return nil
	}
	if t.Exit() == nil && t.Handle() != nil {
		if !force {
			return fmt.Errorf("destroy task %s: %w", taskID, drivers.ErrTaskRunning)
		}
		if err := t.Stop(ctx, 0, unix.SIGKILL); err != nil {
			return fmt.Errorf("destroy task %s: %w", taskID, err)
		}
	}
	p.mu.Lock()
	delete(p.tasks, taskID)
	p.mu.Unlock()
	t.Close()
	return nil
}

// Close stops watching every task (they keep running).
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, e := range p.tasks {
		e.task.Close()
		delete(p.tasks, id)
	}
}

// ExitResult converts a supervisor's exit record.
func ExitResult(ex *ExitRecord) *drivers.ExitResult {
	if ex == nil {
		return nil
	}
	return &drivers.ExitResult{ExitCode: ex.ExitCode, Signal: ex.Signal, Err: ex.Err, ExitedAt: ex.ExitedAt, OOMKilled: ex.OOMKilled}
}
