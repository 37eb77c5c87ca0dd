package main

import (
	"fmt"
	"strings"
)

// NamespaceListCommand is `drover namespace list`.
type NamespaceListCommand struct{ Meta }

func (c *NamespaceListCommand) Synopsis() string { return "Lists namespaces" }

func (c *NamespaceListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover namespace list [options]

  Lists the namespaces.
` + clientOptionsUsage() + `

List Options:
` + outputOptionsUsage)
}

func (c *NamespaceListCommand) Run(args []string) int {
	fs := c.FlagSet("namespace list", c.Help, flagSetClient)
	out := addOutputFlags(fs)
	cl, _, ok := c.setup(fs, args, 0, 0, "")
	if !ok {
		return 1
	}
	nss, _, err := cl.Namespaces().List(nil)
	if err != nil {
		return c.errorf("retrieving namespaces", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, nss)
	}
	printList(c.Stdout, "No namespaces found", "Name\tDescription", len(nss), func(i int) string {
		return fmt.Sprintf("%s\t%s", nss[i].Name, nss[i].Description)
	})
	return 0
}
