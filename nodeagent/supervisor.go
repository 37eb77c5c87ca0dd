package nodeagent

import "github.com/drover-sched/drover/drivers/shared/supervisor"

// SupervisorSubcommand is the argument that makes the drover binary run as
// a task supervisor (cmd/drover routes it to SupervisorMain).
const SupervisorSubcommand = supervisor.Subcommand

// SupervisorMain is the entry point of a task supervisor process: the
// drover binary re-executed as "drover task-supervisor SPEC" by the
// process drivers (args are the arguments after the subcommand). It
// returns the process exit code. See package supervisor.
func SupervisorMain(args []string) int { return supervisor.Main(args) }
