package main

import (
	"fmt"
	"strings"
)

// JobStopCommand is `drover job stop`: deregister a job (or purge it).
type JobStopCommand struct{ Meta }

func (c *JobStopCommand) Synopsis() string { return "Stops (or purges) a job" }

func (c *JobStopCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job stop [options] <job>

  Stops the job (ID or unique prefix): its allocations are stopped, and the
  evaluation that does it is monitored.
` + clientOptionsUsage() + `

Stop Options:

  -purge
    Purge the job from the state once its allocations are stopped.

  -detach
    Return after submitting, printing the evaluation ID.

  -yes
    Do not ask for confirmation (drover never asks; accepted for scripts).

  -verbose
    Show full IDs.`)
}

func (c *JobStopCommand) Run(args []string) int {
	fs := c.FlagSet("job stop", c.Help, flagSetClient)
	purge := fs.Bool("purge", false, "")
	detach := fs.Bool("detach", false, "")
	verbose := fs.Bool("verbose", false, "")
	fs.Bool("yes", false, "")
	cl, rest, ok := c.setup(fs, args, 1, 1, "<job>")
	if !ok {
		return 1
	}
	id, ns, err := c.jobByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("deregistering job", err)
	}
	evalID, _, err := cl.Jobs().Deregister(id, *purge, nsWrite(ns))
	if err != nil {
		return c.errorf("deregistering job", err)
	}
	if *detach || evalID == "" {
		fmt.Fprintln(c.Stdout, evalID)
		return 0
	}
	mon := newMonitor(&c.Meta, cl, ns, *verbose)
	mon.noDeployment = true
	return mon.run(evalID)
}
