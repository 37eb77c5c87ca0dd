package main

import "strings"

// ACLTokenInfoCommand is `drover acl token info`.
type ACLTokenInfoCommand struct{ Meta }

func (c *ACLTokenInfoCommand) Synopsis() string {
	return "Fetches information about an existing ACL token"
}

func (c *ACLTokenInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl token info [options] <accessor_id>

  Shows a token (to a management token, or to the token itself). Its
  Secret ID is not shown to others: drover keeps only its hash (Nomad
  shows it to management tokens).
` + clientOptionsUsage() + `

Info Options:
` + outputOptionsUsage)
}

func (c *ACLTokenInfoCommand) Run(args []string) int {
	fs := c.FlagSet("acl token info", c.Help, flagSetClient)
	out := addOutputFlags(fs)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<accessor_id>")
	if !ok {
		return 1
	}
	tok, _, err := cl.ACLTokens().Info(rest[0], nil)
	if err != nil {
		return c.errorf("retrieving token", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, tok)
	}
	writeToken(c.Stdout, tok)
	return 0
}
