package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// resolveDeployment turns an ID prefix into a deployment.
func resolveDeployment(c *api.Client, prefix string) (*api.Deployment, error) {
	full, err := resolvePrefix(prefix, "deployment", func(p string) ([]string, error) {
		ds, _, err := c.Deployments().PrefixList(p)
		ids := make([]string, 0, len(ds))
		for _, d := range ds {
			ids = append(ids, d.ID)
		}
		return ids, err
	})
	if err != nil {
		return nil, err
	}
	d, _, err := c.Deployments().Info(full, nil)
	return d, err
}

func runDeploymentStatus(args []string, stdout, stderr io.Writer) int {
	fs, cf := newCommandFlags("deployment status", "Usage: drover deployment status [DEPLOYMENT]", stderr)
	if err := fs.Parse(args); err != nil {
		return 1
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	if fs.NArg() == 0 {
		ds, _, err := c.Deployments().List(nil)
		if err != nil {
			return errorf(stderr, "querying deployments: %v", err)
		}
		printList(stdout, "No deployments found", "ID\tJob ID\tJob Version\tStatus\tDescription", len(ds), func(i int) string {
			d := ds[i]
			return fmt.Sprintf("%s\t%s\t%d\t%s\t%s", cf.short(d.ID), d.JobID, d.JobVersion, d.Status, d.StatusDescription)
		})
		return 0
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 1
	}
	d, err := resolveDeployment(c, fs.Arg(0))
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	printDeployment(stdout, cf, d)
	return 0
}

func printDeployment(w io.Writer, cf *clientFlags, d *api.Deployment) {
	kv := newTable(w)
	fmt.Fprintf(kv, "ID\t= %s\n", cf.short(d.ID))
	fmt.Fprintf(kv, "Job ID\t= %s\n", d.JobID)
	fmt.Fprintf(kv, "Job Version\t= %d\n", d.JobVersion)
	fmt.Fprintf(kv, "Status\t= %s\n", d.Status)
	fmt.Fprintf(kv, "Description\t= %s\n", d.StatusDescription)
	kv.Flush()
	fmt.Fprintln(w, "\nDeployed")
	tw := newTable(w)
	canaries := false
	for _, g := range d.TaskGroups {
		canaries = canaries || g.DesiredCanaries > 0
	}
	if canaries {
		fmt.Fprintln(tw, "Task Group\tPromoted\tDesired\tCanaries\tPlaced\tHealthy\tUnhealthy\tProgress Deadline")
	} else {
		fmt.Fprintln(tw, "Task Group\tDesired\tPlaced\tHealthy\tUnhealthy\tProgress Deadline")
	}
	for _, name := range sortedKeys(d.TaskGroups) {
		g := d.TaskGroups[name]
		deadline := "N/A"
		if !g.RequireProgressBy.IsZero() {
			deadline = formatTime(g.RequireProgressBy)
		}
		if canaries {
			fmt.Fprintf(tw, "%s\t%t\t%d\t%d\t%d\t%d\t%d\t%s\n", name, g.Promoted, g.DesiredTotal, g.DesiredCanaries,
				g.PlacedAllocs, g.HealthyAllocs, g.UnhealthyAllocs, deadline)
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", name, g.DesiredTotal, g.PlacedAllocs, g.HealthyAllocs, g.UnhealthyAllocs, deadline)
		}
	}
	tw.Flush()
}

// deploymentAction runs promote / fail / pause / resume on a deployment
// (or, with -job, the job's latest deployment).
func deploymentAction(name string, args []string, stdout, stderr io.Writer,
	act func(c *api.Client, d *api.Deployment, groups []string) (*api.DeploymentUpdateResponse, error)) int {
	fs := flag.NewFlagSet("deployment "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	var groups multiFlag
	if name == "promote" {
		fs.Var(&groups, "group", "task group to promote (repeatable; default: all)")
	}
	detach := fs.Bool("detach", false, "return without following the evaluation")
	fs.Usage = func() { fmt.Fprintf(stderr, "Usage: drover deployment %s DEPLOYMENT\n", name); fs.PrintDefaults() }
	id, ok := oneArg(fs, args, "deployment")
	if !ok {
		return 1
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	d, err := resolveDeployment(c, id)
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	resp, err := act(c, d, groups)
	if err != nil {
		return errorf(stderr, "%s deployment %q: %v", name, cf.short(d.ID), err)
	}
	fmt.Fprintf(stdout, "Deployment %q %s\n", cf.short(d.ID), map[string]string{
		"promote": "promoted", "fail": "failed", "pause": "paused", "resume": "resumed"}[name])
	if resp.EvalID == "" || *detach {
		return 0
	}
	return monitorEval(c, cf, resp.EvalID, stdout, stderr)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runDeploymentPromote(args []string, stdout, stderr io.Writer) int {
	return deploymentAction("promote", args, stdout, stderr, func(c *api.Client, d *api.Deployment, groups []string) (*api.DeploymentUpdateResponse, error) {
		if len(groups) > 0 {
			r, _, err := c.Deployments().PromoteGroups(d.ID, groups, nil)
			return r, err
		}
		r, _, err := c.Deployments().PromoteAll(d.ID, nil)
		return r, err
	})
}

func runDeploymentFail(args []string, stdout, stderr io.Writer) int {
	return deploymentAction("fail", args, stdout, stderr, func(c *api.Client, d *api.Deployment, _ []string) (*api.DeploymentUpdateResponse, error) {
		r, _, err := c.Deployments().Fail(d.ID, nil)
		return r, err
	})
}

func runDeploymentPause(args []string, stdout, stderr io.Writer) int {
	return deploymentAction("pause", args, stdout, stderr, func(c *api.Client, d *api.Deployment, _ []string) (*api.DeploymentUpdateResponse, error) {
		r, _, err := c.Deployments().Pause(d.ID, true, nil)
		return r, err
	})
}

func runDeploymentResume(args []string, stdout, stderr io.Writer) int {
	return deploymentAction("resume", args, stdout, stderr, func(c *api.Client, d *api.Deployment, _ []string) (*api.DeploymentUpdateResponse, error) {
		r, _, err := c.Deployments().Pause(d.ID, false, nil)
		return r, err
	})
}

func runJobHistory(args []string, stdout, stderr io.Writer) int {
	fs, cf := newCommandFlags("job history", "Usage: drover job history JOB", stderr)
	id, ok := oneArg(fs, args, "job")
	if !ok {
		return 1
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	if id, err = resolveJobID(c, id); err != nil {
		return errorf(stderr, "querying job versions: %v", err)
	}
	versions, _, _, err := c.Jobs().Versions(id, false, nil)
	if err != nil {
		return errorf(stderr, "querying job versions: %v", err)
	}
	for i, v := range versions {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		kv := newTable(stdout)
		fmt.Fprintf(kv, "Version\t= %d\n", derefUint64(v.Version))
		fmt.Fprintf(kv, "Stable\t= %t\n", v.Stable != nil && *v.Stable)
		fmt.Fprintf(kv, "Submit Date\t= %s\n", formatUnixNano(derefInt64(v.SubmitTime)))
		if v.Stop != nil && *v.Stop {
			fmt.Fprintf(kv, "Stopped\t= true\n")
		}
		kv.Flush()
	}
	return 0
}

func runJobRevert(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("job revert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	detach := fs.Bool("detach", false, "return without following the evaluation")
	fs.Usage = func() { fmt.Fprintln(stderr, "Usage: drover job revert JOB VERSION"); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return 1
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return 1
	}
	version, err := strconv.ParseUint(fs.Arg(1), 10, 64)
	if err != nil {
		fmt.Fprintf(stderr, "Job version %q is not a version number (see `drover job history`)\n", fs.Arg(1))
		return 1
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	id, err := resolveJobID(c, fs.Arg(0))
	if err != nil {
		return errorf(stderr, "reverting job: %v", err)
	}
	resp, _, err := c.Jobs().Revert(id, version, nil, nil, "", "")
	if err != nil {
		return errorf(stderr, "reverting job: %v", err)
	}
	if *detach {
		fmt.Fprintln(stdout, resp.EvalID)
		return 0
	}
	return monitorEval(c, cf, resp.EvalID, stdout, stderr)
}

func runNodeDrain(args []string, stdout, stderr io.Writer) int {
	fs, cf := newCommandFlags("node drain", "Usage: drover node drain -enable|-disable [-deadline D] NODE", stderr)
	enable := fs.Bool("enable", false, "start draining the node")
	disable := fs.Bool("disable", false, "stop draining the node")
	deadline := fs.Duration("deadline", time.Hour, "force the remaining allocations off after this long")
	force := fs.Bool("force", false, "force every allocation off now, ignoring migrate max_parallel")
	noDeadline := fs.Bool("no-deadline", false, "drain without a deadline: allocations move only as migrate allows")
	ignoreSystem := fs.Bool("ignore-system", false, "leave system jobs running (drover has none yet)")
	fs.Bool("yes", false, "do not ask for confirmation (drover never asks; accepted for Nomad's scripts)")
	keepIneligible := fs.Bool("keep-ineligible", false, "with -disable: keep the node ineligible")
	id, ok := oneArg(fs, args, "node")
	if !ok {
		return 1
	}
	if *enable == *disable {
		fmt.Fprintln(stderr, "Give exactly one of -enable and -disable")
		fs.Usage()
		return 1
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	var spec *api.DrainSpec
	if *enable {
		// Nomad's encoding: a negative deadline forces, 0 means none.
		deadlineSet := false
		fs.Visit(func(f *flag.Flag) { deadlineSet = deadlineSet || f.Name == "deadline" })
		if (*force && *noDeadline) || (*force && deadlineSet) || (*noDeadline && deadlineSet) {
			fmt.Fprintln(stderr, "Give at most one of -deadline, -force and -no-deadline")
			return 1
		}
		d := *deadline
		switch {
		case *force:
			d = -1
		case *noDeadline:
			d = 0
		case d <= 0:
			fmt.Fprintln(stderr, "-deadline must be positive (use -force to move everything now, -no-deadline for none)")
			return 1
		}
		spec = &api.DrainSpec{Deadline: d, IgnoreSystemJobs: *ignoreSystem}
	}
	if _, err := c.Nodes().UpdateDrain(id, spec, *disable && !*keepIneligible, nil); err != nil {
		return errorf(stderr, "updating drain: %v", err)
	}
	if *enable {
		fmt.Fprintf(stdout, "Node %q drain strategy set\n", id)
	} else {
		fmt.Fprintf(stdout, "Node %q drain strategy unset\n", id)
	}
	return 0
}

func runNodeEligibility(args []string, stdout, stderr io.Writer) int {
	fs, cf := newCommandFlags("node eligibility", "Usage: drover node eligibility -enable|-disable NODE", stderr)
	enable := fs.Bool("enable", false, "mark the node eligible for new placements")
	disable := fs.Bool("disable", false, "mark the node ineligible for new placements")
	id, ok := oneArg(fs, args, "node")
	if !ok {
		return 1
	}
	if *enable == *disable {
		fmt.Fprintln(stderr, "Give exactly one of -enable and -disable")
		fs.Usage()
		return 1
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	if _, err := c.Nodes().ToggleEligibility(id, *enable, nil); err != nil {
		return errorf(stderr, "updating eligibility: %v", err)
	}
	state := "eligible"
	if *disable {
		state = "ineligible"
	}
	fmt.Fprintf(stdout, "Node %q scheduling eligibility set: %s for scheduling\n", id, state)
	return 0
}

func runSystemGC(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("system gc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 1
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	if err := c.System().GarbageCollect(); err != nil {
		return errorf(stderr, "running garbage collection: %v", err)
	}
	fmt.Fprintln(stdout, "Garbage collection complete")
	return 0
}
