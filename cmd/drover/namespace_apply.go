package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// NamespaceApplyCommand is `drover namespace apply`: create or update a
// namespace.
type NamespaceApplyCommand struct{ Meta }

func (c *NamespaceApplyCommand) Synopsis() string { return "Creates or updates a namespace" }

func (c *NamespaceApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover namespace apply [options] <namespace>

  Creates the namespace, or updates its description and meta. Jobs can be
  registered only into namespaces that exist ("default" always does).
` + clientOptionsUsage() + `

Apply Options:

  -description=<text>
    The namespace's description (an update keeps the old one unless given).

  -meta key=value
    Metadata (repeatable; replaces the namespace's meta when given).`)
}

func (c *NamespaceApplyCommand) Run(args []string) int {
	fs := c.FlagSet("namespace apply", c.Help, flagSetClient)
	description := fs.String("description", "", "")
	var meta multiFlag
	fs.Var(&meta, "meta", "")
	cl, rest, ok := c.setup(fs, args, 1, 1, "<namespace>")
	if !ok {
		return 1
	}
	name := rest[0]
	ns := &api.Namespace{Name: name}
	if old, _, err := cl.Namespaces().Info(name, nil); err == nil && old != nil {
		ns = old
	}
	described := false
	fs.Visit(func(f *flag.Flag) { described = described || f.Name == "description" })
	if described {
		ns.Description = *description
	}
	if len(meta) > 0 {
		ns.Meta = map[string]string{}
		for _, kv := range meta {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return c.usageError(fs, "-meta %q is not key=value", kv)
			}
			ns.Meta[k] = v
		}
	}
	if _, err := cl.Namespaces().Register(ns, nil); err != nil {
		return c.errorf("applying namespace specification", err)
	}
	fmt.Fprintf(c.Stdout, "Successfully applied namespace %q!\n", name)
	return 0
}
