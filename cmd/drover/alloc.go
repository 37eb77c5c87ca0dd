package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// AllocCommand is `drover alloc`: it only groups the alloc subcommands.
type AllocCommand struct{}

func (c *AllocCommand) Synopsis() string { return "Interact with allocations" }

func (c *AllocCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover alloc <subcommand> [options] [args]

  This command groups subcommands for interacting with allocations.
  Run "drover alloc <subcommand> -help" for a subcommand's usage.`)
}

func (c *AllocCommand) Run(args []string) int { return cli.RunResultHelp }
