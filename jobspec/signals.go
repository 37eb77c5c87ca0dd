package jobspec

import (
	"slices"
	"strings"
)

// KillSignals are the signal names a task's kill_signal may name: the POSIX
// signals the node agent can send on Linux, spelled as in Nomad ("SIGINT").
// An empty kill_signal means SIGINT, Nomad's default.
var KillSignals = []string{
	"SIGABRT", "SIGALRM", "SIGBUS", "SIGCHLD", "SIGCONT", "SIGFPE", "SIGHUP",
	"SIGILL", "SIGINT", "SIGIO", "SIGIOT", "SIGKILL", "SIGPIPE", "SIGPROF",
	"SIGPWR", "SIGQUIT", "SIGSEGV", "SIGSTKFLT", "SIGSTOP", "SIGSYS", "SIGTERM",
	"SIGTRAP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGUSR1", "SIGUSR2",
	"SIGVTALRM", "SIGWINCH", "SIGXCPU", "SIGXFSZ",
}

// knownSignal reports whether name is one of KillSignals (Nomad's client
// upper-cases the name before looking it up, so case does not matter).
func knownSignal(name string) bool {
	return slices.Contains(KillSignals, strings.ToUpper(name))
}
