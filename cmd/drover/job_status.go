package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// JobStatusCommand is `drover job status`: every job, or one job's
// summary, latest deployment and allocations.
type JobStatusCommand struct{ Meta }

func (c *JobStatusCommand) Synopsis() string { return "Lists jobs, or shows one job" }

func (c *JobStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job status [options] [job]

  Without an argument, lists the jobs (of every namespace with -namespace
  '*', with a Namespace column). With a job ID or unique prefix, shows the
  job, its summary per task group, its latest deployment and allocations.
` + clientOptionsUsage() + `

Status Options:

  -verbose
    Show full IDs.
` + outputOptionsUsage)
}

func (c *JobStatusCommand) Run(args []string) int {
	fs := c.FlagSet("job status", c.Help, flagSetClient)
	verbose := fs.Bool("verbose", false, "")
	out := addOutputFlags(fs)
	cl, id, ok := c.listOrShow(fs, args, "[job]")
	if !ok {
		return 1
	}
	if id == "" {
		jobs, _, err := cl.Jobs().List(nsQuery(c.Namespace()))
		if err != nil {
			return c.errorf("querying jobs", err)
		}
		if out.wanted() {
			return out.write(&c.Meta, jobs)
		}
		printNamespacedList(c.Stdout, "No running jobs", "ID\tType\tPriority\tStatus\tSubmit Date", len(jobs),
			func(i int) string { return jobs[i].Namespace },
			func(i int) string {
				j := jobs[i]
				return fmt.Sprintf("%s\t%s\t%d\t%s\t%s", j.ID, j.Type, j.Priority, jobStatusWord(j.Status, j.Stop), formatUnixNano(j.SubmitTime))
			})
		return 0
	}
	id, ns, err := c.jobByPrefix(cl, id)
	if err != nil {
		return c.errorf("querying job", err)
	}
	q := nsQuery(ns)
	job, _, err := cl.Jobs().Info(id, q)
	if err != nil {
		return c.errorf(fmt.Sprintf("querying job %q", id), err)
	}
	if out.wanted() {
		return out.write(&c.Meta, job)
	}
	sum, _, err := cl.Jobs().Summary(id, q)
	if err != nil {
		return c.errorf("querying job summary", err)
	}
	allocs, _, err := cl.Jobs().Allocations(id, true, q)
	if err != nil {
		return c.errorf("querying job allocations", err)
	}
	dcs := strings.Join(job.Datacenters, ",")
	if dcs == "" {
		dcs = "*"
	}
	var k kv
	k.add("ID", deref(job.ID)).add("Name", deref(job.Name)).add("Submit Date", formatUnixNano(deref(job.SubmitTime))).
		add("Type", deref(job.Type)).add("Priority", deref(job.Priority)).add("Datacenters", dcs).
		add("Namespace", deref(job.Namespace)).add("Node Pool", deref(job.NodePool)).
		add("Status", jobStatusWord(deref(job.Status), deref(job.Stop))).add("Version", deref(job.Version))
	periodic, param := job.IsPeriodic(), job.IsParameterized()
	if periodic || param {
		// Nomad prints these for every job; drover only for parents, so
		// that other jobs' output keeps its shape.
		k.add("Periodic", periodic).add("Parameterized", param)
	}
	if periodic && !deref(job.Stop) {
		if next, err := job.Periodic.Next(time.Now().In(periodicLocation(job.Periodic))); err == nil && !next.IsZero() {
			k.add("Next Periodic Launch", fmt.Sprintf("%s (%s from now)", next.UTC().Format(time.RFC3339), time.Until(next).Round(time.Second)))
		}
	}
	k.write(c.Stdout)
	if periodic || param {
		return c.printChildren(cl, job, sum, q)
	}

	fmt.Fprintln(c.Stdout, "\nSummary")
	groups := sortedKeys(sum.Summary)
	printList(c.Stdout, "No task groups", "Task Group\tQueued\tStarting\tRunning\tFailed\tComplete\tLost\tUnknown", len(groups), func(i int) string {
		tg := groups[i]
		s := sum.Summary[tg]
		return fmt.Sprintf("%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d", tg, s.Queued, s.Starting, s.Running, s.Failed, s.Complete, s.Lost, s.Unknown)
	})

	if d, _, err := cl.Jobs().LatestDeployment(id, q); err == nil && d != nil {
		fmt.Fprintln(c.Stdout, "\nLatest Deployment")
		var dk kv
		dk.add("ID", limit(d.ID, *verbose)).add("Status", d.Status).add("Description", d.StatusDescription)
		dk.write(c.Stdout)
	}

	fmt.Fprintln(c.Stdout, "\nAllocations")
	printAllocStubs(c.Stdout, allocs, "ID\tNode ID\tTask Group\tVersion\tDesired\tStatus\tCreated\tModified", func(a *api.AllocationListStub) string {
		return fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s", limit(a.ID, *verbose), limit(a.NodeID, *verbose), a.TaskGroup, a.JobVersion,
			a.DesiredStatus, a.ClientStatus, agoUnixNano(a.CreateTime), agoUnixNano(a.ModifyTime))
	})
	return 0
}

// printAllocStubs prints allocations as a table (Namespace column when
// they span namespaces), or "No allocations placed".
func printAllocStubs(w io.Writer, allocs []*api.AllocationListStub, header string, row func(*api.AllocationListStub) string) {
	printNamespacedList(w, "No allocations placed", header, len(allocs),
		func(i int) string { return allocs[i].Namespace },
		func(i int) string { return row(allocs[i]) })
}

// jobStatusWord is Nomad's "dead (stopped)" wording.
func jobStatusWord(status string, stopped bool) string {
	if stopped && status == "dead" {
		return "dead (stopped)"
	}
	return status
}

// periodicLocation is the periodic block's time zone (UTC when it names
// none or one that does not load).
func periodicLocation(p *api.PeriodicConfig) *time.Location {
	if loc, err := p.GetLocation(); err == nil {
		return loc
	}
	return time.UTC
}

// printChildren prints a periodic or parameterized job's children, as
// Nomad's job status: their summary and the children themselves.
func (c *JobStatusCommand) printChildren(cl *api.Client, job *api.Job, sum *api.JobSummary, q *api.QueryOptions) int {
	ch := sum.Children
	if ch == nil {
		ch = &api.JobChildrenSummary{}
	}
	fmt.Fprintln(c.Stdout, "\nChildren Job Summary")
	printList(c.Stdout, "", "Pending\tRunning\tDead", 1, func(int) string {
		return fmt.Sprintf("%d\t%d\t%d", ch.Pending, ch.Running, ch.Dead)
	})
	kids, _, err := cl.Jobs().List(&api.QueryOptions{Prefix: deref(job.ID) + "/", Namespace: q.Namespace})
	if err != nil {
		return c.errorf("querying child jobs", err)
	}
	var mine []*api.JobListStub
	for _, k := range kids {
		if k.ParentID == deref(job.ID) {
			mine = append(mine, k)
		}
	}
	title := "Dispatched Jobs"
	if job.IsPeriodic() {
		title = "Previously Launched Jobs"
	}
	fmt.Fprintln(c.Stdout, "\n"+title)
	printList(c.Stdout, "No instances of the job", "ID\tStatus", len(mine), func(i int) string {
		return fmt.Sprintf("%s\t%s", mine[i].ID, mine[i].Status)
	})
	return 0
}
