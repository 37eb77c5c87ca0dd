package rawexec

import "github.com/drover-sched/drover/drivers"

// TaskConfig is raw_exec's task config (Nomad's raw_exec: command and
// args; ${...} in them is interpolated by the task runner).
type TaskConfig struct {
	// Command is the program to run: a path (relative paths are taken
	// from the task dir) or a name looked up in the task's PATH.
	Command string `config:"command,required"`
	// Args are its arguments.
	Args []string `config:"args"`
}

// Spec declares raw_exec's task config, for submission checks and the
// node alike.
var Spec = drivers.Spec[TaskConfig]{Driver: Name}

// Rules checks what the types cannot.
func (c *TaskConfig) Rules(drivers.ValidateContext) drivers.FieldErrors {
	if c.Command == "" {
		return drivers.FieldErrors{{Field: "command", Rule: "must not be empty"}}
	}
	return nil
}
