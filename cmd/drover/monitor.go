package main

import (
	"fmt"
	"time"

	"github.com/hashicorp/nomad/api"
)

// monitorWait is how long each blocking query of a monitor waits for a
// change before asking again.
const monitorWait = 5 * time.Second

// monitor follows an evaluation and then the deployment it created or
// continued, printing what changes in the shape of Nomad's CLI monitor
// (command/monitor.go, and DeploymentStatusCommand's monitor when stdout
// is not a terminal).
type monitor struct {
	m       *Meta
	c       *api.Client
	verbose bool
	// namespace of the evaluation and deployment.
	namespace string
	// noDeployment stops after the evaluation.
	noDeployment bool
}

// newMonitor returns a monitor writing to m's streams.
func newMonitor(m *Meta, c *api.Client, namespace string, verbose bool) *monitor {
	return &monitor{m: m, c: c, namespace: namespace, verbose: verbose}
}

// run follows evalID to its end and then, unless noDeployment, its
// deployment until it succeeds or fails. Exit codes as Nomad's: 0 done (or
// the deployment successful), 1 an error, a failed evaluation or a
// deployment that did not succeed, 2 some allocations could not be placed.
func (mon *monitor) run(evalID string) int {
	ev, code := mon.eval(evalID)
	if ev == nil || code != 0 || mon.noDeployment {
		return code
	}
	depID := mon.deploymentOf(ev)
	if depID == "" {
		return 0
	}
	status, err := mon.deployment(depID)
	if err != nil {
		return mon.m.errorf("monitoring deployment", err)
	}
	if status != api.DeploymentStatusSuccessful {
		return 1
	}
	return 0
}

// eval follows one evaluation (and the next ones in its chain) to a
// terminal status. It returns the last evaluation and 0, 1 (failed or an
// error) or 2 (placement failures).
func (mon *monitor) eval(evalID string) (*api.Evaluation, int) {
	out := mon.m.Stdout
	fmt.Fprintf(out, "==> %s: Monitoring evaluation %q\n", now(), limit(evalID, mon.verbose))
	var lastIndex uint64
	status := ""
	seenAllocs := map[string]string{}
	deploymentShown := false
	for {
		ev, meta, err := mon.c.Evaluations().Info(evalID, &api.QueryOptions{Namespace: mon.namespace, WaitIndex: lastIndex, WaitTime: monitorWait})
		if err != nil {
			return nil, mon.m.errorf("reading evaluation", err)
		}
		lastIndex = meta.LastIndex
		if status == "" {
			fmt.Fprintf(out, "    %s: Evaluation triggered by job %q\n", now(), ev.JobID)
		}
		if ev.DeploymentID != "" && !deploymentShown {
			deploymentShown = true
			fmt.Fprintf(out, "    %s: Evaluation within deployment: %q\n", now(), limit(ev.DeploymentID, mon.verbose))
		}
		allocs, _, err := mon.c.Evaluations().Allocations(evalID, nsQuery(mon.namespace))
		if err != nil {
			return nil, mon.m.errorf("reading evaluation allocations", err)
		}
		for i := len(allocs) - 1; i >= 0; i-- {
			a := allocs[i]
			prev, seen := seenAllocs[a.ID]
			switch {
			case !seen:
				fmt.Fprintf(out, "    %s: Allocation %q created: node %q, group %q\n", now(), limit(a.ID, mon.verbose), limit(a.NodeID, mon.verbose), a.TaskGroup)
			case prev != a.ClientStatus:
				fmt.Fprintf(out, "    %s: Allocation %q status changed: %q -> %q\n", now(), limit(a.ID, mon.verbose), prev, a.ClientStatus)
			}
			seenAllocs[a.ID] = a.ClientStatus
		}
		if ev.Status != status {
			if status != "" {
				fmt.Fprintf(out, "    %s: Evaluation status changed: %q -> %q\n", now(), status, ev.Status)
			}
			status = ev.Status
		}
		switch ev.Status {
		case api.EvalStatusComplete, api.EvalStatusFailed, api.EvalStatusCancelled, api.EvalStatusBlocked:
		default:
			continue
		}
		if ev.NextEval != "" && ev.Status == api.EvalStatusComplete && len(ev.FailedTGAllocs) == 0 && ev.Wait == 0 {
			fmt.Fprintf(out, "==> %s: Evaluation %q finished with status %q\n", now(), limit(ev.ID, mon.verbose), ev.Status)
			return mon.eval(ev.NextEval)
		}
		return ev, mon.evalSummary(ev)
	}
}

// evalSummary prints how an evaluation ended and returns its exit code.
func (mon *monitor) evalSummary(ev *api.Evaluation) int {
	out := mon.m.Stdout
	if len(ev.FailedTGAllocs) == 0 {
		fmt.Fprintf(out, "==> %s: Evaluation %q finished with status %q\n", now(), limit(ev.ID, mon.verbose), ev.Status)
		if ev.Status == api.EvalStatusFailed {
			fmt.Fprintf(out, "    Status description: %s\n", ev.StatusDescription)
			return 1
		}
		return 0
	}
	fmt.Fprintf(out, "==> %s: Evaluation %q finished with status %q but failed to place all allocations:\n", now(), limit(ev.ID, mon.verbose), ev.Status)
	for _, line := range failedPlacementLines(ev.FailedTGAllocs, "  ") {
		fmt.Fprintf(out, "    %s\n", line)
	}
	if ev.BlockedEval != "" {
		fmt.Fprintf(out, "    Evaluation %q waiting for additional capacity to place remainder\n", limit(ev.BlockedEval, mon.verbose))
	}
	return 2
}

// deploymentOf is the deployment an evaluation created or continued: its
// DeploymentID, or else the job's latest deployment if it was created
// after the evaluation (servers that do not fill DeploymentID).
func (mon *monitor) deploymentOf(ev *api.Evaluation) string {
	if ev.DeploymentID != "" {
		return ev.DeploymentID
	}
	if ev.Type == api.JobTypeBatch || ev.JobID == "" {
		return ""
	}
	d, _, err := mon.c.Jobs().LatestDeployment(ev.JobID, nsQuery(mon.namespace))
	if err != nil || d == nil || d.CreateIndex <= ev.CreateIndex {
		return ""
	}
	return d.ID
}

// deployment follows a deployment until it is no longer active, printing
// it each time it changes, and returns its final status. A deployment that
// failed with auto_revert is followed by the rollback's deployment, as
// Nomad does; the status returned is the failed one's.
func (mon *monitor) deployment(id string) (string, error) {
	out := mon.m.Stdout
	fmt.Fprintf(out, "==> %s: Monitoring deployment %q\n", now(), limit(id, mon.verbose))
	q := &api.QueryOptions{Namespace: mon.namespace, WaitTime: monitorWait}
	var printed uint64
	for {
		d, meta, err := mon.c.Deployments().Info(id, q)
		if err != nil {
			return "", err
		}
		q.WaitIndex = meta.LastIndex
		if d.ModifyIndex != printed {
			printed = d.ModifyIndex
			fmt.Fprintf(out, "\n%s\n%s\n", now(), formatDeployment(d, mon.verbose))
		}
		switch d.Status {
		case api.DeploymentStatusRunning, api.DeploymentStatusPaused, api.DeploymentStatusPending,
			"initializing", api.DeploymentStatusUnblocking:
			continue
		}
		fmt.Fprintf(out, "\n==> %s: Deployment %q %s\n", now(), limit(d.ID, mon.verbose), d.Status)
		if d.Status == api.DeploymentStatusFailed && hasAutoRevert(d) {
			mon.followRollback(d)
		}
		return d.Status, nil
	}
}

// followRollback monitors the deployment of the job version a failed
// deployment reverted to, if one appears.
func (mon *monitor) followRollback(failed *api.Deployment) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		d, _, err := mon.c.Jobs().LatestDeployment(failed.JobID, nsQuery(mon.namespace))
		if err == nil && d != nil && d.ID != failed.ID && d.CreateIndex > failed.CreateIndex {
			fmt.Fprintln(mon.m.Stdout)
			_, _ = mon.deployment(d.ID)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func hasAutoRevert(d *api.Deployment) bool {
	for _, g := range d.TaskGroups {
		if g.AutoRevert {
			return true
		}
	}
	return false
}
