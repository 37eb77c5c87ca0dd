package main

import (
	"fmt"
	"strings"
)

// ACLPolicyListCommand is `drover acl policy list`.
type ACLPolicyListCommand struct{ Meta }

func (c *ACLPolicyListCommand) Synopsis() string { return "Lists ACL policies" }

func (c *ACLPolicyListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl policy list [options]

  Lists the ACL policies: all of them for a management token, a client
  token's own otherwise.
` + clientOptionsUsage() + `

List Options:
` + outputOptionsUsage)
}

func (c *ACLPolicyListCommand) Run(args []string) int {
	fs := c.FlagSet("acl policy list", c.Help, flagSetClient)
	out := addOutputFlags(fs)
	cl, _, ok := c.setup(fs, args, 0, 0, "")
	if !ok {
		return 1
	}
	ps, _, err := cl.ACLPolicies().List(nil)
	if err != nil {
		return c.errorf("retrieving ACL policies", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, ps)
	}
	printList(c.Stdout, "No policies found", "Name\tDescription", len(ps), func(i int) string {
		return fmt.Sprintf("%s\t%s", ps[i].Name, ps[i].Description)
	})
	return 0
}
