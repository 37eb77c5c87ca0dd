package exec

import (
	"path"

	"github.com/drover-sched/drover/drivers"
)

// PID and IPC modes (Nomad's exec pid_mode and ipc_mode).
const (
	ModePrivate = "private"
	ModeHost    = "host"
)

// TaskConfig is the exec driver's task config, Nomad's exec options.
type TaskConfig struct {
	// Command is the program to run, a path inside the task's chroot or
	// a name looked up in the task's PATH there.
	Command string `config:"command,required"`
	// Args are its arguments.
	Args []string `config:"args"`
	// PIDMode and IPCMode are "private" (the default: the task's own
	// namespace) or "host".
	PIDMode string `config:"pid_mode"`
	IPCMode string `config:"ipc_mode"`
	// CapAdd and CapDrop are Nomad's capability lists; drover does not
	// change a task's capabilities yet, so they must be empty.
	CapAdd  []string `config:"cap_add"`
	CapDrop []string `config:"cap_drop"`
	// WorkDir is the task's working directory inside its chroot
	// (default "/", the task dir).
	WorkDir string `config:"work_dir"`
}

// Spec declares the exec driver's task config, for submission checks and
// the node alike.
var Spec = drivers.Spec[TaskConfig]{Driver: Name}

// Rules checks what the types cannot.
func (c *TaskConfig) Rules(drivers.ValidateContext) drivers.FieldErrors {
	var errs drivers.FieldErrors
	add := func(field, rule string) { errs = append(errs, &drivers.FieldError{Field: field, Rule: rule}) }
	if c.Command == "" {
		add("command", "must not be empty")
	}
	for field, mode := range map[string]string{"pid_mode": c.PIDMode, "ipc_mode": c.IPCMode} {
		if mode != "" && mode != ModePrivate && mode != ModeHost {
			add(field, `must be "private" or "host" (got "`+mode+`")`)
		}
	}
	if len(c.CapAdd) > 0 {
		add("cap_add", "changing a task's capabilities is not supported by drover yet")
	}
	if len(c.CapDrop) > 0 {
		add("cap_drop", "changing a task's capabilities is not supported by drover yet")
	}
	if c.WorkDir != "" && !path.IsAbs(c.WorkDir) {
		add("work_dir", `must be an absolute path inside the task (got "`+c.WorkDir+`")`)
	}
	return errs
}
