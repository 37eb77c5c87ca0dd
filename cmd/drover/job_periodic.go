package main

import (
	"fmt"
	"strings"

	"github.com/hashicorp/cli"
)

// JobPeriodicCommand groups the periodic job subcommands.
type JobPeriodicCommand struct{}

func (c *JobPeriodicCommand) Synopsis() string { return "Interact with periodic jobs" }

func (c *JobPeriodicCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job periodic <subcommand> [options] [args]

  This command groups subcommands for periodic jobs: force.`)
}

func (c *JobPeriodicCommand) Run(args []string) int { return cli.RunResultHelp }

// JobPeriodicForceCommand is `drover job periodic force`: launch a
// periodic job's child now.
type JobPeriodicForceCommand struct{ Meta }

func (c *JobPeriodicForceCommand) Synopsis() string { return "Force the launch of a periodic job" }

func (c *JobPeriodicForceCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job periodic force [options] <job>

  Launches a child of the periodic job now, as Nomad's "job periodic
  force", whatever prohibit_overlap says (a disabled or stopped periodic
  job is refused). The child's evaluation is monitored unless -detach.
` + clientOptionsUsage() + `

Periodic Force Options:

  -detach
    Return after launching, printing the child's evaluation ID.

  -verbose
    Show full IDs.`)
}

func (c *JobPeriodicForceCommand) Run(args []string) int {
	fs := c.FlagSet("job periodic force", c.Help, flagSetClient)
	detach := fs.Bool("detach", false, "")
	verbose := fs.Bool("verbose", false, "")
	cl, rest, ok := c.setup(fs, args, 1, 1, "<job>")
	if !ok {
		return 1
	}
	id, ns, err := c.jobByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("querying job", err)
	}
	evalID, _, err := cl.Jobs().PeriodicForce(id, nsWrite(ns))
	if err != nil {
		return c.errorf("forcing periodic job", err)
	}
	if *detach {
		fmt.Fprintln(c.Stdout, "Force periodic successful")
		fmt.Fprintf(c.Stdout, "Evaluation ID: %s\n", evalID)
		return 0
	}
	return newMonitor(&c.Meta, cl, ns, *verbose).run(evalID)
}
