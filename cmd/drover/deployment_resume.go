package main

import (
	"strings"

	"github.com/hashicorp/nomad/api"
)

// DeploymentResumeCommand is `drover deployment resume`.
type DeploymentResumeCommand struct{ Meta }

func (c *DeploymentResumeCommand) Synopsis() string { return "Resumes a paused deployment" }

func (c *DeploymentResumeCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover deployment resume [options] <deployment>

  Resumes the paused deployment (ID or unique prefix).
` + clientOptionsUsage() + `

Deployment Resume Options:
` + deploymentActionOptionsUsage)
}

func (c *DeploymentResumeCommand) Run(args []string) int {
	fs := c.FlagSet("deployment resume", c.Help, flagSetClient)

	return deploymentAction{Meta: &c.Meta, name: "resume", done: "resumed"}.run(fs, args, func(cl *api.Client, d *api.Deployment) (*api.DeploymentUpdateResponse, error) {
		r, _, err := cl.Deployments().Pause(d.ID, false, nsWrite(d.Namespace))
		return r, err
	})
}
