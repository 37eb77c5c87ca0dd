package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// OperatorCommand is `drover operator`: it only groups the operator subcommands.
type OperatorCommand struct{}

func (c *OperatorCommand) Synopsis() string { return "Cluster-level tools for operators" }

func (c *OperatorCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator <subcommand> [options] [args]

  This command groups subcommands for cluster-level operations.
  Run "drover operator <subcommand> -help" for a subcommand's usage.`)
}

func (c *OperatorCommand) Run(args []string) int { return cli.RunResultHelp }
