package main

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// ServiceDeleteCommand is `drover service delete`, as `nomad service
// delete`: removes one registration (its task, if still running,
// registers it again when it restarts).
type ServiceDeleteCommand struct{ Meta }

func (c *ServiceDeleteCommand) Synopsis() string { return "Deletes a service registration" }

func (c *ServiceDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover service delete [options] <service name> <service id>

  Deletes one registration of a service (its ID as "service info
  -verbose" shows it).
` + clientOptionsUsage())
}

func (c *ServiceDeleteCommand) Run(args []string) int {
	fs := c.FlagSet("service delete", c.Help, flagSetClient)
	cl, rest, ok := c.setup(fs, args, 2, 2, "<service name> <service id>")
	if !ok {
		return 1
	}
	if _, err := cl.Services().Delete(rest[0], rest[1], &api.WriteOptions{Namespace: c.Namespace()}); err != nil {
		return c.errorf("deleting service registration", err)
	}
	fmt.Fprintln(c.Stdout, "Successfully deleted service registration")
	return 0
}
