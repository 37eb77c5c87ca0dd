package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// NodeCommand is `drover node`: it only groups the node subcommands.
type NodeCommand struct{}

func (c *NodeCommand) Synopsis() string { return "Interact with nodes" }

func (c *NodeCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node <subcommand> [options] [args]

  This command groups subcommands for interacting with nodes.
  Run "drover node <subcommand> -help" for a subcommand's usage.`)
}

func (c *NodeCommand) Run(args []string) int { return cli.RunResultHelp }
