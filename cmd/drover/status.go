package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

func runAllocStatus(args []string, stdout, stderr io.Writer) int {
	fs, cf := newCommandFlags("alloc status", "Usage: drover alloc status ALLOC", stderr)
	id, ok := oneArg(fs, args, "alloc")
	if !ok {
		return 1
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	full, err := resolvePrefix(id, "allocation", func(p string) ([]string, error) {
		stubs, _, err := c.Allocations().PrefixList(p)
		ids := make([]string, 0, len(stubs))
		for _, s := range stubs {
			ids = append(ids, s.ID)
		}
		return ids, err
	})
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	a, _, err := c.Allocations().Info(full, nil)
	if err != nil {
		return errorf(stderr, "querying allocation: %v", err)
	}
	kv := newTable(stdout)
	fmt.Fprintf(kv, "ID\t= %s\n", cf.short(a.ID))
	fmt.Fprintf(kv, "Eval ID\t= %s\n", cf.short(a.EvalID))
	fmt.Fprintf(kv, "Name\t= %s\n", a.Name)
	fmt.Fprintf(kv, "Node ID\t= %s\n", cf.short(a.NodeID))
	fmt.Fprintf(kv, "Node Name\t= %s\n", a.NodeName)
	fmt.Fprintf(kv, "Job ID\t= %s\n", a.JobID)
	if a.Job != nil {
		fmt.Fprintf(kv, "Job Version\t= %d\n", derefUint64(a.Job.Version))
	}
	fmt.Fprintf(kv, "Client Status\t= %s\n", a.ClientStatus)
	fmt.Fprintf(kv, "Client Description\t= %s\n", orNA(a.ClientDescription))
	fmt.Fprintf(kv, "Desired Status\t= %s\n", a.DesiredStatus)
	fmt.Fprintf(kv, "Desired Description\t= %s\n", orNA(a.DesiredDescription))
	fmt.Fprintf(kv, "Created\t= %s\n", ago(time.Unix(0, a.CreateTime)))
	fmt.Fprintf(kv, "Modified\t= %s\n", ago(time.Unix(0, a.ModifyTime)))
	if a.PreviousAllocation != "" {
		fmt.Fprintf(kv, "Replaces Alloc ID\t= %s\n", cf.short(a.PreviousAllocation))
	}
	if a.NextAllocation != "" {
		fmt.Fprintf(kv, "Replacement Alloc ID\t= %s\n", cf.short(a.NextAllocation))
	}
	if a.DeploymentID != "" {
		fmt.Fprintf(kv, "Deployment ID\t= %s\n", cf.short(a.DeploymentID))
		if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
			fmt.Fprintf(kv, "Deployment Health\t= %s\n", map[bool]string{true: "healthy", false: "unhealthy"}[*a.DeploymentStatus.Healthy])
		}
	}
	kv.Flush()

	for _, task := range sortedKeys(a.TaskStates) {
		ts := a.TaskStates[task]
		fmt.Fprintf(stdout, "\nTask %q is %q\n", task, ts.State)
		if a.AllocatedResources != nil {
			if tr, ok := a.AllocatedResources.Tasks[task]; ok {
				fmt.Fprintln(stdout, "Task Resources:")
				rt := newTable(stdout)
				fmt.Fprintln(rt, "CPU\tMemory")
				fmt.Fprintf(rt, "%d MHz\t%d MiB\n", tr.Cpu.CpuShares, tr.Memory.MemoryMB)
				rt.Flush()
			}
		}
		fmt.Fprintln(stdout, "\nTask Events:")
		ek := newTable(stdout)
		fmt.Fprintf(ek, "Started At\t= %s\n", formatTime(ts.StartedAt))
		fmt.Fprintf(ek, "Finished At\t= %s\n", formatTime(ts.FinishedAt))
		fmt.Fprintf(ek, "Total Restarts\t= %d\n", ts.Restarts)
		fmt.Fprintf(ek, "Last Restart\t= %s\n", formatTime(ts.LastRestart))
		ek.Flush()
		fmt.Fprintln(stdout, "\nRecent Events:")
		et := newTable(stdout)
		fmt.Fprintln(et, "Time\tType\tDescription")
		for i := len(ts.Events) - 1; i >= 0; i-- {
			e := ts.Events[i]
			fmt.Fprintf(et, "%s\t%s\t%s\n", formatUnixNano(e.Time), e.Type, eventDescription(e))
		}
		et.Flush()
	}
	return 0
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

func orNA(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func runEvalStatus(args []string, stdout, stderr io.Writer) int {
	fs, cf := newCommandFlags("eval status", "Usage: drover eval status EVAL", stderr)
	id, ok := oneArg(fs, args, "eval")
	if !ok {
		return 1
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	full, err := resolvePrefix(id, "evaluation", func(p string) ([]string, error) {
		evals, _, err := c.Evaluations().PrefixList(p)
		ids := make([]string, 0, len(evals))
		for _, e := range evals {
			ids = append(ids, e.ID)
		}
		return ids, err
	})
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	ev, _, err := c.Evaluations().Info(full, &api.QueryOptions{Params: map[string]string{"related": "true"}})
	if err != nil {
		return errorf(stderr, "querying evaluation: %v", err)
	}
	kv := newTable(stdout)
	fmt.Fprintf(kv, "ID\t= %s\n", cf.short(ev.ID))
	fmt.Fprintf(kv, "Create Time\t= %s\n", ago(time.Unix(0, ev.CreateTime)))
	fmt.Fprintf(kv, "Modify Time\t= %s\n", ago(time.Unix(0, ev.ModifyTime)))
	fmt.Fprintf(kv, "Status\t= %s\n", ev.Status)
	fmt.Fprintf(kv, "Status Description\t= %s\n", orNA(ev.StatusDescription))
	fmt.Fprintf(kv, "Type\t= %s\n", ev.Type)
	fmt.Fprintf(kv, "TriggeredBy\t= %s\n", ev.TriggeredBy)
	fmt.Fprintf(kv, "Job ID\t= %s\n", ev.JobID)
	fmt.Fprintf(kv, "Namespace\t= %s\n", ev.Namespace)
	fmt.Fprintf(kv, "Priority\t= %d\n", ev.Priority)
	if !ev.WaitUntil.IsZero() {
		fmt.Fprintf(kv, "Wait Until\t= %s\n", formatTime(ev.WaitUntil))
	}
	fmt.Fprintf(kv, "Placement Failures\t= %t\n", len(ev.FailedTGAllocs) > 0)
	if ev.PreviousEval != "" {
		fmt.Fprintf(kv, "Previous Eval\t= %s\n", cf.short(ev.PreviousEval))
	}
	if ev.NextEval != "" {
		fmt.Fprintf(kv, "Next Eval\t= %s\n", cf.short(ev.NextEval))
	}
	if ev.BlockedEval != "" {
		fmt.Fprintf(kv, "Blocked Eval\t= %s\n", cf.short(ev.BlockedEval))
	}
	kv.Flush()
	if len(ev.RelatedEvals) > 0 {
		fmt.Fprintln(stdout, "\nRelated Evaluations")
		rt := newTable(stdout)
		fmt.Fprintln(rt, "ID\tPriority\tTriggered By\tNode ID\tStatus\tDescription")
		for _, r := range ev.RelatedEvals {
			fmt.Fprintf(rt, "%s\t%d\t%s\t%s\t%s\t%s\n", cf.short(r.ID), r.Priority, r.TriggeredBy, cf.short(r.NodeID), r.Status, orNA(r.StatusDescription))
		}
		rt.Flush()
	}
	if len(ev.FailedTGAllocs) > 0 {
		fmt.Fprintln(stdout, "\nFailed Placements")
		for _, tg := range sortedKeys(ev.FailedTGAllocs) {
			m := ev.FailedTGAllocs[tg]
			n := 1 + m.CoalescedFailures
			fmt.Fprintf(stdout, "Task Group %q (failed to place %d allocation%s):\n", tg, n, plural(n))
			for _, line := range placementFailureLines(m) {
				fmt.Fprintf(stdout, "  * %s\n", line)
			}
		}
	}
	return 0
}

func runNodeStatus(args []string, stdout, stderr io.Writer) int {
	fs, cf := newCommandFlags("node status", "Usage: drover node status [NODE]", stderr)
	if err := fs.Parse(args); err != nil {
		return 1
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	if fs.NArg() == 0 {
		nodes, _, err := c.Nodes().List(nil)
		if err != nil {
			return errorf(stderr, "querying nodes: %v", err)
		}
		printList(stdout, "No nodes registered", "ID\tNode Pool\tDC\tName\tClass\tDrain\tEligibility\tStatus", len(nodes), func(i int) string {
			n := nodes[i]
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%t\t%s\t%s", cf.short(n.ID), n.NodePool, n.Datacenter, n.Name,
				orNA(n.NodeClass), n.Drain, n.SchedulingEligibility, n.Status)
		})
		return 0
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 1
	}
	n, _, err := c.Nodes().Info(fs.Arg(0), nil)
	if err != nil {
		return errorf(stderr, "querying node: %v", err)
	}
	allocs, _, err := c.Nodes().Allocations(n.ID, nil)
	if err != nil {
		return errorf(stderr, "querying node allocations: %v", err)
	}
	kv := newTable(stdout)
	fmt.Fprintf(kv, "ID\t= %s\n", cf.short(n.ID))
	fmt.Fprintf(kv, "Name\t= %s\n", n.Name)
	fmt.Fprintf(kv, "Node Pool\t= %s\n", n.NodePool)
	fmt.Fprintf(kv, "Class\t= %s\n", orNA(n.NodeClass))
	fmt.Fprintf(kv, "DC\t= %s\n", n.Datacenter)
	fmt.Fprintf(kv, "Drain\t= %t\n", n.Drain)
	fmt.Fprintf(kv, "Eligibility\t= %s\n", n.SchedulingEligibility)
	fmt.Fprintf(kv, "Status\t= %s\n", n.Status)
	var drivers []string
	for _, d := range sortedKeys(n.Drivers) {
		if n.Drivers[d].Detected && n.Drivers[d].Healthy {
			drivers = append(drivers, d)
		}
	}
	fmt.Fprintf(kv, "Drivers\t= %s\n", strings.Join(drivers, ","))
	kv.Flush()

	var cpu, mem, disk int64
	live := 0
	for _, a := range allocs {
		if a.ClientStatus == api.AllocClientStatusComplete || a.ClientStatus == api.AllocClientStatusFailed ||
			a.ClientStatus == api.AllocClientStatusLost || a.DesiredStatus != api.AllocDesiredStatusRun {
			continue
		}
		live++
		if a.AllocatedResources != nil {
			for _, t := range a.AllocatedResources.Tasks {
				cpu += t.Cpu.CpuShares
				mem += t.Memory.MemoryMB
			}
			disk += a.AllocatedResources.Shared.DiskMB
		}
	}
	if n.NodeResources != nil {
		fmt.Fprintln(stdout, "\nAllocated Resources")
		rt := newTable(stdout)
		fmt.Fprintln(rt, "CPU\tMemory\tDisk")
		fmt.Fprintf(rt, "%d/%d MHz\t%d MiB/%d MiB\t%d MiB/%d MiB\n", cpu, n.NodeResources.Cpu.CpuShares,
			mem, n.NodeResources.Memory.MemoryMB, disk, n.NodeResources.Disk.DiskMB)
		rt.Flush()
	}
	fmt.Fprintln(stdout, "\nAllocations")
	printList(stdout, "No allocations placed", "ID\tJob ID\tTask Group\tDesired\tStatus\tCreated", len(allocs), func(i int) string {
		a := allocs[i]
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", cf.short(a.ID), a.JobID, a.TaskGroup, a.DesiredStatus, a.ClientStatus, ago(time.Unix(0, a.CreateTime)))
	})
	return 0
}

// resolvePrefix turns an ID prefix into the one full ID it names, as
// Nomad's CLI does for allocations and evaluations.
func resolvePrefix(prefix, kind string, list func(string) ([]string, error)) (string, error) {
	if len(prefix) == 1 {
		return "", fmt.Errorf("%s identifier must contain at least two characters", kind)
	}
	ids, err := list(prefix)
	if err != nil {
		return "", fmt.Errorf("querying %s: %w", kind, err)
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("no %s with prefix or id %q found", kind, prefix)
	case 1:
		return ids[0], nil
	}
	for _, id := range ids {
		if id == prefix {
			return id, nil
		}
	}
	return "", fmt.Errorf("prefix %q matched multiple %ss: %s", prefix, kind, strings.Join(ids, ", "))
}
