package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// NodeStatusCommand is `drover node status`: every node, or one node with
// its resources and allocations.
type NodeStatusCommand struct{ Meta }

func (c *NodeStatusCommand) Synopsis() string { return "Lists nodes, or shows one node" }

func (c *NodeStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover node status [options] [-self | <node>]

  Without an argument, lists the nodes. With a node ID or unique prefix
  (or -self), shows the node, its drivers, the resources its allocations use and its
  allocations.
` + clientOptionsUsage() + `

Node Status Options:

  -self
    Show the node of the agent the command talks to (-address,
    DROVER_ADDR or NOMAD_ADDR), which must run a client, as Nomad's CLI
    does. With ACLs, the token needs node:read (and agent:read on a
    server or dev agent, whose /v1/agent/self asks for it).

  -stats
    Show the host's detailed CPU, memory and disk use (from the node's
    /v1/client/stats).

  -verbose
    Show full IDs.
` + outputOptionsUsage)
}

func (c *NodeStatusCommand) Run(args []string) int {
	fs := c.FlagSet("node status", c.Help, flagSetClient)
	verbose := fs.Bool("verbose", false, "")
	stats := fs.Bool("stats", false, "")
	self := fs.Bool("self", false, "")
	out := addOutputFlags(fs)
	cl, id, ok := c.listOrShow(fs, args, "[node]")
	if !ok {
		return 1
	}
	if *self {
		if id != "" {
			return c.errorf("", fmt.Errorf("-self takes no node argument (got %q)", id))
		}
		var err error
		if id, err = localNodeID(cl); err != nil {
			return c.errorf("determining the local node", err)
		}
	}
	v := *verbose
	if id == "" {
		nodes, _, err := cl.Nodes().List(nil)
		if err != nil {
			return c.errorf("querying nodes", err)
		}
		if out.wanted() {
			return out.write(&c.Meta, nodes)
		}
		printList(c.Stdout, "No nodes registered", "ID\tNode Pool\tDC\tName\tClass\tDrain\tEligibility\tStatus", len(nodes), func(i int) string {
			n := nodes[i]
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%t\t%s\t%s", limit(n.ID, v), n.NodePool, n.Datacenter, n.Name,
				orNA(n.NodeClass), n.Drain, n.SchedulingEligibility, n.Status)
		})
		return 0
	}
	n, err := c.nodeByPrefix(cl, id)
	if err != nil {
		return c.errorf("", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, n)
	}
	allocs, _, err := cl.Nodes().Allocations(n.ID, nil)
	if err != nil {
		return c.errorf("querying node allocations", err)
	}
	var drivers []string
	for _, d := range sortedKeys(n.Drivers) {
		if n.Drivers[d].Detected && n.Drivers[d].Healthy {
			drivers = append(drivers, d)
		}
	}
	var k kv
	k.add("ID", n.ID).add("Name", n.Name).add("Node Pool", n.NodePool).add("Class", orNA(n.NodeClass)).
		add("DC", n.Datacenter).add("Drain", n.Drain).add("Eligibility", n.SchedulingEligibility).
		add("Status", n.Status).add("Drivers", strings.Join(drivers, ","))
	k.write(c.Stdout)

	var cpu, mem, disk int64
	for _, a := range allocs {
		if a.ClientStatus == api.AllocClientStatusComplete || a.ClientStatus == api.AllocClientStatusFailed ||
			a.ClientStatus == api.AllocClientStatusLost || a.DesiredStatus != api.AllocDesiredStatusRun {
			continue
		}
		if a.AllocatedResources != nil {
			for _, t := range a.AllocatedResources.Tasks {
				cpu += t.Cpu.CpuShares
				mem += t.Memory.MemoryMB
			}
			disk += a.AllocatedResources.Shared.DiskMB
		}
	}
	if r := n.NodeResources; r != nil {
		fmt.Fprintln(c.Stdout, "\nAllocated Resources")
		printList(c.Stdout, "", "CPU\tMemory\tDisk", 1, func(int) string {
			return fmt.Sprintf("%d/%d MHz\t%d MiB/%d MiB\t%d MiB/%d MiB", cpu, r.Cpu.CpuShares, mem, r.Memory.MemoryMB, disk, r.Disk.DiskMB)
		})
	}
	if n.Status == api.NodeStatusReady {
		var hs *api.HostStats
		err := onAllocNode(cl, n.ID, func(c *api.Client) (err error) {
			hs, err = c.Nodes().Stats(n.ID, nil)
			return err
		})
		if err != nil {
			fmt.Fprintf(c.Stdout, "\nCouldn't retrieve host stats: %v\n", err)
		} else {
			printHostStats(c.Stdout, n, hs, *stats)
		}
	}
	fmt.Fprintln(c.Stdout, "\nAllocations")
	printNamespacedList(c.Stdout, "No allocations placed", "ID\tJob ID\tTask Group\tDesired\tStatus\tCreated", len(allocs),
		func(i int) string { return allocs[i].Namespace },
		func(i int) string {
			a := allocs[i]
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", limit(a.ID, v), a.JobID, a.TaskGroup, a.DesiredStatus, a.ClientStatus, agoUnixNano(a.CreateTime))
		})
	return 0
}

// printHostStats prints the node's resource use, as Nomad's node status
// does ("Host Resource Utilization"), and with detailed the per-core CPU,
// memory and disk blocks of -stats.
func printHostStats(w io.Writer, n *api.Node, hs *api.HostStats, detailed bool) {
	var cpuTotal int64
	if n.NodeResources != nil {
		cpuTotal = n.NodeResources.Cpu.CpuShares
	}
	fmt.Fprintln(w, "\nHost Resource Utilization")
	printList(w, "", "CPU\tMemory\tDisk", 1, func(int) string {
		mem, disk := "-", "-"
		if m := hs.Memory; m != nil {
			mem = humanSize(int64(m.Used)) + "/" + humanSize(int64(m.Total))
		}
		if d := hs.AllocDirStats; d != nil {
			disk = humanSize(int64(d.Used)) + "/" + humanSize(int64(d.Size))
		}
		return fmt.Sprintf("%.0f/%d MHz\t%s\t%s", hs.CPUTicksConsumed, cpuTotal, mem, disk)
	})
	if !detailed {
		return
	}
	fmt.Fprintln(w, "\nCPU Stats")
	printList(w, "", "CPU\tUser\tSystem\tIdle", len(hs.CPU), func(i int) string {
		c := hs.CPU[i]
		return fmt.Sprintf("%s\t%.2f%%\t%.2f%%\t%.2f%%", c.CPU, c.User, c.System, c.Idle)
	})
	if m := hs.Memory; m != nil {
		fmt.Fprintln(w, "\nMemory Stats")
		var k kv
		k.add("Total", humanSize(int64(m.Total))).add("Available", humanSize(int64(m.Available))).
			add("Used", humanSize(int64(m.Used))).add("Free", humanSize(int64(m.Free)))
		k.write(w)
	}
	fmt.Fprintln(w, "\nDisk Stats")
	printList(w, "", "Device\tMountpoint\tSize\tUsed\tAvailable\tUsed %\tInodes Used %", len(hs.DiskStats), func(i int) string {
		d := hs.DiskStats[i]
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%.2f%%\t%.2f%%", d.Device, d.Mountpoint, humanSize(int64(d.Size)),
			humanSize(int64(d.Used)), humanSize(int64(d.Available)), d.UsedPercent, d.InodesUsedPercent)
	})
	fmt.Fprintf(w, "\nUptime = %s\n", time.Duration(hs.Uptime)*time.Second)
}

// localNodeID returns the node ID of the agent cl talks to, from its
// /v1/agent/self (stats.client.node_id, as Nomad's CLI reads it). It
// fails when that agent runs no client.
func localNodeID(cl *api.Client) (string, error) {
	self, err := cl.Agent().Self()
	if err != nil {
		return "", err
	}
	if id := self.Stats["client"]["node_id"]; id != "" {
		return id, nil
	}
	return "", fmt.Errorf("the agent at %s runs no client: -self needs a client agent's address", cl.Address())
}
