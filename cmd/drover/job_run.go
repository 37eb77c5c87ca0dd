package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// JobRunCommand is `drover job run`: submit a job, then follow its
// evaluation and deployment.
type JobRunCommand struct{ Meta }

func (c *JobRunCommand) Synopsis() string {
	return "Submits a job and follows its evaluation and deployment"
}

func (c *JobRunCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job run [options] <path>

  Registers the job in the file and monitors its evaluation, then the
  deployment it starts, until the deployment succeeds or fails, as Nomad's
  CLI. Exit code 0: done (deployment successful); 1: an error, a failed
  evaluation or deployment; 2: some allocations could not be placed (the
  deployment is then not followed).

` + jobFileHelp + `
` + clientOptionsUsage() + `

Run Options:

  -detach
    Return after submitting, with the evaluation ID, without monitoring.

  -check-index=<index>
    Register only if the job's modify index is this (0: only if the job
    does not exist), as Nomad's -check-index.

  -eval-priority=<priority>
    Priority of the evaluation (default: the job's).

  -preserve-counts
    Keep the current counts of existing task groups.

  -output
    Print the job as the JSON the API takes ({"Job": ...}) and exit.

  -verbose
    Show full IDs.
` + jobFileOptionsUsage)
}

func (c *JobRunCommand) Run(args []string) int {
	fs := c.FlagSet("job run", c.Help, flagSetClient)
	detach := fs.Bool("detach", false, "")
	verbose := fs.Bool("verbose", false, "")
	output := fs.Bool("output", false, "")
	checkIndex := fs.String("check-index", "", "")
	evalPriority := fs.Int("eval-priority", 0, "")
	preserveCounts := fs.Bool("preserve-counts", false, "")
	jf := addJobFileFlags(fs)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<path>")
	if !ok {
		return 1
	}
	src, err := readJobSource(rest[0], jf)
	if err != nil {
		return c.errorf(fmt.Sprintf("reading job file %q", rest[0]), err)
	}
	if *output {
		out, err := formatData(true, "", map[string]json.RawMessage{"Job": src.job})
		if err != nil {
			return c.errorf("encoding job", err)
		}
		fmt.Fprintln(c.Stdout, out)
		return 0
	}
	extra := map[string]any{}
	if *checkIndex != "" {
		idx, err := parseIndex(*checkIndex)
		if err != nil {
			return c.usageError(fs, "-check-index: %v", err)
		}
		extra["EnforceIndex"], extra["JobModifyIndex"] = true, idx
	}
	if *evalPriority != 0 {
		extra["EvalPriority"] = *evalPriority
	}
	if *preserveCounts {
		extra["PreserveCounts"] = true
	}
	body, err := src.registerBody(extra)
	if err != nil {
		return c.errorf("encoding job", err)
	}
	ns := c.jobNamespace(src)
	var resp api.JobRegisterResponse
	if _, err := cl.Raw().Write("/v1/jobs", rawJSON(body), &resp, nsWrite(ns)); err != nil {
		if *checkIndex != "" && strings.Contains(err.Error(), "409") {
			return c.errorf("submitting job", fmt.Errorf("the job's modify index is not %s (-check-index): %w", *checkIndex, err))
		}
		return c.errorf("submitting job", err)
	}
	if resp.Warnings != "" {
		fmt.Fprintf(c.Stdout, "Job Warnings:\n%s\n\n", resp.Warnings)
	}
	if resp.EvalID == "" || printParentRegistered(c.Stdout, src.job) {
		if resp.EvalID == "" {
			fmt.Fprintln(c.Stdout, "Job registration successful")
		}
		return 0
	}
	if *detach {
		fmt.Fprintln(c.Stdout, "Job registration successful")
		fmt.Fprintf(c.Stdout, "Evaluation ID: %s\n", resp.EvalID)
		return 0
	}
	return newMonitor(&c.Meta, cl, ns, *verbose).run(resp.EvalID)
}

// jobNamespace is where a job from a file goes: -namespace (or the
// environment) when given, else the job's own Namespace, else default.
func (m *Meta) jobNamespace(src *jobSource) string {
	if ns := m.Namespace(); ns != api.DefaultNamespace || src.namespace == "" {
		return ns
	}
	return src.namespace
}

func parseIndex(s string) (uint64, error) {
	var idx uint64
	if _, err := fmt.Sscan(s, &idx); err != nil {
		return 0, fmt.Errorf("%q is not an index (a non-negative integer)", s)
	}
	return idx, nil
}

// printParentRegistered prints, for a periodic or parameterized job, what
// Nomad's job run prints instead of monitoring (such a job places nothing
// itself): the registration and, for a periodic job, its next launch. It
// reports whether the job was one.
func printParentRegistered(w io.Writer, job json.RawMessage) bool {
	var j api.Job
	if json.Unmarshal(job, &j) != nil || (j.Periodic == nil && j.ParameterizedJob == nil) {
		return false
	}
	fmt.Fprintln(w, "Job registration successful")
	if j.Periodic == nil || j.ParameterizedJob != nil {
		return true
	}
	j.Periodic.Canonicalize()
	loc, err := j.Periodic.GetLocation()
	if err != nil {
		return true
	}
	now := time.Now().In(loc)
	if next, err := j.Periodic.Next(now); err == nil && !next.IsZero() {
		fmt.Fprintf(w, "Approximate next launch time: %s (%s from now)\n", next.UTC().Format(time.RFC3339), next.Sub(now).Round(time.Second))
	}
	return true
}
