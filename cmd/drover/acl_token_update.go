package main

import (
	"flag"
	"strings"
)

// ACLTokenUpdateCommand is `drover acl token update`.
type ACLTokenUpdateCommand struct{ Meta }

func (c *ACLTokenUpdateCommand) Synopsis() string { return "Updates an existing ACL token" }

func (c *ACLTokenUpdateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl token update [options] <accessor_id>

  Changes a token's name, type or policies (what is not given is kept);
  its expiry and global flag cannot change. Needs a management token.
` + clientOptionsUsage() + `

Update Options:

  -name=<name>
    The token's new name.

  -type=<client|management>
    The token's new type.

  -policy=<name>
    The token's policies, replacing its old ones. Repeatable.
` + outputOptionsUsage)
}

func (c *ACLTokenUpdateCommand) Run(args []string) int {
	fs := c.FlagSet("acl token update", c.Help, flagSetClient)
	name := fs.String("name", "", "")
	typ := fs.String("type", "", "")
	var policies multiFlag
	fs.Var(&policies, "policy", "")
	out := addOutputFlags(fs)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<accessor_id>")
	if !ok {
		return 1
	}
	tok, _, err := cl.ACLTokens().Info(rest[0], nil)
	if err != nil {
		return c.errorf("retrieving token", err)
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "name":
			tok.Name = *name
		case "type":
			tok.Type = *typ
		case "policy":
			tok.Policies = policies
		}
	})
	if tok.Type == "management" {
		tok.Policies = nil
	}
	upd, _, err := cl.ACLTokens().Update(tok, nil)
	if err != nil {
		return c.errorf("updating token", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, upd)
	}
	writeToken(c.Stdout, upd)
	return 0
}
