package nodeagent

import (
	"fmt"
	"time"

	"github.com/drover-sched/drover/structs"
)

// DriverRawExec is the name of the raw_exec driver.
const DriverRawExec = "raw_exec"

// driver turns a task into the process a supervisor runs. drover's drivers
// are built in; every one of them runs its tasks under a task supervisor,
// which is what lets tasks outlive agent restarts.
type driver interface {
	// Name is the driver's name in job specs ("raw_exec").
	Name() string
	// Fingerprint describes the driver on this node.
	Fingerprint() *structs.DriverInfo
	// Prepare checks the task's driver config and returns the command
	// line to run, interpolated with the task's environment.
	Prepare(task *structs.Task, env *taskEnv) (*processSpec, error)
}

// processSpec is the command a driver wants run for a task.
type processSpec struct {
	Command string
	Args    []string
}

// rawExecDriver runs the task's command as the agent's user, with no
// isolation (as Nomad's raw_exec).
type rawExecDriver struct {
	detectedAt time.Time
}

func newRawExecDriver() *rawExecDriver { return &rawExecDriver{detectedAt: time.Now()} }

func (d *rawExecDriver) Name() string { return DriverRawExec }

func (d *rawExecDriver) Fingerprint() *structs.DriverInfo {
	return &structs.DriverInfo{
		Attributes:        map[string]string{"driver.raw_exec": "1"},
		Detected:          true,
		Healthy:           true,
		HealthDescription: "Healthy",
		UpdateTime:        d.detectedAt,
	}
}

// Prepare reads config { command = "...", args = [...] }.
func (d *rawExecDriver) Prepare(task *structs.Task, env *taskEnv) (*processSpec, error) {
	raw, ok := task.Config["command"]
	if !ok {
		return nil, fmt.Errorf("raw_exec: config.command is required")
	}
	cmd, ok := raw.(string)
	if !ok || cmd == "" {
		return nil, fmt.Errorf("raw_exec: config.command must be a non-empty string")
	}
	spec := &processSpec{Command: env.interpolate(cmd)}
	if rawArgs, ok := task.Config["args"]; ok && rawArgs != nil {
		list, ok := rawArgs.([]any)
		if !ok {
			if ss, ok2 := rawArgs.([]string); ok2 {
				for _, s := range ss {
					list = append(list, s)
				}
			} else {
				return nil, fmt.Errorf("raw_exec: config.args must be a list of strings")
			}
		}
		for i, a := range list {
			s, ok := a.(string)
			if !ok {
				return nil, fmt.Errorf("raw_exec: config.args[%d] must be a string", i)
			}
			spec.Args = append(spec.Args, env.interpolate(s))
		}
	}
	return spec, nil
}
