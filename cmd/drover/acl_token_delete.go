package main

import (
	"fmt"
	"strings"
)

// ACLTokenDeleteCommand is `drover acl token delete`.
type ACLTokenDeleteCommand struct{ Meta }

func (c *ACLTokenDeleteCommand) Synopsis() string { return "Deletes an existing ACL token" }

func (c *ACLTokenDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl token delete [options] <accessor_id>

  Revokes a token: requests with its secret fail at once (on AWS the api
  function re-reads the token on every request). Needs a management token.
` + clientOptionsUsage())
}

func (c *ACLTokenDeleteCommand) Run(args []string) int {
	fs := c.FlagSet("acl token delete", c.Help, flagSetClient)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<accessor_id>")
	if !ok {
		return 1
	}
	if _, err := cl.ACLTokens().Delete(rest[0], nil); err != nil {
		return c.errorf("deleting token", err)
	}
	fmt.Fprintf(c.Stdout, "Token %s successfully deleted\n", rest[0])
	return 0
}
