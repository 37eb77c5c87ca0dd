package main

import (
	"strings"

	"github.com/hashicorp/nomad/api"
)

// DeploymentPromoteCommand is `drover deployment promote`.
type DeploymentPromoteCommand struct{ Meta }

func (c *DeploymentPromoteCommand) Synopsis() string { return "Promotes a deployment's canaries" }

func (c *DeploymentPromoteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover deployment promote [options] <deployment>

  Promotes the canaries of the deployment (ID or unique prefix): the rest
  of the update proceeds. -group promotes only the named task groups.
` + clientOptionsUsage() + `

Deployment Promote Options:

  -group=<name>
    Task group to promote (repeatable; default: all).
` + deploymentActionOptionsUsage)
}

func (c *DeploymentPromoteCommand) Run(args []string) int {
	fs := c.FlagSet("deployment promote", c.Help, flagSetClient)
	var groups multiFlag
	fs.Var(&groups, "group", "")
	return deploymentAction{Meta: &c.Meta, name: "promote", done: "promoted"}.run(fs, args, func(cl *api.Client, d *api.Deployment) (*api.DeploymentUpdateResponse, error) {
		if len(groups) > 0 {
			r, _, err := cl.Deployments().PromoteGroups(d.ID, groups, nsWrite(d.Namespace))
			return r, err
		}
		r, _, err := cl.Deployments().PromoteAll(d.ID, nsWrite(d.Namespace))
		return r, err
	})
}
