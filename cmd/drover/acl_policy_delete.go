package main

import (
	"fmt"
	"strings"
)

// ACLPolicyDeleteCommand is `drover acl policy delete`.
type ACLPolicyDeleteCommand struct{ Meta }

func (c *ACLPolicyDeleteCommand) Synopsis() string { return "Deletes an ACL policy" }

func (c *ACLPolicyDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl policy delete [options] <name>

  Deletes a policy; tokens that name it lose what it granted at once.
  Needs a management token.
` + clientOptionsUsage())
}

func (c *ACLPolicyDeleteCommand) Run(args []string) int {
	fs := c.FlagSet("acl policy delete", c.Help, flagSetClient)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<name>")
	if !ok {
		return 1
	}
	if _, err := cl.ACLPolicies().Delete(rest[0], nil); err != nil {
		return c.errorf("deleting ACL policy", err)
	}
	fmt.Fprintf(c.Stdout, "Successfully deleted %q ACL policy!\n", rest[0])
	return 0
}
