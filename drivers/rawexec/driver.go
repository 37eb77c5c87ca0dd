// Package rawexec is the raw_exec driver: the task's command runs as the
// agent's user with no isolation (Nomad's raw_exec), under drover's task
// supervisor, so that it outlives agent restarts. It decides how a
// raw_exec task is started and inspected; the supervisor package owns the
// process machinery.
package rawexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/drivers/shared/supervisor"
	"github.com/drover-sched/drover/structs"
)

// Name is the driver's name in job specs.
const Name = "raw_exec"

// Driver runs raw_exec tasks. Create it with New.
type Driver struct {
	*supervisor.Pool
	detectedAt time.Time
}

var (
	_ drivers.Driver       = (*Driver)(nil)
	_ drivers.AllocCleaner = (*Driver)(nil)
)

// New returns the driver; opts.SupervisorCommand says how supervisors
// start.
func New(opts drivers.Options) (*Driver, error) {
	if len(opts.SupervisorCommand) == 0 {
		return nil, errors.New("raw_exec: no task supervisor command")
	}
	l := &supervisor.Launcher{Command: opts.SupervisorCommand, Env: opts.SupervisorEnv}
	return &Driver{Pool: supervisor.NewPool(Name, l), detectedAt: time.Now()}, nil
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// Capabilities implements drivers.Driver: signals and exec, no filesystem
// isolation.
func (d *Driver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{SendSignals: true, Exec: true, FSIsolation: drivers.FSIsolationNone}
}

// Fingerprint implements drivers.Driver: raw_exec is always there.
func (d *Driver) Fingerprint(context.Context) *structs.DriverInfo {
	return &structs.DriverInfo{
		Attributes:        map[string]string{"driver.raw_exec": "1"},
		Detected:          true,
		Healthy:           true,
		HealthDescription: "Healthy",
		UpdateTime:        d.detectedAt,
	}
}

// Start implements drivers.Driver.
func (d *Driver) Start(_ context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	tc, err := Spec.Decode(cfg.Config, drivers.ValidateContext{})
	if err != nil {
		return nil, drivers.Unrecoverable(fmt.Errorf("raw_exec config: %w", err))
	}
	if err := linkVolumes(cfg); err != nil {
		return nil, drivers.Unrecoverable(err)
	}
	return d.Launch(cfg, &supervisor.Spec{
		RunID:           cfg.ID,
		Command:         tc.Command,
		Args:            tc.Args,
		Env:             cfg.EnvList(),
		Dir:             cfg.TaskDir,
		LogDir:          cfg.LogDir,
		LogBase:         cfg.Name,
		LogMaxFiles:     cfg.Logs.MaxFiles,
		LogMaxFileBytes: cfg.Logs.MaxFileBytes,
		LogDisabled:     cfg.Logs.Disabled,
		StateDir:        cfg.StateDir,
	})
}

// linkVolumes makes each host volume of the task (volume_mount) a symlink
// at its destination inside the task dir, to the volume's host path: a
// raw_exec task sees the host's filesystem, so a link is all it needs (and
// read_only cannot be enforced on it: it can reach the host path anyway).
// Nomad's raw_exec refuses host volumes altogether; drover links them.
func linkVolumes(cfg *drivers.TaskConfig) error {
	for _, m := range cfg.Mounts {
		link := filepath.Join(cfg.TaskDir, filepath.Clean("/"+m.TaskPath))
		if link == cfg.TaskDir {
			return fmt.Errorf("volume_mount destination %q is the task dir itself", m.TaskPath)
		}
		if cur, err := os.Readlink(link); err == nil && cur == m.HostPath {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return fmt.Errorf("volume_mount %s: %w", m.TaskPath, err)
		}
		if err := os.Symlink(m.HostPath, link); err != nil {
			return fmt.Errorf("volume_mount %s: %w", m.TaskPath, err)
		}
	}
	return nil
}

// Recover implements drivers.Driver.
func (d *Driver) Recover(_ context.Context, h *drivers.TaskHandle) error { return d.Pool.Recover(h) }

// Exec implements drivers.Driver: cmd runs in the task dir with the task's
// environment, as the agent's user.
func (d *Driver) Exec(ctx context.Context, taskID string, cmd []string) (*drivers.ExecResult, error) {
	cfg, _, err := d.Get(taskID)
	if err != nil {
		return nil, err
	}
	return RunCommand(ctx, cmd, cfg.TaskDir, cfg.EnvList(), nil, nil)
}

// Stats implements drivers.Driver: the task's process group, from /proc.
func (d *Driver) Stats(_ context.Context, taskID string) (*drivers.ResourceUsage, error) {
	_, t, err := d.Get(taskID)
	if err != nil {
		return nil, err
	}
	if t.Exit() != nil || t.Handle() == nil {
		return nil, fmt.Errorf("task %s has exited: %w", taskID, drivers.ErrTaskNotFound)
	}
	rss, cpu, err := supervisor.GroupUsage(t.Handle().Task().Pid)
	if err != nil {
		return nil, fmt.Errorf("task %s stats: %w", taskID, err)
	}
	return &drivers.ResourceUsage{MemoryRSSBytes: rss, CPUTotalNanos: cpu, Timestamp: time.Now()}, nil
}

// CleanupAlloc implements drivers.AllocCleaner: it kills the supervisors
// and tasks recorded in stateDirs.
func (d *Driver) CleanupAlloc(_ context.Context, _ string, stateDirs []string) int {
	return supervisor.KillLeftovers(stateDirs)
}

// RunCommand runs cmd in dir with env and returns its output and exit
// code; prepare, when set, adjusts the command before it starts, and
// started is told its pid once it has. Exit codes are not errors; failing
// to start is.
func RunCommand(ctx context.Context, cmd []string, dir string, env []string, prepare func(*exec.Cmd), started func(pid int)) (*drivers.ExecResult, error) {
	if len(cmd) == 0 || cmd[0] == "" {
		return nil, errors.New("exec: no command")
	}
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	c.Dir, c.Env = dir, env
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if prepare != nil {
		prepare(c)
	}
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("exec %s: %w", cmd[0], err)
	}
	if started != nil {
		started(c.Process.Pid)
	}
	err := c.Wait()
	res := &drivers.ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if res.ExitCode < 0 {
			res.ExitCode = 128 + 9 // killed (by ctx)
		}
	default:
		return nil, fmt.Errorf("exec %s: %w", cmd[0], err)
	}
	return res, nil
}
