package main

import (
	"strings"

	"github.com/hashicorp/nomad/api"
)

// ACLTokenCreateCommand is `drover acl token create`.
type ACLTokenCreateCommand struct{ Meta }

func (c *ACLTokenCreateCommand) Synopsis() string { return "Creates a new ACL token" }

func (c *ACLTokenCreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl token create [options]

  Creates a token and prints it with its Secret ID, which is shown now and
  never again (drover keeps only its hash). Needs a management token.
` + clientOptionsUsage() + `

Create Options:

  -name=<name>
    The token's name.

  -type=<client|management>
    A client token has its policies' rights; a management token may do
    everything. Default = client

  -policy=<name>
    A policy of the (client) token. Repeatable.

  -global
    Accepted, as Nomad's: drover runs one region.

  -ttl=<duration>
    The token's lifetime (1m to 24h, Nomad's bounds); it stops working
    after. Default: no expiry.
` + outputOptionsUsage)
}

func (c *ACLTokenCreateCommand) Run(args []string) int {
	fs := c.FlagSet("acl token create", c.Help, flagSetClient)
	name := fs.String("name", "", "")
	typ := fs.String("type", "client", "")
	global := fs.Bool("global", false, "")
	ttl := fs.Duration("ttl", 0, "")
	var policies multiFlag
	fs.Var(&policies, "policy", "")
	out := addOutputFlags(fs)
	cl, _, ok := c.setup(fs, args, 0, 0, "")
	if !ok {
		return 1
	}
	tok, _, err := cl.ACLTokens().Create(&api.ACLToken{Name: *name, Type: *typ, Policies: policies, Global: *global,
		ExpirationTTL: *ttl}, nil)
	if err != nil {
		return c.errorf("creating token", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, tok)
	}
	writeToken(c.Stdout, tok)
	return 0
}
