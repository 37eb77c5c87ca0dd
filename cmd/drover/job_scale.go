package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// JobScaleCommand is `drover job scale`: change a task group's count.
type JobScaleCommand struct{ Meta }

func (c *JobScaleCommand) Synopsis() string { return "Changes the count of a job's task group" }

func (c *JobScaleCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job scale [options] <job> [<group>] <count>

  Sets the count of the task group (which may be left out when the job has
  one group) and monitors the evaluation that follows, unless -detach.
  Without a count argument ("drover job scale <job>") it prints each
  group's desired, placed, running, healthy and unhealthy counts.
` + clientOptionsUsage() + `

Scale Options:

  -check-index=<index>
    Scale only if the job's modify index is this one.

  -message=<text>
    A message recorded with the scaling event.

  -detach
    Return after submitting, printing the evaluation ID.

  -verbose
    Show full IDs.`)
}

func (c *JobScaleCommand) Run(args []string) int {
	fs := c.FlagSet("job scale", c.Help, flagSetClient)
	detach := fs.Bool("detach", false, "")
	verbose := fs.Bool("verbose", false, "")
	checkIndex := fs.String("check-index", "", "")
	message := fs.String("message", "", "")
	cl, rest, ok := c.setup(fs, args, 1, 3, "<job> [<group>] <count>")
	if !ok {
		return 1
	}
	id, ns, err := c.jobByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("querying job", err)
	}
	if len(rest) == 1 {
		return c.status(cl, id, ns)
	}
	countArg := rest[len(rest)-1]
	count, err := strconv.ParseInt(countArg, 10, 64)
	if err != nil || count < 0 {
		return c.usageError(fs, "Count %q is not a non-negative integer", countArg)
	}
	group := ""
	if len(rest) == 3 {
		group = rest[1]
	} else {
		job, _, err := cl.Jobs().Info(id, nsQuery(ns))
		if err != nil {
			return c.errorf("querying job", err)
		}
		if len(job.TaskGroups) != 1 {
			var names []string
			for _, tg := range job.TaskGroups {
				names = append(names, deref(tg.Name))
			}
			return c.usageError(fs, "Job %q has %d task groups: name one of %s", id, len(job.TaskGroups), strings.Join(names, ", "))
		}
		group = deref(job.TaskGroups[0].Name)
	}
	req := &api.ScalingRequest{Count: &count, Target: map[string]string{"Job": id, "Group": group}, Message: *message}
	if *checkIndex != "" {
		if req.JobModifyIndex, err = parseIndex(*checkIndex); err != nil {
			return c.usageError(fs, "-check-index: %v", err)
		}
	}
	resp, _, err := cl.Jobs().ScaleWithRequest(id, req, nsWrite(ns))
	if err != nil {
		return c.errorf("scaling job", err)
	}
	if resp.Warnings != "" {
		fmt.Fprintf(c.Stdout, "Job Warnings:\n%s\n\n", resp.Warnings)
	}
	if *detach || resp.EvalID == "" {
		fmt.Fprintf(c.Stdout, "Job %q task group %q scaled to %d\n", id, group, count)
		if resp.EvalID != "" {
			fmt.Fprintf(c.Stdout, "Evaluation ID: %s\n", resp.EvalID)
		}
		return 0
	}
	return newMonitor(&c.Meta, cl, ns, *verbose).run(resp.EvalID)
}

// status prints the job's scale status per task group.
func (c *JobScaleCommand) status(cl *api.Client, id, ns string) int {
	st, _, err := cl.Jobs().ScaleStatus(id, nsQuery(ns))
	if err != nil {
		return c.errorf("querying scale status", err)
	}
	groups := sortedKeys(st.TaskGroups)
	printList(c.Stdout, "No task groups", "Task Group\tDesired\tPlaced\tRunning\tHealthy\tUnhealthy", len(groups), func(i int) string {
		g := st.TaskGroups[groups[i]]
		return fmt.Sprintf("%s\t%d\t%d\t%d\t%d\t%d", groups[i], g.Desired, g.Placed, g.Running, g.Healthy, g.Unhealthy)
	})
	return 0
}
