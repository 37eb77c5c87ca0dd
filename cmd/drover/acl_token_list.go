package main

import (
	"fmt"
	"strings"
	"time"
)

// ACLTokenListCommand is `drover acl token list`.
type ACLTokenListCommand struct{ Meta }

func (c *ACLTokenListCommand) Synopsis() string { return "List ACL tokens" }

func (c *ACLTokenListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover acl token list [options]

  Lists the tokens (never their secrets). Needs a management token.
` + clientOptionsUsage() + `

List Options:
` + outputOptionsUsage)
}

func (c *ACLTokenListCommand) Run(args []string) int {
	fs := c.FlagSet("acl token list", c.Help, flagSetClient)
	out := addOutputFlags(fs)
	cl, _, ok := c.setup(fs, args, 0, 0, "")
	if !ok {
		return 1
	}
	toks, _, err := cl.ACLTokens().List(nil)
	if err != nil {
		return c.errorf("retrieving tokens", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, toks)
	}
	printList(c.Stdout, "No tokens found", "Name\tType\tGlobal\tAccessor ID\tExpired", len(toks), func(i int) string {
		t := toks[i]
		expired := t.ExpirationTime != nil && !t.ExpirationTime.IsZero() && t.ExpirationTime.Before(time.Now())
		return fmt.Sprintf("%s\t%s\t%t\t%s\t%t", t.Name, t.Type, t.Global, t.AccessorID, expired)
	})
	return 0
}
