package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// AllocExecCommand is `drover alloc exec`: run a command in a running
// task's context, interactively (Nomad's alloc exec, over its websocket
// exec protocol).
type AllocExecCommand struct{ Meta }

func (c *AllocExecCommand) Synopsis() string { return "Runs a command in a running allocation" }

func (c *AllocExecCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover alloc exec [options] <allocation> <command> [<args>...]

  Runs the command inside the task's context (its environment and working
  directory; for the exec driver its chroot, user and cgroups) and
  streams its standard input and output. The exit code is the command's.
` + clientOptionsUsage() + `

Exec Options:

  -task=<task-name>
    The task to run in; needed when the group has several tasks.

  -job
    The first argument is a job ID: run in one of its running allocations.

  -i
    Pass standard input on. Default = true

  -t
    Give the command a terminal (raw mode locally). Default: whether
    standard input is a terminal.`)
}

func (c *AllocExecCommand) Run(args []string) int {
	fs := c.FlagSet("alloc exec", c.Help, flagSetClient)
	task := fs.String("task", "", "")
	byJob := fs.Bool("job", false, "")
	stdinOn := fs.Bool("i", true, "")
	termFile := terminalFile(c.Stdin)
	tty := fs.Bool("t", termFile != nil, "")
	cl, rest, ok := c.setup(fs, args, 2, -1, "<allocation> <command> [<args>...]")
	if !ok {
		return 1
	}
	var alloc *api.Allocation
	var err error
	if *byJob {
		alloc, err = c.runningAllocOfJob(cl, rest[0])
	} else {
		alloc, err = c.allocByPrefix(cl, rest[0])
	}
	if err != nil {
		return c.errorf("", err)
	}
	name := *task
	if name == "" {
		names := allocTaskNames(alloc)
		if len(names) != 1 {
			return c.errorf("", fmt.Errorf("allocation %s has %d tasks; name one with -task: %s", alloc.ID, len(names), strings.Join(names, ", ")))
		}
		name = names[0]
	} else if err := checkTaskName(alloc, name); err != nil {
		return c.errorf("", err)
	}
	if st := alloc.ClientStatus; st == "complete" || st == "failed" || st == "lost" {
		return c.errorf("", fmt.Errorf("allocation %s is %s: no task runs to exec in", alloc.ID, alloc.ClientStatus))
	}

	var stdin io.Reader = strings.NewReader("")
	if *stdinOn && c.Stdin != nil {
		stdin = c.Stdin
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sizes <-chan api.TerminalSize
	if *tty && termFile != nil {
		restore, err := makeRaw(termFile)
		if err != nil {
			return c.errorf("setting the terminal to raw mode", err)
		}
		defer restore()
		stop := make(chan struct{})
		defer close(stop)
		sizes = terminalSizes(termFile, stop)
	} else if !*tty {
		// Without a terminal Ctrl-C ends the session here.
		sigCh := make(chan os.Signal, 1)
		signal.Notify(sigCh, os.Interrupt)
		defer signal.Stop(sigCh)
		go func() {
			select {
			case <-sigCh:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	code, err := cl.Allocations().Exec(ctx, alloc, name, *tty, rest[1:], stdin, c.Stdout, c.Stderr, sizes,
		&api.QueryOptions{Namespace: alloc.Namespace})
	if err != nil {
		return c.errorf("executing the command", err)
	}
	return code
}

// runningAllocOfJob returns a running allocation of the job (the first
// by ID, where Nomad picks one at random).
func (c *AllocExecCommand) runningAllocOfJob(cl *api.Client, job string) (*api.Allocation, error) {
	id, ns, err := c.jobByPrefix(cl, job)
	if err != nil {
		return nil, err
	}
	stubs, _, err := cl.Jobs().Allocations(id, false, &api.QueryOptions{Namespace: ns})
	if err != nil {
		return nil, fmt.Errorf("allocations of job %s: %w", id, err)
	}
	best := ""
	for _, s := range stubs {
		if s.DesiredStatus == "run" && s.ClientStatus == "running" && (best == "" || s.ID < best) {
			best = s.ID
		}
	}
	if best == "" {
		return nil, fmt.Errorf("job %q has no running allocation", id)
	}
	a, _, err := cl.Allocations().Info(best, &api.QueryOptions{Namespace: ns})
	return a, err
}
