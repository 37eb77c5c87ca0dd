package main

import (
	"fmt"
	"io"
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

  -verbose
    Show full IDs.
` + outputOptionsUsage)
}

func (c *AllocStatusCommand) Run(args []string) int {
	fs := c.FlagSet("alloc status", c.Help, flagSetClient)
	verbose := fs.Bool("verbose", false, "")
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
	for _, task := range sortedKeys(a.TaskStates) {
		printTaskState(c.Stdout, a, task)
	}
	return 0
}

// printTaskState prints one task's state, resources and events.
func printTaskState(w io.Writer, a *api.Allocation, task string) {
	ts := a.TaskStates[task]
	fmt.Fprintf(w, "\nTask %q is %q\n", task, ts.State)
	if a.AllocatedResources != nil {
		if tr, ok := a.AllocatedResources.Tasks[task]; ok {
			fmt.Fprintln(w, "Task Resources:")
			printList(w, "", "CPU\tMemory", 1, func(int) string {
				return fmt.Sprintf("%d MHz\t%d MiB", tr.Cpu.CpuShares, tr.Memory.MemoryMB)
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
