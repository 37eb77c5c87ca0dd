package main

import (
	"strings"

	"github.com/hashicorp/cli"
)

// ACLCommand is `drover acl`: it only groups the ACL subcommands.
type ACLCommand struct{}

func (c *ACLCommand) Synopsis() string { return "Interact with ACL policies and tokens" }

func (c *ACLCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl <subcommand> [options] [args]

  This command groups subcommands for Nomad's ACL system: bootstrap the
  first management token, write policies, and create tokens that carry
  them. Run "drover acl <subcommand> -help" for a subcommand's usage.

  Bootstrap ACLs (on an agent started with -acl-enabled):

      $ drover acl bootstrap

  Create a read-only token:

      $ drover acl policy apply -description "read everything" readonly readonly.hcl
      $ drover acl token create -name dashboard -policy readonly`)
}

func (c *ACLCommand) Run(args []string) int { return cli.RunResultHelp }

// ACLPolicyCommand is `drover acl policy`.
type ACLPolicyCommand struct{}

func (c *ACLPolicyCommand) Synopsis() string { return "Interact with ACL policies" }

func (c *ACLPolicyCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl policy <subcommand> [options] [args]

  This command groups subcommands for ACL policies: apply, list, info and
  delete.`)
}

func (c *ACLPolicyCommand) Run(args []string) int { return cli.RunResultHelp }

// ACLTokenCommand is `drover acl token`.
type ACLTokenCommand struct{}

func (c *ACLTokenCommand) Synopsis() string { return "Interact with ACL tokens" }

func (c *ACLTokenCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl token <subcommand> [options] [args]

  This command groups subcommands for ACL tokens: create, list, info,
  self, update and delete.`)
}

func (c *ACLTokenCommand) Run(args []string) int { return cli.RunResultHelp }
