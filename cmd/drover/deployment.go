package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// DeploymentCommand is `drover deployment`: it only groups the deployment subcommands.
type DeploymentCommand struct{}

func (c *DeploymentCommand) Synopsis() string { return "Interact with deployments" }

func (c *DeploymentCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover deployment <subcommand> [options] [args]

  This command groups subcommands for interacting with deployments.
  Run "drover deployment <subcommand> -help" for a subcommand's usage.`)
}

func (c *DeploymentCommand) Run(args []string) int { return cli.RunResultHelp }
