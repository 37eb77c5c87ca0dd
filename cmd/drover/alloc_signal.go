package main

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// AllocSignalCommand is `drover alloc signal`: send a signal to an
// allocation's tasks (Nomad's alloc signal).
type AllocSignalCommand struct{ Meta }

func (c *AllocSignalCommand) Synopsis() string { return "Sends a signal to an allocation's tasks" }

func (c *AllocSignalCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover alloc signal [options] <allocation> [<task>]

  Sends a signal to the allocation's running tasks, or to one task,
  through their driver. A "Signaling" event records it.
` + clientOptionsUsage() + `

Signal Options:

  -s=<signal>
    The signal (a name such as SIGHUP or HUP, or a number). Default = SIGKILL

  -task=<task-name>
    The task to signal (or give it as the second argument; -task wins
    when both are given).

  -verbose
    Show full IDs.`)
}

func (c *AllocSignalCommand) Run(args []string) int {
	fs := c.FlagSet("alloc signal", c.Help, flagSetClient)
	sig := fs.String("s", "", "")
	task := fs.String("task", "", "")
	verbose := fs.Bool("verbose", false, "")
	cl, rest, ok := c.setup(fs, args, 1, 2, "<allocation> [<task>]")
	if !ok {
		return 1
	}
	name, err := taskArg(*task, rest)
	if err != nil {
		return c.usageError(fs, "%v", err)
	}
	alloc, err := c.allocByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("", err)
	}
	if name != "" {
		if err := checkTaskName(alloc, name); err != nil {
			return c.errorf("", err)
		}
	}
	err = onAllocNode(cl, alloc.NodeID, func(c *api.Client) error {
		return c.Allocations().Signal(alloc, &api.QueryOptions{Namespace: alloc.Namespace}, name, *sig)
	})
	if err != nil {
		return c.errorf("signalling allocation", err)
	}
	shown := *sig
	if shown == "" {
		shown = "SIGKILL"
	}
	what := "running tasks"
	if name != "" {
		what = fmt.Sprintf("task %q", name)
	}
	fmt.Fprintf(c.Stdout, "Sent %s to %s of allocation %s\n", shown, what, limit(alloc.ID, *verbose))
	return 0
}
