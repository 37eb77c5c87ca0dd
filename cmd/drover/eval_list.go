package main

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// EvalListCommand is `drover eval list`.
type EvalListCommand struct{ Meta }

func (c *EvalListCommand) Synopsis() string { return "Lists evaluations" }

func (c *EvalListCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover eval list [options]

  Lists evaluations, newest first (with -namespace '*', of every namespace,
  with a Namespace column).
` + clientOptionsUsage() + `

Eval List Options:

  -job=<job>
    Only the evaluations of this job.

  -status=<status>
    Only evaluations with this status (pending, blocked, complete,
    failed, canceled).

  -filter=<expression>
    A filter expression on the evaluations' fields, as Nomad's
    (e.g. 'TriggeredBy == "job-register"').

  -per-page=<n>, -page-token=<token>
    Pages of results: how many per page, and where the next page starts.

  -verbose
    Show full IDs.
` + outputOptionsUsage)
}

func (c *EvalListCommand) Run(args []string) int {
	fs := c.FlagSet("eval list", c.Help, flagSetClient)
	job := fs.String("job", "", "")
	status := fs.String("status", "", "")
	filter := fs.String("filter", "", "")
	perPage := fs.Int("per-page", 0, "")
	pageToken := fs.String("page-token", "", "")
	verbose := fs.Bool("verbose", false, "")
	out := addOutputFlags(fs)
	cl, _, ok := c.setup(fs, args, 0, 0, "")
	if !ok {
		return 1
	}
	q := &api.QueryOptions{Namespace: c.Namespace(), Filter: *filter, PerPage: int32(*perPage), NextToken: *pageToken, Params: map[string]string{}}
	if *job != "" {
		q.Params["job"] = *job
	}
	if *status != "" {
		q.Params["status"] = *status
	}
	evals, meta, err := cl.Evaluations().List(q)
	if err != nil {
		return c.errorf("querying evaluations", err)
	}
	if out.wanted() {
		return out.write(&c.Meta, evals)
	}
	v := *verbose
	printNamespacedList(c.Stdout, "No evals found", "ID\tPriority\tTriggered By\tJob ID\tNode ID\tStatus\tPlacement Failures", len(evals),
		func(i int) string { return evals[i].Namespace },
		func(i int) string {
			e := evals[i]
			failures := "false"
			if e.Status == api.EvalStatusBlocked || len(e.FailedTGAllocs) > 0 {
				failures = "true"
			}
			return fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s\t%s", limit(e.ID, v), e.Priority, e.TriggeredBy, e.JobID,
				orNA(limit(e.NodeID, v)), e.Status, failures)
		})
	if meta.NextToken != "" {
		fmt.Fprintf(c.Stdout, "\nResults have been paginated. To get the next page run:\n\ndrover eval list -per-page %d -page-token %s\n",
			*perPage, meta.NextToken)
	}
	return 0
}
