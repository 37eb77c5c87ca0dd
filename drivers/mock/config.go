package mock

import (
	"time"

	"github.com/drover-sched/drover/drivers"
)

// TaskConfig steers one mock task (Nomad's mock driver has the same
// knobs).
type TaskConfig struct {
	// RunFor is how long the task runs before it exits by itself; 0 means
	// until it is stopped.
	RunFor time.Duration `config:"run_for"`
	// ExitCode, ExitSignal and ExitErrMsg are how it exits by itself.
	ExitCode   int    `config:"exit_code"`
	ExitSignal int    `config:"exit_signal"`
	ExitErrMsg string `config:"exit_err_msg"`
	// OOMKilled makes its own exit an OOM kill.
	OOMKilled bool `config:"oom_killed"`
	// StartError makes Start fail with this message; unrecoverable
	// unless StartErrorRecoverable.
	StartError            string `config:"start_error"`
	StartErrorRecoverable bool   `config:"start_error_recoverable"`
	// StartBlockFor delays Start.
	StartBlockFor time.Duration `config:"start_block_for"`
	// KillAfter is how long the task takes to exit after its stop
	// signal; longer than the kill timeout and it is SIGKILLed.
	KillAfter time.Duration `config:"kill_after"`
	// SignalError makes Signal fail with this message.
	SignalError string `config:"signal_error"`
	// StdoutString is written to the task's stdout log at start.
	StdoutString string `config:"stdout_string"`
	// DriverMessage is emitted as a driver event at start.
	DriverMessage string `config:"driver_message"`
	// RecoverError makes Recover fail with this message.
	RecoverError string `config:"recover_error"`
}

// Spec declares the mock driver's task config.
var Spec = drivers.Spec[TaskConfig]{Driver: Name}
