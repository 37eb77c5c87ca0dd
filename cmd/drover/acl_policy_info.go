package main

import (
	"fmt"
	"strings"
)

// ACLPolicyInfoCommand is `drover acl policy info`.
type ACLPolicyInfoCommand struct{ Meta }

func (c *ACLPolicyInfoCommand) Synopsis() string { return "Fetches info on an ACL policy" }

func (c *ACLPolicyInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl policy info [options] <name>

  Shows a policy: its name, description and rules (to a management token,
  a token that has it, and the anonymous policy to anyone).
` + clientOptionsUsage() + `

Info Options:
` + outputOptionsUsage)
}

func (c *ACLPolicyInfoCommand) Run(args []string) int {
	fs := c.FlagSet("acl policy info", c.Help, flagSetClient)
	out := addOutputFlags(fs)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<name>")
	if !ok {
		return 1
	}
	p, _, err := cl.ACLPolicies().Info(rest[0], nil)
	if err != nil {
		return c.errorf("retrieving ACL policy", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, p)
	}
	var k kv
	k.add("Name", p.Name).add("Description", p.Description).add("CreateIndex", p.CreateIndex).add("ModifyIndex", p.ModifyIndex)
	k.write(c.Stdout)
	fmt.Fprintf(c.Stdout, "\nRules\n\n%s\n", strings.TrimRight(p.Rules, "\n"))
	return 0
}
