package main

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// AllocRestartCommand is `drover alloc restart`: restart one task of an
// allocation, or its running tasks, in place (Nomad's alloc restart).
type AllocRestartCommand struct{ Meta }

func (c *AllocRestartCommand) Synopsis() string {
	return "Restarts a running allocation or task in place"
}

func (c *AllocRestartCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover alloc restart [options] <allocation> [<task>]

  Restarts the allocation's running tasks, or one task, on its node: each
  is stopped with its kill signal and started again at once. The restart
  is counted in the task's restarts but uses none of the restart policy's
  attempts, and the allocation stays where it is.
` + clientOptionsUsage() + `

Restart Options:

  -task=<task-name>
    The task to restart (or give it as the second argument; -task wins
    when both are given).

  -all-tasks
    Restart every task of the allocation (drover restarts those running;
    finished prestart tasks are not run again).

  -verbose
    Show full IDs.`)
}

func (c *AllocRestartCommand) Run(args []string) int {
	fs := c.FlagSet("alloc restart", c.Help, flagSetClient)
	task := fs.String("task", "", "")
	all := fs.Bool("all-tasks", false, "")
	verbose := fs.Bool("verbose", false, "")
	cl, rest, ok := c.setup(fs, args, 1, 2, "<allocation> [<task>]")
	if !ok {
		return 1
	}
	name, err := taskArg(*task, rest)
	if err != nil {
		return c.usageError(fs, "%v", err)
	}
	if name != "" && *all {
		return c.usageError(fs, "-all-tasks cannot be combined with a task name")
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
	q := &api.QueryOptions{Namespace: alloc.Namespace}
	err = onAllocNode(cl, alloc.NodeID, func(c *api.Client) error {
		if *all {
			return c.Allocations().RestartAllTasks(alloc, q)
		}
		return c.Allocations().Restart(alloc, name, q)
	})
	if err != nil {
		return c.errorf("restarting allocation", err)
	}
	what := "running tasks"
	if name != "" {
		what = fmt.Sprintf("task %q", name)
	}
	fmt.Fprintf(c.Stdout, "Restarting %s of allocation %s\n", what, limit(alloc.ID, *verbose))
	return 0
}

// taskArg is the task a command names with -task or as its second
// argument ("" when neither); -task wins when both are given, as in
// Nomad's CLI.
func taskArg(flagTask string, rest []string) (string, error) {
	if flagTask != "" || len(rest) < 2 {
		return flagTask, nil
	}
	return rest[1], nil
}

// checkTaskName fails when the allocation's group has no task name.
func checkTaskName(a *api.Allocation, name string) error {
	names := allocTaskNames(a)
	for _, n := range names {
		if n == name {
			return nil
		}
	}
	return fmt.Errorf("could not find task named %q in allocation %s; its tasks: %s", name, a.ID, strings.Join(names, ", "))
}
