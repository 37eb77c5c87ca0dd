package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// ServiceCommand is `drover service`: it only groups the service
// subcommands (Nomad's native service discovery).
type ServiceCommand struct{}

func (c *ServiceCommand) Synopsis() string { return "Interact with registered services" }

func (c *ServiceCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover service <subcommand> [options] [args]

  This command groups subcommands for interacting with the services that
  jobs register (service blocks with provider "nomad").
  Run "drover service <subcommand> -help" for a subcommand's usage.`)
}

func (c *ServiceCommand) Run(args []string) int { return cli.RunResultHelp }

// formatTags renders tags as Nomad's CLI does: [a,b].
func formatTags(tags []string) string { return "[" + strings.Join(tags, ",") + "]" }
