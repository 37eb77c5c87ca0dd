package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// AllocChecksCommand is `drover alloc checks`: the latest result of each
// service check of an allocation (Nomad's alloc checks).
type AllocChecksCommand struct{ Meta }

func (c *AllocChecksCommand) Synopsis() string {
	return "Outputs service health check status information"
}

func (c *AllocChecksCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover alloc checks [options] <allocation>

  Outputs the latest result of each service check of the allocation, as
  the node that runs it reports them (GET /v1/client/allocation/:id/checks):
  status (success, warning, failure or pending), HTTP status or exit code,
  mode (healthiness, or readiness for on_update = "ignore") and output.
` + clientOptionsUsage() + `

Checks Options:
` + outputOptionsUsage + `

  -verbose
    Show full IDs.`)
}

func (c *AllocChecksCommand) Run(args []string) int {
	fs := c.FlagSet("alloc checks", c.Help, flagSetClient)
	out := addOutputFlags(fs)
	verbose := fs.Bool("verbose", false, "")
	cl, rest, ok := c.setup(fs, args, 1, 1, "<allocation>")
	if !ok {
		return 1
	}
	alloc, err := c.allocByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("", err)
	}
	var res api.AllocCheckStatuses
	err = onAllocNode(cl, alloc.NodeID, func(c *api.Client) error {
		var err error
		res, err = c.Allocations().Checks(alloc.ID, &api.QueryOptions{Namespace: alloc.Namespace})
		return err
	})
	if err != nil {
		return c.errorf("querying allocation checks", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, res)
	}
	if len(res) == 0 {
		fmt.Fprintf(c.Stdout, "No service checks in allocation %s\n", limit(alloc.ID, *verbose))
		return 0
	}
	list := make([]api.AllocCheckStatus, 0, len(res))
	for _, r := range res {
		list = append(list, r)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return a.Check < b.Check
	})
	fmt.Fprintf(c.Stdout, "Status of %d Nomad Service Checks\n", len(list))
	for _, r := range list {
		task := r.Task
		if task == "" {
			task = "(group)"
		}
		fmt.Fprintln(c.Stdout)
		var k kv
		k.add("ID", r.ID).add("Name", r.Check).add("Group", r.Group).add("Task", task).
			add("Service", r.Service).add("Status", r.Status)
		if r.StatusCode != 0 {
			k.add("StatusCode", strconv.Itoa(r.StatusCode))
		}
		k.add("Mode", r.Mode).add("Timestamp", formatTime(time.Unix(r.Timestamp, 0))).add("Output", strings.TrimSpace(r.Output))
		k.write(c.Stdout)
	}
	return 0
}
