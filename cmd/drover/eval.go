package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// EvalCommand is `drover eval`: it only groups the eval subcommands.
type EvalCommand struct{}

func (c *EvalCommand) Synopsis() string { return "Interact with evaluations" }

func (c *EvalCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover eval <subcommand> [options] [args]

  This command groups subcommands for interacting with evaluations.
  Run "drover eval <subcommand> -help" for a subcommand's usage.`)
}

func (c *EvalCommand) Run(args []string) int { return cli.RunResultHelp }
