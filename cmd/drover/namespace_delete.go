package main

import (
	"fmt"
	"strings"
)

// NamespaceDeleteCommand is `drover namespace delete`.
type NamespaceDeleteCommand struct{ Meta }

func (c *NamespaceDeleteCommand) Synopsis() string { return "Deletes a namespace" }

func (c *NamespaceDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover namespace delete [options] <namespace>

  Deletes the namespace. The server refuses while jobs are in it, and
  always for "default".
` + clientOptionsUsage())
}

func (c *NamespaceDeleteCommand) Run(args []string) int {
	fs := c.FlagSet("namespace delete", c.Help, flagSetClient)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<namespace>")
	if !ok {
		return 1
	}
	if _, err := cl.Namespaces().Delete(rest[0], nil); err != nil {
		return c.errorf("deleting namespace", err)
	}
	fmt.Fprintf(c.Stdout, "Successfully deleted namespace %q!\n", rest[0])
	return 0
}
