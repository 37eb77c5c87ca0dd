// Package mock is a task driver for tests of the task and alloc runners:
// no processes, each task's behaviour steered by its config (run_for,
// exit_code, start_error, kill_after, ...), as Nomad's drivers/mock. It
// is not a built-in: tests hand it to the agent (Config.ExtraDrivers).
package mock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// Name is the mock driver's name in job specs (Nomad's).
const Name = "mock_driver"

// Driver runs mock tasks in memory. It is safe for concurrent use.
type Driver struct {
	mu    sync.Mutex
	tasks map[string]*task
	// Starts counts successful starts, by task name.
	starts    map[string]int
	unhealthy string
}

var _ drivers.Driver = (*Driver)(nil)

// New returns a mock driver with no tasks.
func New() *Driver { return &Driver{tasks: map[string]*task{}, starts: map[string]int{}} }

// state is a mock task's driver state: enough to recover it in a new
// Driver (a restarted agent).
type state struct {
	StartedAt time.Time
}

// task is one mock task.
type task struct {
	cfg  *drivers.TaskConfig
	tc   *TaskConfig
	done chan struct{}
	exit *drivers.ExitResult // set before done is closed

	mu       sync.Mutex
	timer    *time.Timer
	finished bool
	signals  []string
}

func (t *task) finish(ex *drivers.ExitResult) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished {
		return
	}
	t.finished = true
	if t.timer != nil {
		t.timer.Stop()
	}
	ex.ExitedAt = time.Now()
	t.exit = ex
	close(t.done)
}

// selfExit is how the task ends by itself.
func (t *task) selfExit() *drivers.ExitResult {
	return &drivers.ExitResult{ExitCode: t.tc.ExitCode, Signal: t.tc.ExitSignal, Err: t.tc.ExitErrMsg, OOMKilled: t.tc.OOMKilled}
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// Capabilities implements drivers.Driver.
func (d *Driver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{SendSignals: true, Exec: true, FSIsolation: drivers.FSIsolationNone}
}

// Fingerprint implements drivers.Driver: healthy unless SetUnhealthy.
func (d *Driver) Fingerprint(context.Context) *structs.DriverInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unhealthy != "" {
		return &structs.DriverInfo{Detected: true, Healthy: false, HealthDescription: d.unhealthy, UpdateTime: time.Now()}
	}
	return &structs.DriverInfo{Attributes: map[string]string{"driver.mock_driver": "1"}, Detected: true, Healthy: true,
		HealthDescription: "Healthy", UpdateTime: time.Now()}
}

// SetUnhealthy makes the fingerprint unhealthy with reason ("" makes it
// healthy again).
func (d *Driver) SetUnhealthy(reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unhealthy = reason
}

// Starts returns how many times a task called name has started.
func (d *Driver) Starts(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.starts[name]
}

// Signals returns the signals sent to the running task called name.
func (d *Driver) Signals(name string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range d.tasks {
		if t.cfg.Name == name && !t.isFinished() {
			t.mu.Lock()
			defer t.mu.Unlock()
			return append([]string(nil), t.signals...)
		}
	}
	return nil
}

func (t *task) isFinished() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.finished
}

// Start implements drivers.Driver.
func (d *Driver) Start(ctx context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	tc, err := Spec.Decode(cfg.Config, drivers.ValidateContext{})
	if err != nil {
		return nil, drivers.Unrecoverable(err)
	}
	if tc.StartBlockFor > 0 {
		select {
		case <-time.After(tc.StartBlockFor):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if tc.StartError != "" {
		err := errors.New(tc.StartError)
		if tc.StartErrorRecoverable {
			return nil, err
		}
		return nil, drivers.Unrecoverable(err)
	}
	if tc.DriverMessage != "" {
		cfg.Emit("%s", tc.DriverMessage)
	}
	if tc.StdoutString != "" && cfg.LogDir != "" {
		f, err := os.OpenFile(filepath.Join(cfg.LogDir, cfg.Name+".stdout.0"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err == nil {
			_, _ = f.WriteString(tc.StdoutString)
			f.Close()
		}
	}
	now := time.Now()
	d.run(cfg, tc, tc.RunFor)
	d.mu.Lock()
	d.starts[cfg.Name]++
	d.mu.Unlock()
	st, _ := json.Marshal(state{StartedAt: now})
	return &drivers.TaskHandle{Version: drivers.TaskHandleVersion, Driver: Name, Config: cfg, StartedAt: now, DriverState: st}, nil
}

// run adds a task that ends by itself after runFor (never when 0).
func (d *Driver) run(cfg *drivers.TaskConfig, tc *TaskConfig, runFor time.Duration) *task {
	t := &task{cfg: cfg, tc: tc, done: make(chan struct{})}
	if runFor > 0 {
		t.mu.Lock()
		t.timer = time.AfterFunc(runFor, func() { t.finish(t.selfExit()) })
		t.mu.Unlock()
	}
	d.mu.Lock()
	d.tasks[cfg.ID] = t
	d.mu.Unlock()
	return t
}

// Recover implements drivers.Driver: a task whose run_for has passed since
// it started comes back ended with its own exit.
func (d *Driver) Recover(_ context.Context, h *drivers.TaskHandle) error {
	if h == nil || h.Config == nil || len(h.DriverState) == 0 {
		return drivers.ErrTaskNotFound
	}
	tc, err := Spec.Decode(h.Config.Config, drivers.ValidateContext{})
	if err != nil {
		return err
	}
	if tc.RecoverError != "" {
		return errors.New(tc.RecoverError)
	}
	var st state
	if err := json.Unmarshal(h.DriverState, &st); err != nil {
		return fmt.Errorf("decode mock state: %w", err)
	}
	if tc.RunFor == 0 {
		d.run(h.Config, tc, 0)
		return nil
	}
	left := time.Until(st.StartedAt.Add(tc.RunFor))
	t := d.run(h.Config, tc, max(left, time.Millisecond))
	if left <= 0 {
		t.finish(t.selfExit())
	}
	return nil
}

func (d *Driver) get(id string) (*task, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tasks[id]
	if t == nil {
		return nil, fmt.Errorf("mock task %s: %w", id, drivers.ErrTaskNotFound)
	}
	return t, nil
}

// Wait implements drivers.Driver.
func (d *Driver) Wait(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	t, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	ch := make(chan *drivers.ExitResult, 1)
	go func() {
		defer close(ch)
		select {
		case <-t.done:
			ch <- t.exit
		case <-ctx.Done():
		}
	}()
	return ch, nil
}

// Stop implements drivers.Driver: the task exits kill_after after the
// signal, by the signal, or by SIGKILL when that is past the timeout.
func (d *Driver) Stop(ctx context.Context, taskID string, timeout time.Duration, signal string) error {
	t, err := d.get(taskID)
	if err != nil {
		return err
	}
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return err
	}
	after, ex := t.tc.KillAfter, &drivers.ExitResult{ExitCode: 128 + int(sig), Signal: int(sig)}
	if after > timeout {
		after, ex = timeout, &drivers.ExitResult{ExitCode: 137, Signal: int(syscall.SIGKILL)}
	}
	select {
	case <-t.done:
		return nil
	case <-time.After(after):
		t.finish(ex)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Destroy implements drivers.Driver.
func (d *Driver) Destroy(_ context.Context, taskID string, force bool) error {
	t, err := d.get(taskID)
	if err != nil {
		return nil
	}
	if !t.isFinished() {
		if !force {
			return drivers.ErrTaskRunning
		}
		t.finish(&drivers.ExitResult{ExitCode: 137, Signal: int(syscall.SIGKILL)})
	}
	d.mu.Lock()
	delete(d.tasks, taskID)
	d.mu.Unlock()
	return nil
}

// Signal implements drivers.Driver: it records the signal.
func (d *Driver) Signal(taskID, signal string) error {
	t, err := d.get(taskID)
	if err != nil {
		return err
	}
	if t.tc.SignalError != "" {
		return errors.New(t.tc.SignalError)
	}
	t.mu.Lock()
	t.signals = append(t.signals, signal)
	t.mu.Unlock()
	return nil
}

// Exec implements drivers.Driver: it echoes the command.
func (d *Driver) Exec(_ context.Context, taskID string, cmd []string) (*drivers.ExecResult, error) {
	if _, err := d.get(taskID); err != nil {
		return nil, err
	}
	return &drivers.ExecResult{Stdout: fmt.Appendf(nil, "%q", cmd)}, nil
}

// Stats implements drivers.Driver with fixed figures.
func (d *Driver) Stats(_ context.Context, taskID string) (*drivers.ResourceUsage, error) {
	if _, err := d.get(taskID); err != nil {
		return nil, err
	}
	return &drivers.ResourceUsage{MemoryRSSBytes: 1 << 20, CPUTotalNanos: 1e6, Timestamp: time.Now()}, nil
}

// Launched returns the config the running task called name was started
// with, or nil (tests read what the task runner hands drivers).
func (d *Driver) Launched(name string) *drivers.TaskConfig {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range d.tasks {
		if t.cfg.Name == name && !t.isFinished() {
			return t.cfg
		}
	}
	return nil
}
