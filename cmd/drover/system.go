package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// SystemCommand is `drover system`: it only groups the system subcommands.
type SystemCommand struct{}

func (c *SystemCommand) Synopsis() string { return "Interact with the system API (garbage collection)" }

func (c *SystemCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover system <subcommand> [options] [args]

  This command groups subcommands for system maintenance.
  Run "drover system <subcommand> -help" for a subcommand's usage.`)
}

func (c *SystemCommand) Run(args []string) int { return cli.RunResultHelp }
