package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// JobPlanCommand is `drover job plan`: what registering a job file would
// change, computed by the scheduler without committing anything.
type JobPlanCommand struct{ Meta }

func (c *JobPlanCommand) Synopsis() string {
	return "Shows what running a job file would change (dry run)"
}

func (c *JobPlanCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job plan [options] <path>

  Runs the scheduler on the job in the file without committing anything
  (PUT /v1/job/:id/plan) and prints the difference from the registered job
  ("+" added, "-" removed, "+/-" changed), what each task group's
  allocations would undergo, and whether everything could be placed. It
  ends with the job's modify index for "drover job run -check-index", which
  registers the job only if nobody changed it since the plan.

  Exit codes, as Nomad's: 0 no allocations would be created or destroyed,
  1 some would be, 255 the plan could not be computed.

` + jobFileHelp + `
` + clientOptionsUsage() + `

Plan Options:

  -diff=<bool>
    Show the diff (default true).

  -verbose
    Show the unchanged fields and the inside of added or removed groups
    and tasks too.
` + jobFileOptionsUsage + `

  -t
    Format the plan response with a Go template (the exit code still says
    whether allocations change).`)
}

// planExit* are job plan's exit codes (Nomad's).
const (
	planExitNoChange = 0
	planExitChanges  = 1
	planExitError    = 255
)

func (c *JobPlanCommand) Run(args []string) int {
	fs := c.FlagSet("job plan", c.Help, flagSetClient)
	diff := fs.Bool("diff", true, "")
	verbose := fs.Bool("verbose", false, "")
	jf := addJobFileFlags(fs)
	out := &outputFlags{}
	fs.StringVar(&out.tmpl, "t", "", "")
	cl, rest, ok := c.setup(fs, args, 1, 1, "<path>")
	if !ok {
		return planExitError
	}
	path := rest[0]
	src, err := readJobSource(path, jf)
	if err != nil {
		c.errorf(fmt.Sprintf("reading job file %q", path), err)
		return planExitError
	}
	if src.id == "" {
		c.errorf("", fmt.Errorf("the job in %q has no ID", path))
		return planExitError
	}
	body, err := src.body(map[string]any{"Diff": *diff})
	if err != nil {
		c.errorf("encoding job", err)
		return planExitError
	}
	var resp api.JobPlanResponse
	if _, err := cl.Raw().Write("/v1/job/"+url.PathEscape(src.id)+"/plan", rawJSON(body), &resp, nsWrite(c.jobNamespace(src))); err != nil {
		c.errorf("during plan", err)
		return planExitError
	}
	if out.wanted() {
		if code := out.write(&c.Meta, &resp); code != 0 {
			return planExitError
		}
		return planExitCode(&resp)
	}
	if *diff && resp.Diff != nil {
		fmt.Fprintf(c.Stdout, "%s\n\n", formatJobDiff(resp.Diff, *verbose))
	}
	fmt.Fprintln(c.Stdout, "Scheduler dry-run:")
	writeLines(c.Stdout, dryRunLines(&resp))
	if resp.Warnings != "" {
		fmt.Fprintf(c.Stdout, "\nJob Warnings:\n%s\n", resp.Warnings)
	}
	fmt.Fprintf(c.Stdout, "\nJob Modify Index: %d\n", resp.JobModifyIndex)
	fmt.Fprintf(c.Stdout, "To submit the job with version verification run:\n\ndrover job run -check-index %d %s\n\n", resp.JobModifyIndex, path)
	fmt.Fprintln(c.Stdout, "With -check-index the job is registered only if its modify index is still the one\n"+
		"planned: had someone changed the job since, the run would be refused, because this\n"+
		"plan would no longer describe what it does.")
	return planExitCode(&resp)
}

// planExitCode is 1 when the plan creates or destroys allocations (places,
// stops, migrations, destructive updates, canaries), else 0.
func planExitCode(resp *api.JobPlanResponse) int {
	if resp.Diff != nil && resp.Diff.Type == "None" {
		return planExitNoChange
	}
	if resp.Annotations != nil {
		for _, u := range resp.Annotations.DesiredTGUpdates {
			if u.Place+u.Stop+u.Migrate+u.DestructiveUpdate+u.Canary > 0 {
				return planExitChanges
			}
		}
	}
	return planExitNoChange
}

// dryRunLines says whether everything could be placed, as Nomad's plan.
func dryRunLines(resp *api.JobPlanResponse) []string {
	var out []string
	if len(resp.FailedTGAllocs) == 0 {
		out = append(out, "- All tasks successfully allocated.")
	} else {
		out = append(out, "- WARNING: Failed to place all allocations.")
		for _, l := range failedPlacementLines(resp.FailedTGAllocs, "  ") {
			out = append(out, "  "+l)
		}
	}
	for _, ev := range resp.CreatedEvals {
		if ev.TriggeredBy == "rolling-update" {
			out = append(out, fmt.Sprintf("- Rolling update, next evaluation will be in %s.", ev.Wait))
		}
	}
	if !resp.NextPeriodicLaunch.IsZero() {
		out = append(out, fmt.Sprintf("- If submitted now, next periodic launch would be at %s.", formatTime(resp.NextPeriodicLaunch)))
	}
	return out
}
