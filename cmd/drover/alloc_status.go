package main

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// AllocStatusCommand is `drover alloc status`: one allocation, its tasks
// and their events.
type AllocStatusCommand struct{ Meta }

func (c *AllocStatusCommand) Synopsis() string { return "Shows an allocation" }

func (c *AllocStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover alloc status [options] <allocation>

  Shows the allocation (ID or unique prefix): where it runs, its desired
  and client status, and each task's state, resources and recent events.
` + clientOptionsUsage() + `

Alloc Status Options:

  -stats
    Show each task's detailed memory and CPU use.

  -verbose
    Show full IDs.
` + outputOptionsUsage)
}

func (c *AllocStatusCommand) Run(args []string) int {
	fs := c.FlagSet("alloc status", c.Help, flagSetClient)
	verbose := fs.Bool("verbose", false, "")
	stats := fs.Bool("stats", false, "")
	out := addOutputFlags(fs)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<allocation>")
	if !ok {
		return 1
	}
	a, err := c.allocByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, a)
	}
	v := *verbose
	var k kv
	k.add("ID", a.ID).add("Eval ID", limit(a.EvalID, v)).add("Name", a.Name).add("Node ID", limit(a.NodeID, v)).
		add("Node Name", a.NodeName).add("Job ID", a.JobID)
	if a.Job != nil {
		k.add("Job Version", deref(a.Job.Version))
	}
	k.add("Namespace", a.Namespace).add("Client Status", a.ClientStatus).add("Client Description", orNA(a.ClientDescription)).
		add("Desired Status", a.DesiredStatus).add("Desired Description", orNA(a.DesiredDescription)).
		add("Created", agoUnixNano(a.CreateTime)).add("Modified", agoUnixNano(a.ModifyTime))
	if a.PreviousAllocation != "" {
		k.add("Replaces Alloc ID", limit(a.PreviousAllocation, v))
	}
	if a.NextAllocation != "" {
		k.add("Replacement Alloc ID", limit(a.NextAllocation, v))
	}
	if a.DeploymentID != "" {
		k.add("Deployment ID", limit(a.DeploymentID, v))
		if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
			k.add("Deployment Health", map[bool]string{true: "healthy", false: "unhealthy"}[*a.DeploymentStatus.Healthy])
		}
	}
	k.write(c.Stdout)
	printAllocAddresses(c.Stdout, a)
	var usage *api.AllocResourceUsage
	statsErr := ""
	if a.ClientStatus == api.AllocClientStatusRunning {
		err = onAllocNode(cl, a.NodeID, func(c *api.Client) (err error) {
			usage, err = c.Allocations().Stats(a, &api.QueryOptions{Namespace: a.Namespace})
			return err
		})
		if err != nil {
			usage, statsErr = nil, err.Error()
		}
	}
	for _, task := range sortedKeys(a.TaskStates) {
		var tu *api.TaskResourceUsage
		if usage != nil {
			tu = usage.Tasks[task]
		}
		printTaskState(c.Stdout, a, task, tu, statsErr, *stats)
	}
	return 0
}

// printAllocAddresses prints the alloc's group network ports as Nomad's
// `alloc status` does, under "Allocation Addresses" (with the network's
// mode when it has one): each port's label, whether the scheduler picked
// it (Dynamic) and its host address, with " -> <to>" when it is mapped to
// another port inside the task. Nothing is printed for an alloc without
// ports.
func printAllocAddresses(w io.Writer, a *api.Allocation) {
	if a.AllocatedResources == nil || len(a.AllocatedResources.Shared.Networks) == 0 {
		return
	}
	nw := a.AllocatedResources.Shared.Networks[0]
	type row struct {
		label, ip string
		value, to int
		dynamic   bool
	}
	var rows []row
	for _, p := range nw.ReservedPorts {
		rows = append(rows, row{label: p.Label, ip: nw.IP, value: p.Value, to: p.To})
	}
	for _, p := range nw.DynamicPorts {
		rows = append(rows, row{label: p.Label, ip: nw.IP, value: p.Value, to: p.To, dynamic: true})
	}
	// The alloc's port mappings, when present, say where each port is.
	for i := range rows {
		for _, m := range a.AllocatedResources.Shared.Ports {
			if m.Label == rows[i].label {
				rows[i].value, rows[i].to = m.Value, m.To
				if m.HostIP != "" {
					rows[i].ip = m.HostIP
				}
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	title := "Allocation Addresses:"
	if nw.Mode != "" {
		title = fmt.Sprintf("Allocation Addresses (mode = %q):", nw.Mode)
	}
	fmt.Fprintln(w, "\n"+title)
	printList(w, "", "Label\tDynamic\tAddress", len(rows), func(i int) string {
		r := rows[i]
		dyn := "no"
		if r.dynamic {
			dyn = "yes"
		}
		addr := net.JoinHostPort(r.ip, strconv.Itoa(r.value))
		if r.to > 0 {
			addr += fmt.Sprintf(" -> %d", r.to)
		}
		return fmt.Sprintf("*%s\t%s\t%s", r.label, dyn, addr)
	})
}

// printTaskState prints one task's state, resources (with its use when
// usage is known; detailed adds the memory and CPU blocks of -stats) and
// events.
func printTaskState(w io.Writer, a *api.Allocation, task string, usage *api.TaskResourceUsage, statsErr string, detailed bool) {
	ts := a.TaskStates[task]
	fmt.Fprintf(w, "\nTask %q is %q\n", task, ts.State)
	if a.AllocatedResources != nil {
		if tr, ok := a.AllocatedResources.Tasks[task]; ok {
			fmt.Fprintln(w, "Task Resources:")
			printList(w, "", "CPU\tMemory", 1, func(int) string {
				if usage == nil || usage.ResourceUsage == nil || usage.ResourceUsage.CpuStats == nil || usage.ResourceUsage.MemoryStats == nil {
					return fmt.Sprintf("%d MHz\t%d MiB", tr.Cpu.CpuShares, tr.Memory.MemoryMB)
				}
				ru := usage.ResourceUsage
				return fmt.Sprintf("%.0f/%d MHz\t%s/%d MiB", ru.CpuStats.TotalTicks, tr.Cpu.CpuShares,
					humanSize(int64(ru.MemoryStats.RSS)), tr.Memory.MemoryMB)
			})
			if statsErr != "" && ts.State == "running" {
				fmt.Fprintf(w, "Couldn't retrieve stats: %s\n", statsErr)
			}
		}
	}
	if detailed && usage != nil && usage.ResourceUsage != nil {
		if m := usage.ResourceUsage.MemoryStats; m != nil {
			fmt.Fprintln(w, "\nMemory Stats")
			printList(w, "", "RSS\tMax Usage\tMeasured", 1, func(int) string {
				return fmt.Sprintf("%s\t%s\t%s", humanSize(int64(m.RSS)), humanSize(int64(m.MaxUsage)), strings.Join(m.Measured, ","))
			})
		}
		if cpu := usage.ResourceUsage.CpuStats; cpu != nil {
			fmt.Fprintln(w, "\nCPU Stats")
			printList(w, "", "Percent\tTotal Ticks\tMeasured", 1, func(int) string {
				return fmt.Sprintf("%.2f%%\t%.0f\t%s", cpu.Percent, cpu.TotalTicks, strings.Join(cpu.Measured, ","))
			})
		}
	}
	fmt.Fprintln(w, "\nTask Events:")
	var k kv
	k.add("Started At", formatTime(ts.StartedAt)).add("Finished At", formatTime(ts.FinishedAt)).
		add("Total Restarts", ts.Restarts).add("Last Restart", formatTime(ts.LastRestart))
	k.write(w)
	fmt.Fprintln(w, "\nRecent Events:")
	n := len(ts.Events)
	printList(w, "No events", "Time\tType\tDescription", n, func(i int) string {
		e := ts.Events[n-1-i]
		return fmt.Sprintf("%s\t%s\t%s", formatUnixNano(e.Time), e.Type, eventDescription(e))
	})
}

// eventDescription is the text Nomad's CLI shows for a task event.
func eventDescription(e *api.TaskEvent) string {
	if e.DisplayMessage != "" {
		return e.DisplayMessage
	}
	switch e.Type {
	case api.TaskTerminated:
		return fmt.Sprintf("Exit Code: %d, Signal: %d", e.ExitCode, e.Signal)
	case api.TaskRestarting:
		return fmt.Sprintf("%s - restarting in %s", e.RestartReason, time.Duration(e.StartDelay))
	}
	return e.Message
}
