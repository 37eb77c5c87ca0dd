package main

import (
	"fmt"
	"strings"
)

// NamespaceStatusCommand is `drover namespace status`: one namespace.
type NamespaceStatusCommand struct{ Meta }

func (c *NamespaceStatusCommand) Synopsis() string { return "Shows a namespace" }

func (c *NamespaceStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover namespace status [options] <namespace>

  Shows the namespace: its name, description and meta.
` + clientOptionsUsage() + `

Status Options:
` + outputOptionsUsage)
}

func (c *NamespaceStatusCommand) Run(args []string) int {
	fs := c.FlagSet("namespace status", c.Help, flagSetClient)
	out := addOutputFlags(fs)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<namespace>")
	if !ok {
		return 1
	}
	ns, _, err := cl.Namespaces().Info(rest[0], nil)
	if err != nil {
		return c.errorf("retrieving namespace", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, ns)
	}
	var k kv
	k.add("Name", ns.Name).add("Description", ns.Description).add("Quota", ns.Quota)
	k.write(c.Stdout)
	if len(ns.Meta) > 0 {
		fmt.Fprintln(c.Stdout, "\nMetadata")
		var m kv
		for _, key := range sortedKeys(ns.Meta) {
			m.add(key, ns.Meta[key])
		}
		m.write(c.Stdout)
	}
	return 0
}
