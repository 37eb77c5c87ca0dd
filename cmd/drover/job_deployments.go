package main

import (
	"fmt"
	"strings"
)

// JobDeploymentsCommand is `drover job deployments`: a job's deployments.
type JobDeploymentsCommand struct{ Meta }

func (c *JobDeploymentsCommand) Synopsis() string { return "Lists a job's deployments" }

func (c *JobDeploymentsCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job deployments [options] <job>

  Lists the deployments of the job (ID or unique prefix), newest first.
` + clientOptionsUsage() + `

Deployments Options:

  -latest
    Show only the latest deployment, in full.

  -all
    Also the deployments of earlier incarnations of the job.

  -verbose
    Show full IDs.
` + outputOptionsUsage)
}

func (c *JobDeploymentsCommand) Run(args []string) int {
	fs := c.FlagSet("job deployments", c.Help, flagSetClient)
	latest := fs.Bool("latest", false, "")
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
	if *latest {
		d, _, err := cl.Jobs().LatestDeployment(id, nsQuery(ns))
		if err != nil {
			return c.errorf("retrieving the latest deployment", err)
		}
		if out.wanted() {
			return out.write(&c.Meta, d)
		}
		if d == nil {
			fmt.Fprintf(c.Stdout, "No deployment found for job %q\n", id)
			return 0
		}
		fmt.Fprintln(c.Stdout, formatDeployment(d, *verbose))
		return 0
	}
	ds, _, err := cl.Jobs().Deployments(id, *all, nsQuery(ns))
	if err != nil {
		return c.errorf("retrieving deployments", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, ds)
	}
	printDeploymentList(c.Stdout, ds, *verbose)
	return 0
}
