package main

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// AllocStopCommand is `drover alloc stop`: stop one allocation, which the
// scheduler replaces as Nomad does.
type AllocStopCommand struct{ Meta }

func (c *AllocStopCommand) Synopsis() string {
	return "Stops an allocation (the scheduler replaces it)"
}

func (c *AllocStopCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover alloc stop [options] <allocation>

  Stops the allocation (ID or unique prefix) and monitors the evaluation
  that places its replacement, unless -detach.
` + clientOptionsUsage() + `

Stop Options:

  -detach
    Return after submitting, printing the evaluation ID.

  -no-shutdown-delay
    Ignore the group's and task's shutdown_delay.

  -verbose
    Show full IDs.`)
}

func (c *AllocStopCommand) Run(args []string) int {
	fs := c.FlagSet("alloc stop", c.Help, flagSetClient)
	detach := fs.Bool("detach", false, "")
	verbose := fs.Bool("verbose", false, "")
	noDelay := fs.Bool("no-shutdown-delay", false, "")
	cl, rest, ok := c.setup(fs, args, 1, 1, "<allocation>")
	if !ok {
		return 1
	}
	alloc, err := c.allocByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("", err)
	}
	q := &api.QueryOptions{Namespace: alloc.Namespace}
	if *noDelay {
		q.Params = map[string]string{"no_shutdown_delay": "true"}
	}
	resp, err := cl.Allocations().Stop(alloc, q)
	if err != nil {
		return c.errorf("stopping allocation", err)
	}
	if *detach {
		fmt.Fprintln(c.Stdout, resp.EvalID)
		return 0
	}
	mon := newMonitor(&c.Meta, cl, alloc.Namespace, *verbose)
	mon.noDeployment = true
	return mon.run(resp.EvalID)
}
