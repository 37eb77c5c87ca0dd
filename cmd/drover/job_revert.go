package main

import (
	"fmt"
	"strconv"
	"strings"
)

// JobRevertCommand is `drover job revert`: register an earlier version
// of a job again.
type JobRevertCommand struct{ Meta }

func (c *JobRevertCommand) Synopsis() string { return "Registers an earlier version of a job again" }

func (c *JobRevertCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job revert [options] <job> <version>

  Registers version <version> of the job (ID or unique prefix) again, as a
  new version, and monitors the evaluation and deployment that follow
  (see "drover job history" for the versions).
` + clientOptionsUsage() + `

Revert Options:

  -detach
    Return after submitting, printing the evaluation ID.

  -verbose
    Show full IDs.`)
}

func (c *JobRevertCommand) Run(args []string) int {
	fs := c.FlagSet("job revert", c.Help, flagSetClient)
	detach := fs.Bool("detach", false, "")
	verbose := fs.Bool("verbose", false, "")
	cl, rest, ok := c.setup(fs, args, 2, 2, "<job> <version>")
	if !ok {
		return 1
	}
	version, err := strconv.ParseUint(rest[1], 10, 64)
	if err != nil {
		fmt.Fprintf(c.Stderr, "Job version %q is not a version number (see `drover job history`)\n", rest[1])
		return 1
	}
	id, ns, err := c.jobByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("reverting job", err)
	}
	resp, _, err := cl.Jobs().Revert(id, version, nil, nsWrite(ns), "", "")
	if err != nil {
		return c.errorf("reverting job", err)
	}
	if *detach || resp.EvalID == "" {
		fmt.Fprintln(c.Stdout, resp.EvalID)
		return 0
	}
	return newMonitor(&c.Meta, cl, ns, *verbose).run(resp.EvalID)
}
