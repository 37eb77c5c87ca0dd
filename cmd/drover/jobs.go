package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

func runJobRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("job run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	detach := fs.Bool("detach", false, "return after submitting, without following the evaluation")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: drover job run [-detach] [-address ADDR] FILE\n\n"+
			"  FILE is a job in Nomad's JSON format: {\"Job\": {...}} as `nomad job run -output`\n"+
			"  prints, or the bare job object. \"-\" reads standard input.")
		fs.PrintDefaults()
	}
	path, ok := oneArg(fs, args, "file")
	if !ok {
		return 1
	}
	body, err := readJobFile(path)
	if err != nil {
		return errorf(stderr, "reading job file %q: %v", path, err)
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	var resp api.JobRegisterResponse
	if _, err := c.Raw().Write("/v1/jobs", json.RawMessage(body), &resp, nil); err != nil {
		return errorf(stderr, "submitting job: %v", err)
	}
	if resp.Warnings != "" {
		fmt.Fprintf(stdout, "Job Warnings:\n%s\n\n", resp.Warnings)
	}
	if *detach {
		fmt.Fprintln(stdout, "Job registration successful")
		fmt.Fprintf(stdout, "Evaluation ID: %s\n", resp.EvalID)
		return 0
	}
	return monitorEval(c, cf, resp.EvalID, stdout, stderr)
}

// readJobFile returns the body of PUT /v1/jobs: the file as is when it is
// {"Job": ...}, else the file wrapped in {"Job": ...}.
func readJobFile(path string) ([]byte, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object (drover reads Nomad's JSON job format; convert HCL with `nomad job run -output FILE.hcl`): %v", err)
	}
	if _, ok := top["Job"]; ok {
		return data, nil
	}
	var buf bytes.Buffer
	buf.WriteString(`{"Job":`)
	buf.Write(bytes.TrimSpace(data))
	buf.WriteString(`}`)
	return buf.Bytes(), nil
}

// monitorEval follows an evaluation to its end, as Nomad's monitor: the
// allocations it created, its status, and placement failures. It returns
// 0 when everything was placed, 2 when some placements failed.
func monitorEval(c *api.Client, cf *clientFlags, evalID string, stdout, stderr io.Writer) int {
	now := func() string { return formatTime(time.Now()) }
	fmt.Fprintf(stdout, "==> %s: Monitoring evaluation %q\n", now(), cf.short(evalID))
	var lastIndex uint64
	status := ""
	seenAllocs := map[string]bool{}
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		ev, meta, err := c.Evaluations().Info(evalID, &api.QueryOptions{WaitIndex: lastIndex, WaitTime: 5 * time.Second})
		if err != nil {
			return errorf(stderr, "reading evaluation: %v", err)
		}
		lastIndex = meta.LastIndex
		if status == "" {
			fmt.Fprintf(stdout, "    %s: Evaluation triggered by job %q\n", now(), ev.JobID)
		}
		allocs, _, err := c.Evaluations().Allocations(evalID, nil)
		if err != nil {
			return errorf(stderr, "reading evaluation allocations: %v", err)
		}
		for i := len(allocs) - 1; i >= 0; i-- {
			a := allocs[i]
			if seenAllocs[a.ID] {
				continue
			}
			seenAllocs[a.ID] = true
			fmt.Fprintf(stdout, "    %s: Allocation %q created: node %q, group %q\n", now(), cf.short(a.ID), cf.short(a.NodeID), a.TaskGroup)
		}
		if ev.Status != status {
			if status != "" {
				fmt.Fprintf(stdout, "    %s: Evaluation status changed: %q -> %q\n", now(), status, ev.Status)
			}
			status = ev.Status
		}
		switch ev.Status {
		case api.EvalStatusComplete, api.EvalStatusFailed, api.EvalStatusCancelled, api.EvalStatusBlocked:
			return evalSummary(ev, cf, stdout, now)
		}
	}
	return errorf(stderr, "evaluation %q did not finish within 10 minutes", evalID)
}

func evalSummary(ev *api.Evaluation, cf *clientFlags, stdout io.Writer, now func() string) int {
	if len(ev.FailedTGAllocs) == 0 {
		fmt.Fprintf(stdout, "==> %s: Evaluation %q finished with status %q\n", now(), cf.short(ev.ID), ev.Status)
		if ev.Status == api.EvalStatusFailed {
			fmt.Fprintf(stdout, "    Status description: %s\n", ev.StatusDescription)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stdout, "==> %s: Evaluation %q finished with status %q but failed to place all allocations:\n", now(), cf.short(ev.ID), ev.Status)
	for _, tg := range sortedKeys(ev.FailedTGAllocs) {
		m := ev.FailedTGAllocs[tg]
		n := 1 + m.CoalescedFailures
		fmt.Fprintf(stdout, "    Task Group %q (failed to place %d allocation%s):\n", tg, n, plural(n))
		for _, line := range placementFailureLines(m) {
			fmt.Fprintf(stdout, "      * %s\n", line)
		}
	}
	if ev.BlockedEval != "" {
		fmt.Fprintf(stdout, "    Evaluation %q waiting for additional capacity to place remainder\n", cf.short(ev.BlockedEval))
	}
	return 2
}

// placementFailureLines explains failed placements as Nomad's CLI does.
func placementFailureLines(m *api.AllocationMetric) []string {
	var out []string
	if m.NodesEvaluated == 0 {
		if m.NodesInPool == 0 {
			out = append(out, fmt.Sprintf("No nodes were eligible for evaluation (node pool %q has no nodes)", m.NodePool))
		} else {
			out = append(out, "No nodes were eligible for evaluation")
		}
	}
	for _, dc := range sortedKeys(m.NodesAvailable) {
		if m.NodesAvailable[dc] == 0 {
			out = append(out, fmt.Sprintf("No nodes are available in datacenter %q", dc))
		}
	}
	for _, c := range sortedKeys(m.ConstraintFiltered) {
		n := m.ConstraintFiltered[c]
		out = append(out, fmt.Sprintf("Constraint %q: %d node%s excluded by filter", c, n, plural(n)))
	}
	for _, d := range sortedKeys(m.DimensionExhausted) {
		n := m.DimensionExhausted[d]
		out = append(out, fmt.Sprintf("Resources exhausted on %d node%s", n, plural(n)))
		out = append(out, fmt.Sprintf("Dimension %q exhausted on %d node%s", d, n, plural(n)))
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func runJobStop(args []string, stdout, stderr io.Writer) int {
	fs, cf := newCommandFlags("job stop", "Usage: drover job stop [-purge] [-detach] JOB", stderr)
	purge := fs.Bool("purge", false, "purge the job from the state store once its allocations are stopped")
	detach := fs.Bool("detach", false, "return after submitting, without following the evaluation")
	id, ok := oneArg(fs, args, "job")
	if !ok {
		return 1
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	if id, err = resolveJobID(c, id); err != nil {
		return errorf(stderr, "deregistering job: %v", err)
	}
	evalID, _, err := c.Jobs().Deregister(id, *purge, nil)
	if err != nil {
		return errorf(stderr, "deregistering job: %v", err)
	}
	if *detach {
		fmt.Fprintln(stdout, evalID)
		return 0
	}
	return monitorEval(c, cf, evalID, stdout, stderr)
}

func runJobStatus(args []string, stdout, stderr io.Writer) int {
	fs, cf := newCommandFlags("job status", "Usage: drover job status [JOB]", stderr)
	if err := fs.Parse(args); err != nil {
		return 1
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	if fs.NArg() == 0 {
		jobs, _, err := c.Jobs().List(nil)
		if err != nil {
			return errorf(stderr, "querying jobs: %v", err)
		}
		printList(stdout, "No running jobs", "ID\tType\tPriority\tStatus\tSubmit Date", len(jobs), func(i int) string {
			j := jobs[i]
			return fmt.Sprintf("%s\t%s\t%d\t%s\t%s", j.ID, j.Type, j.Priority, jobStatusWord(j.Status, j.Stop), formatUnixNano(j.SubmitTime))
		})
		return 0
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 1
	}
	id := fs.Arg(0)
	if id == "" {
		fs.Usage()
		return 1
	}
	id, err = resolveJobID(c, id)
	if err != nil {
		return errorf(stderr, "querying job: %v", err)
	}
	job, _, err := c.Jobs().Info(id, nil)
	if err != nil {
		return errorf(stderr, "querying job %q: %v", id, err)
	}
	sum, _, err := c.Jobs().Summary(id, nil)
	if err != nil {
		return errorf(stderr, "querying job summary: %v", err)
	}
	allocs, _, err := c.Jobs().Allocations(id, true, nil)
	if err != nil {
		return errorf(stderr, "querying job allocations: %v", err)
	}
	kv := newTable(stdout)
	fmt.Fprintf(kv, "ID\t= %s\n", deref(job.ID))
	fmt.Fprintf(kv, "Name\t= %s\n", deref(job.Name))
	fmt.Fprintf(kv, "Submit Date\t= %s\n", formatUnixNano(derefInt64(job.SubmitTime)))
	fmt.Fprintf(kv, "Type\t= %s\n", deref(job.Type))
	fmt.Fprintf(kv, "Priority\t= %d\n", derefInt(job.Priority))
	dcs := strings.Join(job.Datacenters, ",")
	if dcs == "" {
		dcs = "*"
	}
	fmt.Fprintf(kv, "Datacenters\t= %s\n", dcs)
	fmt.Fprintf(kv, "Namespace\t= %s\n", deref(job.Namespace))
	fmt.Fprintf(kv, "Node Pool\t= %s\n", deref(job.NodePool))
	fmt.Fprintf(kv, "Status\t= %s\n", jobStatusWord(deref(job.Status), job.Stop != nil && *job.Stop))
	fmt.Fprintf(kv, "Version\t= %d\n", derefUint64(job.Version))
	kv.Flush()

	fmt.Fprintln(stdout, "\nSummary")
	tw := newTable(stdout)
	fmt.Fprintln(tw, "Task Group\tQueued\tStarting\tRunning\tFailed\tComplete\tLost\tUnknown")
	for _, tg := range sortedKeys(sum.Summary) {
		s := sum.Summary[tg]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", tg, s.Queued, s.Starting, s.Running, s.Failed, s.Complete, s.Lost, s.Unknown)
	}
	tw.Flush()

	if d, _, err := c.Jobs().LatestDeployment(id, nil); err == nil && d != nil {
		fmt.Fprintln(stdout, "\nLatest Deployment")
		dk := newTable(stdout)
		fmt.Fprintf(dk, "ID\t= %s\n", cf.short(d.ID))
		fmt.Fprintf(dk, "Status\t= %s\n", d.Status)
		fmt.Fprintf(dk, "Description\t= %s\n", d.StatusDescription)
		dk.Flush()
	}

	fmt.Fprintln(stdout, "\nAllocations")
	printList(stdout, "No allocations placed", "ID\tNode ID\tTask Group\tVersion\tDesired\tStatus\tCreated\tModified", len(allocs), func(i int) string {
		a := allocs[i]
		return fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s", cf.short(a.ID), cf.short(a.NodeID), a.TaskGroup, a.JobVersion,
			a.DesiredStatus, a.ClientStatus, ago(time.Unix(0, a.CreateTime)), ago(time.Unix(0, a.ModifyTime)))
	})
	return 0
}

// jobStatusWord is Nomad's "dead (stopped)" wording.
func jobStatusWord(status string, stopped bool) string {
	if stopped && status == "dead" {
		return "dead (stopped)"
	}
	return status
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefInt(i *int) int {
	if i == nil {
		return 0
	}
	return *i
}

func derefInt64(i *int64) int64 {
	if i == nil {
		return 0
	}
	return *i
}

func derefUint64(i *uint64) uint64 {
	if i == nil {
		return 0
	}
	return *i
}

// resolveJobID returns id if a job has that exact ID, else the one job
// whose ID starts with it, as Nomad's CLI does.
func resolveJobID(c *api.Client, id string) (string, error) {
	if _, _, err := c.Jobs().Info(id, nil); err == nil {
		return id, nil
	}
	return resolvePrefix(id, "job", func(p string) ([]string, error) {
		stubs, _, err := c.Jobs().PrefixList(p)
		ids := make([]string, 0, len(stubs))
		for _, j := range stubs {
			ids = append(ids, j.ID)
		}
		return ids, err
	})
}
