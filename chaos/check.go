package chaos

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// The invariants the checker holds a quiet cluster to (design brief §4).
const (
	// InvCapacity: per node, the resources of its allocs that hold
	// resources fit what it offers (invariant 2).
	InvCapacity = "capacity"
	// InvUsage: the usage record each store maintains per node equals the
	// sum over those allocs (no leaked or double-counted capacity).
	InvUsage = "usage-record"
	// InvDuplicate: no placement committed twice: one alloc per ID, in
	// the job's and the node's views alike, and at most one live alloc
	// per name of a job (invariant 3), besides one canary per name of a
	// deployment awaiting promotion.
	InvDuplicate = "duplicate-placement"
	// InvCount: each running job has its count, unless no node has room
	// for the missing allocs (and then a blocked eval waits for room).
	InvCount = "count"
	// InvStopped: a stopped or purged job has no alloc left to run.
	InvStopped = "stopped-job-runs"
	// InvEvalParked: no eval is left pending, nor blocked while a node
	// has room for what it waits to place (invariants 3 and 8).
	InvEvalParked = "eval-parked"
	// InvEarly: no eval ran before its WaitUntil (invariant 4).
	InvEarly = "delay-honoured"
	// InvBatchRerun: finished batch work is never run again: at most one
	// complete alloc per name and job version.
	InvBatchRerun = "batch-rerun"
	// InvReschedule: no alloc was rescheduled more often within its
	// policy's interval than the policy's attempts.
	InvReschedule = "reschedule-attempts"
	// InvDeployment: the job's deployment of its current version has
	// settled: a successful one leaves no alloc of an older version
	// running; a failed one leaves none of its unpromoted canaries
	// running and, with auto_revert, has rolled the job back to its
	// latest stable version; an active one awaits promotion (its
	// canaries placed, when a node has room; not all healthy, when every
	// group auto-promotes) or places what no node has room for yet.
	InvDeployment = "deployment"
	// InvDrain: a node an operator drained (and did not make eligible
	// since) has finished its drain at rest (the deadline passed), stays
	// ineligible, and runs nothing but the system allocs the drain was
	// told to leave; what it ran is replaced elsewhere where a node has
	// room (the count invariant, which only counts eligible nodes' room).
	InvDrain = "drain"
	// InvSystem: a running system job runs exactly one alloc, of its
	// current version, on every ready eligible node that has room for
	// one (and, where a node has none, a blocked eval waits), at most
	// one on any node, and none of an older version on an ineligible
	// node; a sysbatch job has run (or runs) its current version once on
	// each such node, never twice.
	InvSystem = "system"
	// InvDisconnect: at rest (every node back) no alloc is left unknown:
	// each reconnected or was replaced, and one live alloc per name
	// remains (duplicate-placement).
	InvDisconnect = "disconnect"
)

// Invariants lists every invariant the checker holds (summary rows).
var Invariants = []string{InvCapacity, InvUsage, InvDuplicate, InvCount, InvStopped, InvEvalParked, InvEarly,
	InvBatchRerun, InvReschedule, InvDeployment, InvDrain, InvSystem, InvDisconnect}

// Violation is one broken invariant.
type Violation struct {
	Invariant string
	Detail    string
}

func (v Violation) String() string { return v.Invariant + ": " + v.Detail }

// Check reads the quiet state of a run (the store's nodes and usage
// records, the allocs and evals of jobs, live or purged) and the commits
// env observed, and returns every violation found.
func Check(ctx context.Context, st storage.Store, jobIDs []string, env *Env) ([]Violation, error) {
	var out []Violation
	add := func(inv, format string, args ...any) {
		out = append(out, Violation{Invariant: inv, Detail: fmt.Sprintf(format, args...)})
	}
	nodes, err := st.NodesWithUsage(ctx)
	if err != nil {
		return nil, fmt.Errorf("check: nodes: %w", err)
	}
	byJob := map[string][]*structs.Allocation{}
	allocNode := map[string]string{}
	for _, j := range jobIDs {
		as, err := st.AllocsByJob(ctx, "default", j)
		if err != nil {
			return nil, fmt.Errorf("check: allocs of %s: %w", j, err)
		}
		byJob[j] = as
		for _, a := range as {
			if prev, dup := allocNode[a.ID]; dup {
				add(InvDuplicate, "alloc %s listed twice (nodes %s and %s)", a.ID, prev, a.NodeID)
			}
			allocNode[a.ID] = a.NodeID
		}
	}

	drained := env.drainedNodes()
	migrating := map[string][]*structs.Allocation{} // by job: live allocs left on drained nodes to migrate
	// Capacity, usage records, drains, and the node's view of its allocs.
	free := map[string]structs.ComparableResources{}
	for _, u := range nodes {
		n := u.Node
		as, err := st.AllocsByNode(ctx, n.ID)
		if err != nil {
			return nil, fmt.Errorf("check: allocs of node %s: %w", n.ID, err)
		}
		var sum structs.ComparableResources
		held := 0
		seen := map[string]bool{}
		for _, a := range as {
			if seen[a.ID] {
				add(InvDuplicate, "alloc %s listed twice on node %s", a.ID, n.ID)
			}
			seen[a.ID] = true
			if on, ok := allocNode[a.ID]; !ok || on != n.ID {
				add(InvDuplicate, "alloc %s (%s) is on node %s in the node's view, on %q in its job's", a.ID, a.Name, n.ID, on)
			}
			if a.HoldsResources() && a.AllocatedResources != nil {
				sum = sum.Add(a.AllocatedResources.Comparable())
				held++
			}
		}
		if ignoreSystem, ok := drained[n.ID]; ok {
			waiting := 0
			for _, a := range as {
				system := a.Job != nil && a.Job.Type == structs.JobTypeSystem
				switch {
				case !live(a) || (system && ignoreSystem):
				case a.DesiredTransition.ShouldMigrate() && !system:
					// Its replacement found no node: it stays until one
					// has room (the job's check below), as in Nomad.
					waiting++
					migrating[a.JobID] = append(migrating[a.JobID], a)
				default:
					add(InvDrain, "node %s was drained: its alloc %s (%s) still runs (%s)", n.ID, a.ID, a.Name, a.ClientStatus)
				}
			}
			if (n.Drain && waiting == 0) || n.SchedulingEligibility != structs.NodeSchedulingIneligible {
				add(InvDrain, "node %s was drained: at rest its drain is %t, its eligibility %s", n.ID, n.Drain, n.SchedulingEligibility)
			}
		}
		capacity := n.Capacity()
		if ok, dim := capacity.Superset(sum); !ok {
			add(InvCapacity, "node %s over-committed on %s: allocs hold %+v, it offers %+v", n.ID, dim, sum, capacity)
		}
		if u.Used != sum || u.Allocs != held {
			add(InvUsage, "node %s usage record says %+v in %d allocs, its allocs hold %+v in %d", n.ID, u.Used, u.Allocs, sum, held)
		}
		if n.Ready() {
			free[n.ID] = capacity.Sub(sum)
		}
	}
	for _, j := range jobIDs {
		for _, a := range byJob[j] {
			if _, ok := allocNode[a.ID]; ok && a.NodeID != "" {
				found := false
				for _, u := range nodes {
					if u.Node.ID == a.NodeID {
						found = true
					}
				}
				if !found {
					add(InvDuplicate, "alloc %s is on node %s, which does not exist", a.ID, a.NodeID)
				}
			}
		}
	}
	roomFor := func(r structs.ComparableResources) bool {
		for _, f := range free {
			if ok, _ := f.Superset(r); ok {
				return true
			}
		}
		return false
	}

	// Placements committed twice (the plans the observer saw).
	env.obs.mu.Lock()
	for id, n := range env.obs.placements {
		if n > 1 {
			add(InvDuplicate, "alloc %s placed by %d committed plans", id, n)
		}
	}
	for _, e := range env.obs.overCommits {
		add(InvCapacity, "%s", e)
	}
	for _, e := range env.obs.earlyRuns {
		add(InvEarly, "%s", e)
	}
	env.obs.mu.Unlock()

	for _, j := range jobIDs {
		job, err := st.Job(ctx, "default", j)
		if err != nil && !isNotFound(err) {
			return nil, fmt.Errorf("check: job %s: %w", j, err)
		}
		allocs := byJob[j]
		evals, err := st.EvalsByJob(ctx, "default", j)
		if err != nil {
			return nil, fmt.Errorf("check: evals of %s: %w", j, err)
		}
		blocked := false
		for _, e := range evals {
			switch e.Status {
			case structs.EvalStatusPending:
				add(InvEvalParked, "eval %s of %s (%s) still pending at rest (wait-until %s)", e.ID, j, e.TriggeredBy, e.WaitUntil.Format(time.RFC3339))
			case structs.EvalStatusBlocked:
				blocked = true
			}
		}
		var d *structs.Deployment
		if job != nil {
			if cur, err := st.LatestDeployment(ctx, "default", j); err == nil && cur.JobCreateIndex == job.CreateIndex &&
				cur.JobVersion == job.Version {
				d = cur
			} else if err != nil && !isNotFound(err) {
				return nil, fmt.Errorf("check: deployment of %s: %w", j, err)
			}
		}
		canaries := awaitingCanaries(d, allocs)
		rollout := d != nil && (d.Active() || d.Status == structs.DeploymentStatusFailed)
		systemJob := job != nil && (job.Type == structs.JobTypeSystem || job.Type == structs.JobTypeSysBatch)
		checkNames(j, allocs, deploymentCanaries(d, allocs), rollout, d, systemJob, add)
		checkReschedules(j, allocs, add)
		for _, a := range allocs {
			if a.ClientStatus == structs.AllocClientStatusUnknown && !a.ServerTerminalStatus() {
				add(InvDisconnect, "job %s's alloc %s (%s) on node %s is still unknown at rest", j, a.ID, a.Name, a.NodeID)
			}
		}
		if job == nil || job.Stop {
			for _, a := range allocs {
				if a.DesiredStatus == structs.AllocDesiredStatusRun && !a.ClientTerminalStatus() {
					add(InvStopped, "job %s is stopped or purged, its alloc %s (%s) still runs (%s)", j, a.ID, a.Name, a.ClientStatus)
				}
			}
			if blocked {
				add(InvEvalParked, "job %s is stopped or purged and still has a blocked eval", j)
			}
			continue
		}
		tg := job.LookupTaskGroup("g")
		if tg == nil {
			continue
		}
		var need structs.ComparableResources
		for _, t := range tg.Tasks {
			if t.Resources != nil {
				need = need.Add(structs.ComparableResources{CPU: int64(t.Resources.CPU), MemoryMB: int64(t.Resources.MemoryMB)})
			}
		}
		if systemJob {
			checkSystem(job, allocs, nodes, free, need, blocked, add)
			continue
		}
		for _, a := range migrating[j] {
			switch {
			case roomFor(need):
				add(InvDrain, "job %s's alloc %s (%s) stays on drained node %s while a node has room for it", j, a.ID, a.Name, a.NodeID)
			case !blocked:
				add(InvDrain, "job %s's alloc %s (%s) stays on drained node %s (no room) and no blocked eval waits for room", j, a.ID, a.Name, a.NodeID)
			}
		}
		short := missing(job, tg, allocs, canaries)
		held := short
		if d != nil && (d.Status == structs.DeploymentStatusFailed || d.RequiresPromotion()) && short > 0 {
			// A failed deployment, and one awaiting the promotion of its
			// canaries, hold placements back (Nomad's rule): only failed
			// and lost allocs are replaced, which the reschedule checks
			// cover; with auto_revert the rollback's deployment is the
			// job's latest.
			short = 0
		}
		if d != nil {
			if err := checkDeployment(ctx, st, job, tg, d, allocs, canaries, held, roomFor(need), blocked, add); err != nil {
				return nil, err
			}
		}
		switch {
		case short < 0:
			add(InvCount, "job %s runs %d allocs more than its count %d", j, -short, tg.Count)
		case short > 0 && roomFor(need):
			add(InvCount, "job %s lacks %d of its %d allocs while a node has room for one (%+v)", j, short, tg.Count, need)
			if blocked {
				add(InvEvalParked, "job %s has a blocked eval while a node has room for what it waits to place", j)
			}
		case short > 0 && !blocked:
			add(InvCount, "job %s lacks %d of its %d allocs (no room) and has no blocked eval waiting for room", j, short, tg.Count)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Invariant != out[j].Invariant {
			return out[i].Invariant < out[j].Invariant
		}
		return out[i].Detail < out[j].Detail
	})
	return out, nil
}

func isNotFound(err error) bool { return err != nil && errors.Is(err, storage.ErrNotFound) }

// awaitingCanaries are the live canaries of d's groups that await
// promotion (nil when d is not active): they take the names of the allocs
// they are to replace.
func awaitingCanaries(d *structs.Deployment, allocs []*structs.Allocation) map[string]bool {
	if d == nil || !d.Active() {
		return nil
	}
	out := map[string]bool{}
	for _, a := range allocs {
		g := d.TaskGroups[a.TaskGroup]
		if a.DeploymentID == d.ID && a.DeploymentStatus.IsCanary() && g != nil && !g.Promoted && live(a) {
			out[a.ID] = true
		}
	}
	return out
}

// deploymentCanaries are the live canaries of d while it is active, or
// failed after their promotion: each takes the name of an alloc it is to
// replace, which runs until its own replacement is placed (a
// destructive update waits for room, as in Nomad).
func deploymentCanaries(d *structs.Deployment, allocs []*structs.Allocation) map[string]bool {
	if d == nil || !(d.Active() || d.Status == structs.DeploymentStatusFailed) {
		return nil
	}
	out := map[string]bool{}
	for _, a := range allocs {
		g := d.TaskGroups[a.TaskGroup]
		if a.DeploymentID == d.ID && a.DeploymentStatus.IsCanary() && g != nil && (d.Active() || g.Promoted) && live(a) {
			out[a.ID] = true
		}
	}
	return out
}

// live reports whether an alloc is wanted and not finished.
func live(a *structs.Allocation) bool {
	return a.DesiredStatus == structs.AllocDesiredStatusRun && !a.ClientTerminalStatus()
}

// checkDeployment holds the job's deployment d of its current version to
// InvDeployment; short is how many allocs the group lacks (canaries
// awaiting promotion not counted), room whether a node has room for one.
func checkDeployment(ctx context.Context, st storage.Store, job *structs.Job, tg *structs.TaskGroup, d *structs.Deployment,
	allocs []*structs.Allocation, canaries map[string]bool, short int, room, blocked bool, add func(inv, format string, args ...any)) error {
	g := d.TaskGroups[tg.Name]
	if g == nil {
		return nil
	}
	switch {
	case d.Status == structs.DeploymentStatusSuccessful:
		for _, a := range allocs {
			if live(a) && a.TaskGroup == tg.Name && a.JobVersion != job.Version {
				add(InvDeployment, "job %s's deployment %s of version %d succeeded, its alloc %s (%s) of version %d still runs",
					job.ID, d.ID, d.JobVersion, a.ID, a.Name, a.JobVersion)
			}
		}
	case d.Status == structs.DeploymentStatusFailed:
		for _, a := range allocs {
			if live(a) && a.DeploymentID == d.ID && a.DeploymentStatus.IsCanary() && !g.Promoted {
				add(InvDeployment, "job %s's deployment %s failed, its canary %s (%s) still runs", job.ID, d.ID, a.ID, a.Name)
			}
		}
		if !g.AutoRevert {
			return nil
		}
		versions, err := st.JobVersions(ctx, job.Namespace, job.ID)
		if err != nil {
			return fmt.Errorf("check: versions of %s: %w", job.ID, err)
		}
		for _, v := range structs.CurrentIncarnation(versions, job) {
			if v.Version < d.JobVersion && v.Stable && !v.Stop {
				add(InvDeployment, "job %s's deployment %s of version %d failed with auto_revert, the job was not rolled back to its stable version %d",
					job.ID, d.ID, d.JobVersion, v.Version)
				break
			}
		}
	case d.Active() && d.RequiresPromotion():
		if g.DesiredCanaries == 0 || g.Promoted {
			return nil
		}
		n, healthy, older := 0, 0, 0
		for _, a := range allocs {
			switch {
			case canaries[a.ID] && a.TaskGroup == tg.Name:
				n++
				if a.DeploymentStatus.IsHealthy() {
					healthy++
				}
			case live(a) && a.TaskGroup == tg.Name && a.JobVersion != job.Version:
				older++
			}
		}
		if n < g.DesiredCanaries && older == 0 {
			// Nothing left for canaries to replace (the older allocs were
			// lost or stopped meanwhile): the reconciler places no
			// canary, and holds every other placement back until the
			// deployment is promoted or fails, as Nomad 1.6's does (its
			// progress deadline fails it; none is generated).
			return nil
		}
		switch {
		case n < g.DesiredCanaries && room:
			add(InvDeployment, "job %s's deployment %s runs %d of its %d canaries while a node has room for one", job.ID, d.ID, n, g.DesiredCanaries)
		case n < g.DesiredCanaries && !blocked:
			add(InvDeployment, "job %s's deployment %s runs %d of its %d canaries (no room) and has no blocked eval waiting for room",
				job.ID, d.ID, n, g.DesiredCanaries)
		case n > g.DesiredCanaries:
			add(InvDeployment, "job %s's deployment %s runs %d canaries, it wants %d", job.ID, d.ID, n, g.DesiredCanaries)
		case healthy == g.DesiredCanaries && d.HasAutoPromote():
			add(InvDeployment, "job %s's deployment %s auto-promotes and its %d canaries are healthy: it was not promoted", job.ID, d.ID, healthy)
		}
	case d.Active() && short == 0 && g.HealthyAllocs >= g.DesiredTotal && !blocked:
		// (A deployment whose placements outnumbered the count, as when
		// more failed allocs were rescheduled than a scale-down kept,
		// waits for a healthy alloc it will never get: with no progress
		// deadline it stays running, as in Nomad. One whose job waits
		// for room, as a migration off a drained node does, is not
		// complete either.)
		add(InvDeployment, "job %s's deployment %s counts %d of %d allocs healthy and is left %s at rest", job.ID, d.ID,
			g.HealthyAllocs, g.DesiredTotal, d.Status)
	}
	// The deployment's counters are its allocs' (placed: those placed in
	// it or updated in place into it, as in Nomad).
	placed, healthy, unhealthy := 0, 0, 0
	for _, a := range allocs {
		if a.DeploymentID != d.ID || a.TaskGroup != tg.Name {
			continue
		}
		placed++
		switch {
		case a.DeploymentStatus.IsHealthy():
			healthy++
		case a.DeploymentStatus.IsUnhealthy():
			unhealthy++
		}
	}
	if placed != g.PlacedAllocs || healthy != g.HealthyAllocs || unhealthy != g.UnhealthyAllocs {
		add(InvDeployment, "job %s's deployment %s (%s) counts %d placed, %d healthy, %d unhealthy allocs; its allocs are %d, %d, %d",
			job.ID, d.ID, d.Status, g.PlacedAllocs, g.HealthyAllocs, g.UnhealthyAllocs, placed, healthy, unhealthy)
	}
	return nil
}

// checkNames: one live alloc per name (no duplicate placement), and for
// a batch job at most one complete alloc per name and job version. While
// a rollout is under way or held (rollout: the deployment d of the job's
// version is active, or failed), the allocs of older versions still to
// be replaced share names with what replaces them (canaries, and allocs
// that took over their names from an earlier deployment's promoted
// canaries), as in Nomad: the names are then held unique within the
// deployment's canaries, within the current version's other allocs, and
// within the older ones.
func checkNames(j string, allocs []*structs.Allocation, canaries map[string]bool, rollout bool, d *structs.Deployment, system bool,
	add func(inv, format string, args ...any)) {
	// A system job's allocs share their name across nodes: one per node
	// and name (also those of a purged system incarnation, beside a job
	// of another type registered under its ID).
	keyed := make([]*structs.Allocation, len(allocs))
	for i, a := range allocs {
		keyed[i] = a
		if system || (a.Job != nil && (a.Job.Type == structs.JobTypeSystem || a.Job.Type == structs.JobTypeSysBatch)) {
			c := *a
			c.Name = a.NodeID + "/" + a.Name
			keyed[i] = &c
		}
	}
	allocs = keyed
	if system {
		rollout = false
	}
	live := map[string][]string{}
	older := map[string][]string{}
	canary := map[string][]string{}
	done := map[string][]string{}
	for _, a := range allocs {
		switch {
		case canaries[a.ID]:
			canary[a.Name] = append(canary[a.Name], a.ID)
		case a.DesiredStatus != structs.AllocDesiredStatusRun || a.ClientTerminalStatus():
		case rollout && a.JobVersion != d.JobVersion && a.DeploymentStatus.IsCanary():
			// A promoted canary of a cancelled deployment, beside the
			// alloc it was to replace.
		case rollout && a.JobVersion != d.JobVersion:
			older[a.Name] = append(older[a.Name], a.ID)
		default:
			live[a.Name] = append(live[a.Name], a.ID)
		}
		if a.Job != nil && a.Job.Type == structs.JobTypeBatch && a.ClientStatus == structs.AllocClientStatusComplete &&
			a.DesiredStatus == structs.AllocDesiredStatusRun {
			k := fmt.Sprintf("%s v%d", a.Name, a.JobVersion)
			done[k] = append(done[k], a.ID)
		}
	}
	for name, ids := range live {
		if len(ids) > 1 {
			sort.Strings(ids)
			add(InvDuplicate, "job %s has %d live allocs named %s: %v", j, len(ids), name, ids)
		}
	}
	for name, ids := range canary {
		if len(ids) > 1 {
			sort.Strings(ids)
			add(InvDuplicate, "job %s has %d canaries named %s: %v", j, len(ids), name, ids)
		}
	}
	for name, ids := range older {
		if len(ids) > 1 {
			sort.Strings(ids)
			add(InvDuplicate, "job %s has %d live allocs of older versions named %s: %v", j, len(ids), name, ids)
		}
	}
	for k, ids := range done {
		if len(ids) > 1 {
			sort.Strings(ids)
			add(InvBatchRerun, "job %s ran %s to completion %d times: %v", j, k, len(ids), ids)
		}
	}
}

// checkReschedules holds each alloc's reschedule tracker to its group's
// policy: within any Interval, at most Attempts reschedules.
func checkReschedules(j string, allocs []*structs.Allocation, add func(inv, format string, args ...any)) {
	for _, a := range allocs {
		if a.RescheduleTracker == nil || a.Job == nil {
			continue
		}
		tg := a.Job.LookupTaskGroup(a.TaskGroup)
		if tg == nil || tg.ReschedulePolicy == nil || tg.ReschedulePolicy.Unlimited {
			continue
		}
		p := tg.ReschedulePolicy
		ev := a.RescheduleTracker.Events
		for i := range ev {
			n := 0
			for k := 0; k <= i; k++ {
				if ev[k] != nil && ev[i] != nil && ev[i].RescheduleTime-ev[k].RescheduleTime < p.Interval.Nanoseconds() {
					n++
				}
			}
			if n > p.Attempts {
				add(InvReschedule, "alloc %s (%s) of job %s was rescheduled %d times within %s; its policy allows %d",
					a.ID, a.Name, j, n, p.Interval, p.Attempts)
				break
			}
		}
	}
}

// missing is how many allocs the job's group lacks (negative: how many
// too many run). Names are not held to the count: an alloc keeps its name
// across a scale-down, as in Nomad. A service group counts its live
// allocs. A batch group counts the names that have a live alloc, a
// completed one of the current version, or a failed one its policy no
// longer reschedules. Canaries awaiting promotion are not counted: the
// allocs they are to replace still run.
func missing(job *structs.Job, tg *structs.TaskGroup, allocs []*structs.Allocation, canaries map[string]bool) int {
	live := 0
	satisfied := map[string]bool{}
	for _, a := range allocs {
		if a.TaskGroup == tg.Name && job.Type == structs.JobTypeBatch && a.DesiredStatus == structs.AllocDesiredStatusStop &&
			a.ClientStatus == structs.AllocClientStatusComplete && a.JobVersion == job.Version && a.RanSuccessfully() {
			// Stopped by the server (a drain's migration, also when its
			// replacement finds no node) after its tasks ended without
			// failing: the reconciler counts its work as done, as Nomad's
			// does.
			satisfied[a.Name] = true
			continue
		}
		if a.TaskGroup != tg.Name || a.DesiredStatus != structs.AllocDesiredStatusRun || canaries[a.ID] {
			continue
		}
		switch {
		case !a.ClientTerminalStatus():
			live++
			satisfied[a.Name] = true
		case job.Type != structs.JobTypeBatch:
		case a.ClientStatus == structs.AllocClientStatusComplete && a.JobVersion == job.Version:
			satisfied[a.Name] = true
		case a.ClientStatus == structs.AllocClientStatusFailed && a.NextAllocation == "" && exhausted(a, tg):
			satisfied[a.Name] = true
		}
	}
	if live > tg.Count {
		return tg.Count - live
	}
	if job.Type != structs.JobTypeBatch {
		return tg.Count - live
	}
	return max(tg.Count-len(satisfied), 0)
}

// exhausted reports whether a failed alloc's policy allows no more
// reschedules (its tracker already holds Attempts events within Interval).
func exhausted(a *structs.Allocation, tg *structs.TaskGroup) bool {
	p := tg.ReschedulePolicy
	if p == nil || (!p.Unlimited && p.Attempts == 0) {
		return true
	}
	if p.Unlimited || a.RescheduleTracker == nil {
		return false
	}
	last := lastEvent(a)
	n := 0
	for _, e := range a.RescheduleTracker.Events {
		if e != nil && last-e.RescheduleTime < p.Interval.Nanoseconds() {
			n++
		}
	}
	return n >= p.Attempts
}

// checkSystem holds a running system or sysbatch job to InvSystem.
func checkSystem(job *structs.Job, allocs []*structs.Allocation, nodes []*storage.NodeUsage, free map[string]structs.ComparableResources,
	need structs.ComparableResources, blocked bool, add func(inv, format string, args ...any)) {
	sysbatch := job.Type == structs.JobTypeSysBatch
	for _, u := range nodes {
		n := u.Node
		var liveOn, ran []*structs.Allocation
		for _, a := range allocs {
			if a.NodeID != n.ID {
				continue
			}
			switch {
			case live(a):
				liveOn = append(liveOn, a)
			case sysbatch && a.JobVersion == job.Version:
				// Any alloc of the current version that ended, or was
				// stopped or lost, is not placed again while the job is
				// unchanged (Nomad's system scheduler leaves terminal
				// sysbatch allocs alone).
				ran = append(ran, a)
			}
		}
		// Nomad's system scheduler places the group's count on each node
		// (names g[0]..g[count-1]; checkNames holds them unique per node).
		count := job.TaskGroups[0].Count
		if len(liveOn) > count {
			add(InvSystem, "system job %s runs %d allocs on node %s, its count is %d", job.ID, len(liveOn), n.ID, count)
		}
		if sysbatch {
			runs := map[string]int{} // by name: complete or running allocs of the current version
			for _, a := range ran {
				if a.ClientStatus == structs.AllocClientStatusComplete {
					runs[a.Name]++
				}
			}
			for _, a := range liveOn {
				if a.JobVersion == job.Version {
					runs[a.Name]++
				}
			}
			for name, k := range runs {
				if k > 1 {
					add(InvSystem, "sysbatch job %s ran %s of version %d on node %s %d times", job.ID, name, job.Version, n.ID, k)
				}
			}
		}
		if !n.Ready() {
			for _, a := range liveOn {
				if !n.Drain && a.JobVersion != job.Version {
					add(InvSystem, "system job %s's alloc %s of version %d still runs on ineligible node %s (the job is at version %d)",
						job.ID, a.ID, a.JobVersion, n.ID, job.Version)
				}
			}
			continue
		}
		for _, a := range liveOn {
			if a.JobVersion != job.Version {
				add(InvSystem, "system job %s's alloc %s on node %s is of version %d, the job's is %d", job.ID, a.ID, n.ID, a.JobVersion, job.Version)
			}
		}
		if len(liveOn)+len(ran) >= count {
			continue
		}
		if ok, _ := free[n.ID].Superset(need); ok {
			add(InvSystem, "system job %s runs %d of its %d allocs on ready node %s, which has room (%+v free)", job.ID, len(liveOn)+len(ran), count, n.ID, free[n.ID])
		} else if !blocked {
			add(InvSystem, "system job %s runs %d of its %d allocs on ready node %s (no room) and no blocked eval waits", job.ID, len(liveOn)+len(ran), count, n.ID)
		}
	}
}

func lastEvent(a *structs.Allocation) int64 {
	var t int64
	for _, ts := range a.TaskStates {
		if ts != nil && ts.FinishedAt.UnixNano() > t {
			t = ts.FinishedAt.UnixNano()
		}
	}
	return t
}
