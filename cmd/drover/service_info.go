package main

import (
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// ServiceInfoCommand is `drover service info`, as `nomad service info`:
// one service's instances.
type ServiceInfoCommand struct{ Meta }

func (c *ServiceInfoCommand) Synopsis() string { return "Shows a service's registered instances" }

func (c *ServiceInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover service info [options] <service name>

  Shows the registered instances of a service: the job, address, tags,
  node and allocation of each.
` + clientOptionsUsage() + `

Info Options:

  -verbose
    Show full IDs and every field of each instance.

  -tag=<tag>
    Only instances with this tag (repeatable: every tag must be there).

  -filter=<expression>
    A filter expression on the instances' fields, as Nomad's ?filter=.
` + outputOptionsUsage)
}

// tagFlags collects repeated -tag values.
type tagFlags []string

func (t *tagFlags) String() string     { return strings.Join(*t, ",") }
func (t *tagFlags) Set(v string) error { *t = append(*t, v); return nil }

var _ flag.Value = (*tagFlags)(nil)

func (c *ServiceInfoCommand) Run(args []string) int {
	fs := c.FlagSet("service info", c.Help, flagSetClient)
	out := addOutputFlags(fs)
	verbose := fs.Bool("verbose", false, "")
	filter := fs.String("filter", "", "")
	var tags tagFlags
	fs.Var(&tags, "tag", "")
	cl, rest, ok := c.setup(fs, args, 1, 1, "<service name>")
	if !ok {
		return 1
	}
	q := &api.QueryOptions{Namespace: c.Namespace(), Filter: *filter}
	if len(tags) > 0 {
		// The API takes ?tag= repeated; the client's Params hold one value,
		// so the tags after the first are checked here.
		q.Params = map[string]string{"tag": tags[0]}
	}
	regs, _, err := cl.Services().Get(rest[0], q)
	if err != nil {
		return c.errorf("listing service registrations", err)
	}
	regs = keepTagged(regs, tags)
	if out.wanted() {
		return out.write(&c.Meta, regs)
	}
	if len(regs) == 0 {
		fmt.Fprintln(c.Stdout, "No service registrations found")
		return 0
	}
	if *verbose {
		for i, r := range regs {
			if i > 0 {
				fmt.Fprintln(c.Stdout)
			}
			var k kv
			k.add("ID", r.ID).add("Service Name", r.ServiceName).add("Namespace", r.Namespace).
				add("Job ID", r.JobID).add("Alloc ID", r.AllocID).add("Node ID", r.NodeID).
				add("Datacenter", r.Datacenter).add("Address", net.JoinHostPort(r.Address, strconv.Itoa(r.Port))).
				add("Tags", formatTags(r.Tags))
			k.write(c.Stdout)
		}
		return 0
	}
	printList(c.Stdout, "No service registrations found", "Job ID\tAddress\tTags\tNode ID\tAlloc ID", len(regs), func(i int) string {
		r := regs[i]
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s", r.JobID, net.JoinHostPort(r.Address, strconv.Itoa(r.Port)),
			formatTags(r.Tags), limit(r.NodeID, false), limit(r.AllocID, false))
	})
	return 0
}

func keepTagged(regs []*api.ServiceRegistration, tags []string) []*api.ServiceRegistration {
	out := regs[:0:0]
	for _, r := range regs {
		ok := true
		for _, t := range tags {
			found := false
			for _, have := range r.Tags {
				found = found || have == t
			}
			ok = ok && found
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}
