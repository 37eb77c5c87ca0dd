package main

import "strings"

// ACLTokenSelfCommand is `drover acl token self`.
type ACLTokenSelfCommand struct{ Meta }

func (c *ACLTokenSelfCommand) Synopsis() string { return "Lookup self ACL token" }

func (c *ACLTokenSelfCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl token self [options]

  Shows the token the command runs with (-token, DROVER_TOKEN or
  NOMAD_TOKEN; the anonymous token without one).
` + clientOptionsUsage() + `

Self Options:
` + outputOptionsUsage)
}

func (c *ACLTokenSelfCommand) Run(args []string) int {
	fs := c.FlagSet("acl token self", c.Help, flagSetClient)
	out := addOutputFlags(fs)
	cl, _, ok := c.setup(fs, args, 0, 0, "")
	if !ok {
		return 1
	}
	tok, _, err := cl.ACLTokens().Self(nil)
	if err != nil {
		return c.errorf("fetching self token", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, tok)
	}
	writeToken(c.Stdout, tok)
	return 0
}
