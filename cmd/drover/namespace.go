package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// NamespaceCommand is `drover namespace`: it only groups the namespace subcommands.
type NamespaceCommand struct{}

func (c *NamespaceCommand) Synopsis() string { return "Interact with namespaces" }

func (c *NamespaceCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover namespace <subcommand> [options] [args]

  This command groups subcommands for interacting with namespaces.
  Run "drover namespace <subcommand> -help" for a subcommand's usage.`)
}

func (c *NamespaceCommand) Run(args []string) int { return cli.RunResultHelp }
