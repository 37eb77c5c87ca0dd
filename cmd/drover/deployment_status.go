package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// DeploymentStatusCommand is `drover deployment status`: one deployment
// (or, without an argument, the list, as before `deployment list`).
type DeploymentStatusCommand struct{ Meta }

func (c *DeploymentStatusCommand) Synopsis() string { return "Shows a deployment (or lists them)" }

func (c *DeploymentStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover deployment status [options] [deployment]

  Shows the deployment (ID or unique prefix): its status and, per task
  group, the allocations desired, placed, healthy and unhealthy. Without
  an argument, lists the deployments (as "drover deployment list").
` + clientOptionsUsage() + `

Status Options:

  -verbose
    Show full IDs and the deployment's allocations.
` + outputOptionsUsage)
}

func (c *DeploymentStatusCommand) Run(args []string) int {
	fs := c.FlagSet("deployment status", c.Help, flagSetClient)
	verbose := fs.Bool("verbose", false, "")
	out := addOutputFlags(fs)
	cl, id, ok := c.listOrShow(fs, args, "[deployment]")
	if !ok {
		return 1
	}
	if id == "" {
		return listDeployments(&c.Meta, cl, out, *verbose)
	}
	d, err := c.deploymentByPrefix(cl, id)
	if err != nil {
		return c.errorf("", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, d)
	}
	fmt.Fprintln(c.Stdout, formatDeployment(d, *verbose))
	if *verbose {
		allocs, _, err := cl.Deployments().Allocations(d.ID, nsQuery(d.Namespace))
		if err != nil {
			return c.errorf("querying deployment allocations", err)
		}
		fmt.Fprintln(c.Stdout, "\nAllocations")
		printAllocStubs(c.Stdout, allocs, "ID\tNode ID\tTask Group\tVersion\tDesired\tStatus\tCreated", func(a *api.AllocationListStub) string {
			return fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s", a.ID, a.NodeID, a.TaskGroup, a.JobVersion, a.DesiredStatus, a.ClientStatus, agoUnixNano(a.CreateTime))
		})
	}
	return 0
}

// formatDeployment renders a deployment as Nomad's CLI: its key = value
// block and the Deployed table per task group.
func formatDeployment(d *api.Deployment, verbose bool) string {
	var b bytes.Buffer
	var k kv
	k.add("ID", limit(d.ID, verbose)).add("Job ID", d.JobID).add("Job Version", d.JobVersion).
		add("Status", d.Status).add("Description", d.StatusDescription)
	k.write(&b)
	if len(d.TaskGroups) == 0 {
		return strings.TrimRight(b.String(), "\n")
	}
	fmt.Fprintln(&b, "\nDeployed")
	canaries, autoRevert := false, false
	for _, g := range d.TaskGroups {
		canaries = canaries || g.DesiredCanaries > 0
		autoRevert = autoRevert || g.AutoRevert
	}
	header := "Task Group"
	if autoRevert {
		header += "\tAuto Revert"
	}
	if canaries {
		header += "\tPromoted\tDesired\tCanaries"
	} else {
		header += "\tDesired"
	}
	header += "\tPlaced\tHealthy\tUnhealthy\tProgress Deadline"
	groups := sortedKeys(d.TaskGroups)
	printList(&b, "", header, len(groups), func(i int) string {
		g := d.TaskGroups[groups[i]]
		row := groups[i]
		if autoRevert {
			row += fmt.Sprintf("\t%t", g.AutoRevert)
		}
		if canaries {
			row += fmt.Sprintf("\t%t\t%d\t%d", g.Promoted, g.DesiredTotal, g.DesiredCanaries)
		} else {
			row += fmt.Sprintf("\t%d", g.DesiredTotal)
		}
		deadline := "N/A"
		if !g.RequireProgressBy.IsZero() {
			deadline = formatTime(g.RequireProgressBy)
		}
		return row + fmt.Sprintf("\t%d\t%d\t%d\t%s", g.PlacedAllocs, g.HealthyAllocs, g.UnhealthyAllocs, deadline)
	})
	return strings.TrimRight(b.String(), "\n")
}
