package main

import (
	"fmt"
	"strings"
)

// SystemGCCommand is `drover system gc`: garbage-collect now.
type SystemGCCommand struct{ Meta }

func (c *SystemGCCommand) Synopsis() string {
	return "Garbage-collects finished jobs, allocations and evaluations now"
}

func (c *SystemGCCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover system gc [options]

  Collects the jobs, evaluations, allocations and deployments that are
  finished, now instead of at the next periodic collection.
` + clientOptionsUsage())
}

func (c *SystemGCCommand) Run(args []string) int {
	fs := c.FlagSet("system gc", c.Help, flagSetClient)
	cl, _, ok := c.setup(fs, args, 0, 0, "")
	if !ok {
		return 1
	}
	if err := cl.System().GarbageCollect(); err != nil {
		return c.errorf("running garbage collection", err)
	}
	fmt.Fprintln(c.Stdout, "Garbage collection complete")
	return 0
}
