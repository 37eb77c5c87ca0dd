package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// JobCommand is `drover job`: it only groups the job subcommands.
type JobCommand struct{}

func (c *JobCommand) Synopsis() string { return "Interact with jobs" }

func (c *JobCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job <subcommand> [options] [args]

  This command groups subcommands for interacting with jobs.
  Run "drover job <subcommand> -help" for a subcommand's usage.`)
}

func (c *JobCommand) Run(args []string) int { return cli.RunResultHelp }
