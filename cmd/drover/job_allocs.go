package main

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// JobAllocsCommand is `drover job allocs`: a job's allocations.
type JobAllocsCommand struct{ Meta }

func (c *JobAllocsCommand) Synopsis() string { return "Lists a job's allocations" }

func (c *JobAllocsCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job allocs [options] <job>

  Lists the allocations of the job (ID or unique prefix).
` + clientOptionsUsage() + `

Allocs Options:

  -all
    Also the allocations of earlier incarnations of a job registered
    again under the same ID.

  -verbose
    Show full IDs.
` + outputOptionsUsage)
}

func (c *JobAllocsCommand) Run(args []string) int {
	fs := c.FlagSet("job allocs", c.Help, flagSetClient)
	all := fs.Bool("all", false, "")
	verbose := fs.Bool("verbose", false, "")
	out := addOutputFlags(fs)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<job>")
	if !ok {
		return 1
	}
	id, ns, err := c.jobByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("querying job", err)
	}
	allocs, _, err := cl.Jobs().Allocations(id, *all, nsQuery(ns))
	if err != nil {
		return c.errorf("querying job allocations", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, allocs)
	}
	v := *verbose
	printAllocStubs(c.Stdout, allocs, "ID\tNode ID\tTask Group\tVersion\tDesired\tStatus\tCreated\tModified", func(a *api.AllocationListStub) string {
		return fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s", limit(a.ID, v), limit(a.NodeID, v), a.TaskGroup, a.JobVersion,
			a.DesiredStatus, a.ClientStatus, agoUnixNano(a.CreateTime), agoUnixNano(a.ModifyTime))
	})
	return 0
}
