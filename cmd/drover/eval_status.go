package main

import (
	"fmt"
	"strings"
)

// EvalStatusCommand is `drover eval status`: one evaluation, its related
// evaluations and placement failures.
type EvalStatusCommand struct{ Meta }

func (c *EvalStatusCommand) Synopsis() string { return "Shows an evaluation" }

func (c *EvalStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover eval status [options] <evaluation>

  Shows the evaluation (ID or unique prefix): its status, what triggered
  it, the evaluations related to it and why placements failed.
` + clientOptionsUsage() + `

Eval Status Options:

  -verbose
    Show full IDs.
` + outputOptionsUsage)
}

func (c *EvalStatusCommand) Run(args []string) int {
	fs := c.FlagSet("eval status", c.Help, flagSetClient)
	verbose := fs.Bool("verbose", false, "")
	out := addOutputFlags(fs)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<evaluation>")
	if !ok {
		return 1
	}
	ev, err := c.evalByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, ev)
	}
	v := *verbose
	var k kv
	k.add("ID", limit(ev.ID, v)).add("Create Time", agoUnixNano(ev.CreateTime)).add("Modify Time", agoUnixNano(ev.ModifyTime)).
		add("Status", ev.Status).add("Status Description", orNA(ev.StatusDescription)).add("Type", ev.Type).
		add("TriggeredBy", ev.TriggeredBy).add("Job ID", ev.JobID).add("Namespace", ev.Namespace).add("Priority", ev.Priority)
	if ev.DeploymentID != "" {
		k.add("Deployment ID", limit(ev.DeploymentID, v))
	}
	if ev.NodeID != "" {
		k.add("Node ID", limit(ev.NodeID, v))
	}
	if !ev.WaitUntil.IsZero() {
		k.add("Wait Until", formatTime(ev.WaitUntil))
	}
	k.add("Placement Failures", len(ev.FailedTGAllocs) > 0)
	if ev.PreviousEval != "" {
		k.add("Previous Eval", limit(ev.PreviousEval, v))
	}
	if ev.NextEval != "" {
		k.add("Next Eval", limit(ev.NextEval, v))
	}
	if ev.BlockedEval != "" {
		k.add("Blocked Eval", limit(ev.BlockedEval, v))
	}
	k.write(c.Stdout)
	if len(ev.RelatedEvals) > 0 {
		fmt.Fprintln(c.Stdout, "\nRelated Evaluations")
		printList(c.Stdout, "", "ID\tPriority\tTriggered By\tNode ID\tStatus\tDescription", len(ev.RelatedEvals), func(i int) string {
			r := ev.RelatedEvals[i]
			return fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s", limit(r.ID, v), r.Priority, r.TriggeredBy, limit(r.NodeID, v), r.Status, orNA(r.StatusDescription))
		})
	}
	if ann := ev.PlanAnnotations; ann != nil && len(ann.DesiredTGUpdates) > 0 {
		fmt.Fprintln(c.Stdout, "\nPlan Annotations")
		groups := sortedKeys(ann.DesiredTGUpdates)
		printList(c.Stdout, "", "Task Group\tIgnore\tPlace\tStop\tMigrate\tInPlace\tDestructive\tCanary", len(groups), func(i int) string {
			u := ann.DesiredTGUpdates[groups[i]]
			return fmt.Sprintf("%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d", groups[i], u.Ignore, u.Place, u.Stop, u.Migrate, u.InPlaceUpdate, u.DestructiveUpdate, u.Canary)
		})
	}
	if len(ev.FailedTGAllocs) > 0 {
		fmt.Fprintln(c.Stdout, "\nFailed Placements")
		writeLines(c.Stdout, failedPlacementLines(ev.FailedTGAllocs, "  "))
	}
	return 0
}
