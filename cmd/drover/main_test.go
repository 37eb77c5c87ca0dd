package main

import (
	"strings"
	"testing"
)

// TestEveryCommandHasHelp: each registered command has a synopsis and a
// help text that starts with its usage line; -h prints it and exits 0.
func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	for name, factory := range commands(Meta{}) {
		cmd, err := factory()
		if err != nil {
			t.Fatal(err)
		}
		if cmd.Synopsis() == "" {
			t.Errorf("%s: no synopsis", name)
		}
		if !strings.HasPrefix(cmd.Help(), "Usage: drover "+name) {
			t.Errorf("%s: help does not start with its usage line:\n%s", name, cmd.Help())
		}
		if isHidden(name) {
			continue
		}
		r := runCmd(t, append(strings.Fields(name), "-h")...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: drover "+name) {
			t.Errorf("%s -h: %s", name, r)
		}
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	r := runCmd(t, "nonsense")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Unknown command: nonsense", "Usage: drover", "job ")
	r = runCmd(t)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Usage: drover")
	if strings.Contains(r.stderr, "task-supervisor") {
		t.Errorf("the hidden task-supervisor is listed:\n%s", r.stderr)
	}
	// A group lists its subcommands.
	r = runCmd(t, "job")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Subcommands:", "run ", "status ")
	r = runCmd(t, "-version")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "drover v")
	r = runCmd(t, "version")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "drover v")
	// A wrong flag: the error and the command's help, exit 1.
	r = runCmd(t, "job", "status", "-nope")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "flag provided but not defined: -nope", "Usage: drover job status")
	// The wrong number of arguments.
	r = runCmd(t, "alloc", "status")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "This command takes one argument: <allocation>")
}

// TestTaskSupervisorIsDispatched: the hidden subcommand reaches the
// supervisor (which refuses a missing spec with its own usage).
func TestTaskSupervisorIsDispatched(t *testing.T) {
	t.Parallel()
	r := runCmd(t, "task-supervisor")
	mustCode(t, r, 2)
}

// TestUnreachableAgent: a client command names what failed, with the
// colon of Nomad's "Error <doing>: <why>".
func TestUnreachableAgent(t *testing.T) {
	t.Parallel()
	r := runCmd(t, "job", "status", "-address", "127.0.0.1:1")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error querying jobs: ")
}
