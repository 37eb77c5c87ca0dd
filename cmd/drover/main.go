// Command drover is drover's CLI and its all-in-one dev agent.
//
// Shape, as Nomad's command/ package: one file per command (noun_verb.go,
// its test beside it), each a small type with Help, Synopsis and Run on
// github.com/hashicorp/cli; the registry is commands.go; shared helpers
// live in files named for them: meta.go (client flags, the argument and
// client preamble, errors), prefix.go (ID and prefix lookups), format.go
// (-json, -t, times), table.go (lists and key = value blocks), monitor.go
// (evaluation and deployment monitors), jobfile.go (reading job files).
// Flags follow Go's flag package, as Nomad's do: -data-dir and --data-dir
// both work.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/cli"

	"github.com/drover-sched/drover/agent"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command args name with args, writing to stdout and stderr,
// and returns its exit code. An unknown command prints the usage and
// returns 1.
func run(args []string, stdout, stderr io.Writer) int {
	return runIO(args, os.Stdin, stdout, stderr)
}

// runIO is run with stdin as the commands' input (alloc exec reads it).
func runIO(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	meta := Meta{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	cmds := commands(meta)
	c := &cli.CLI{
		Name:           "drover",
		Args:           args,
		Version:        "drover v" + agent.Version,
		Commands:       cmds,
		HiddenCommands: hiddenCommands,
		HelpFunc:       helpFunc,
		HelpWriter:     stdout,
		ErrorWriter:    stderr,
	}
	if _, known := cmds[c.Subcommand()]; !known && !c.IsHelp() && !c.IsVersion() {
		if len(args) > 0 {
			fmt.Fprintf(stderr, "Unknown command: %s\n\n", strings.Join(args, " "))
		}
		fmt.Fprintln(stderr, helpFunc(visibleTopLevel(cmds)))
		return 1
	}
	code, err := c.Run()
	if err != nil {
		fmt.Fprintf(stderr, "Error executing CLI: %v\n", err)
		return 1
	}
	return code
}

// visibleTopLevel returns the top-level commands the usage lists.
func visibleTopLevel(cmds map[string]cli.CommandFactory) map[string]cli.CommandFactory {
	out := map[string]cli.CommandFactory{}
	for name, f := range cmds {
		if !strings.Contains(name, " ") && !isHidden(name) {
			out[name] = f
		}
	}
	return out
}

func isHidden(name string) bool {
	for _, h := range hiddenCommands {
		if h == name {
			return true
		}
	}
	return false
}

// helpFunc is the top-level usage: every command with its synopsis.
func helpFunc(cmds map[string]cli.CommandFactory) string {
	var names []string
	width := 0
	for n := range cmds {
		if isHidden(n) {
			continue
		}
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("Usage: drover [-version] [-help] <command> [args]\n\nCommands:\n")
	for _, n := range names {
		cmd, err := cmds[n]()
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "    %-*s    %s\n", width, n, cmd.Synopsis())
	}
	b.WriteString("\nRun \"drover <command> -help\" for a command's usage and options.")
	return b.String()
}
