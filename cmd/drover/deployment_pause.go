package main

import (
	"strings"

	"github.com/hashicorp/nomad/api"
)

// DeploymentPauseCommand is `drover deployment pause`.
type DeploymentPauseCommand struct{ Meta }

func (c *DeploymentPauseCommand) Synopsis() string { return "Pauses a deployment" }

func (c *DeploymentPauseCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover deployment pause [options] <deployment>

  Pauses the deployment (ID or unique prefix): no more allocations are
  replaced until it is resumed.
` + clientOptionsUsage() + `

Deployment Pause Options:
` + deploymentActionOptionsUsage)
}

func (c *DeploymentPauseCommand) Run(args []string) int {
	fs := c.FlagSet("deployment pause", c.Help, flagSetClient)

	return deploymentAction{Meta: &c.Meta, name: "pause", done: "paused"}.run(fs, args, func(cl *api.Client, d *api.Deployment) (*api.DeploymentUpdateResponse, error) {
		r, _, err := cl.Deployments().Pause(d.ID, true, nsWrite(d.Namespace))
		return r, err
	})
}
