package main

import (
	"strings"

	"github.com/hashicorp/nomad/api"
)

// DeploymentFailCommand is `drover deployment fail`.
type DeploymentFailCommand struct{ Meta }

func (c *DeploymentFailCommand) Synopsis() string {
	return "Marks a deployment failed (rolls back with auto_revert)"
}

func (c *DeploymentFailCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover deployment fail [options] <deployment>

  Marks the deployment (ID or unique prefix) failed: its groups with
  auto_revert roll back to the last stable version.
` + clientOptionsUsage() + `

Deployment Fail Options:
` + deploymentActionOptionsUsage)
}

func (c *DeploymentFailCommand) Run(args []string) int {
	fs := c.FlagSet("deployment fail", c.Help, flagSetClient)

	return deploymentAction{Meta: &c.Meta, name: "fail", done: "failed"}.run(fs, args, func(cl *api.Client, d *api.Deployment) (*api.DeploymentUpdateResponse, error) {
		r, _, err := cl.Deployments().Fail(d.ID, nsWrite(d.Namespace))
		return r, err
	})
}
