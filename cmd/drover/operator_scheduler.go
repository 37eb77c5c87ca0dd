package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// OperatorSchedulerCommand is `drover operator scheduler`: it groups the
// scheduler configuration subcommands.
type OperatorSchedulerCommand struct{}

func (c *OperatorSchedulerCommand) Synopsis() string {
	return "Reads and changes the scheduler configuration"
}

func (c *OperatorSchedulerCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator scheduler <subcommand> [options]

  This command groups subcommands for the scheduler configuration: the
  placement algorithm and pausing evaluation processing.`)
}

func (c *OperatorSchedulerCommand) Run(args []string) int { return cli.RunResultHelp }
