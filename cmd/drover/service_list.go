package main

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// ServiceListCommand is `drover service list`, as `nomad service list`.
type ServiceListCommand struct{ Meta }

func (c *ServiceListCommand) Synopsis() string { return "Lists registered services" }

func (c *ServiceListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover service list [options]

  Lists the services registered in the namespace (-namespace '*': in
  every namespace) with their tags.
` + clientOptionsUsage() + `

List Options:
` + outputOptionsUsage)
}

func (c *ServiceListCommand) Run(args []string) int {
	fs := c.FlagSet("service list", c.Help, flagSetClient)
	out := addOutputFlags(fs)
	cl, _, ok := c.setup(fs, args, 0, 0, "")
	if !ok {
		return 1
	}
	list, _, err := cl.Services().List(&api.QueryOptions{Namespace: c.Namespace()})
	if err != nil {
		return c.errorf("listing services", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, list)
	}
	type row struct{ ns, name, tags string }
	var rows []row
	for _, ns := range list {
		for _, s := range ns.Services {
			rows = append(rows, row{ns.Namespace, s.ServiceName, formatTags(s.Tags)})
		}
	}
	if c.Namespace() == "*" {
		printList(c.Stdout, "No service registrations found", "Service Name\tNamespace\tTags", len(rows), func(i int) string {
			return fmt.Sprintf("%s\t%s\t%s", rows[i].name, rows[i].ns, rows[i].tags)
		})
		return 0
	}
	printList(c.Stdout, "No service registrations found", "Service Name\tTags", len(rows), func(i int) string {
		return fmt.Sprintf("%s\t%s", rows[i].name, rows[i].tags)
	})
	return 0
}
