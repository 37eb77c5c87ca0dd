package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// ACLPolicyApplyCommand is `drover acl policy apply`: create or replace a
// policy from a file of rules.
type ACLPolicyApplyCommand struct{ Meta }

func (c *ACLPolicyApplyCommand) Synopsis() string { return "Creates or updates an ACL policy" }

func (c *ACLPolicyApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl policy apply [options] <name> <path>

  Creates or replaces the policy <name> with the rules in <path> ("-" for
  stdin), Nomad's policy language in HCL or JSON:

      namespace "default" { policy = "read" }
      namespace "team-*"  { capabilities = ["submit-job", "read-logs"] }
      node  { policy = "read" }
      agent { policy = "read" }

  Rules that break the language are refused with the line and column.
  Needs a management token.
` + clientOptionsUsage() + `

Apply Options:

  -description=<text>
    The policy's description.`)
}

func (c *ACLPolicyApplyCommand) Run(args []string) int {
	fs := c.FlagSet("acl policy apply", c.Help, flagSetClient)
	description := fs.String("description", "", "")
	cl, rest, ok := c.setup(fs, args, 2, 2, "<name> <path>")
	if !ok {
		return 1
	}
	var rules []byte
	var err error
	if rest[1] == "-" {
		rules, err = io.ReadAll(c.stdin())
	} else {
		rules, err = os.ReadFile(rest[1])
	}
	if err != nil {
		return c.errorf("reading the policy rules", err)
	}
	if _, err := cl.ACLPolicies().Upsert(&api.ACLPolicy{Name: rest[0], Description: *description, Rules: string(rules)}, nil); err != nil {
		return c.errorf("writing ACL policy", err)
	}
	fmt.Fprintf(c.Stdout, "Successfully wrote %q ACL policy!\n", rest[0])
	return 0
}
