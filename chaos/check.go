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
	// per name of a job (invariant 3; no canaries are generated).
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
)

// Invariants lists every invariant the checker holds (summary rows).
var Invariants = []string{InvCapacity, InvUsage, InvDuplicate, InvCount, InvStopped, InvEvalParked, InvEarly,
	InvBatchRerun, InvReschedule}

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

	// Capacity, usage records, and the node's view of its allocs.
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
		checkNames(j, allocs, add)
		checkReschedules(j, allocs, add)
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
		short := missing(job, tg, allocs)
		if d, err := st.LatestDeployment(ctx, "default", j); err == nil && d.JobCreateIndex == job.CreateIndex &&
			d.JobVersion == job.Version && d.Status == structs.DeploymentStatusFailed && short > 0 {
			// A failed deployment holds placements back (Nomad's rule; no
			// auto-revert is generated): only failed and lost allocs are
			// replaced, which the reschedule checks cover.
			short = 0
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

// checkNames: one live alloc per name (no duplicate placement), and for a
// batch job at most one complete alloc per name and job version.
func checkNames(j string, allocs []*structs.Allocation, add func(inv, format string, args ...any)) {
	live := map[string][]string{}
	done := map[string][]string{}
	for _, a := range allocs {
		if a.DesiredStatus == structs.AllocDesiredStatusRun && !a.ClientTerminalStatus() {
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
// completed one of the current version (stopped by the server or not,
// as the reconciler counts it), or a failed one its policy no longer
// reschedules.
func missing(job *structs.Job, tg *structs.TaskGroup, allocs []*structs.Allocation) int {
	live := 0
	satisfied := map[string]bool{}
	for _, a := range allocs {
		if a.TaskGroup != tg.Name {
			continue
		}
		if a.DesiredStatus != structs.AllocDesiredStatusRun {
			// A batch alloc the server stopped after it ran to
			// completion (marked lost, then its node reported it
			// complete) did its work.
			if job.Type == structs.JobTypeBatch && a.JobVersion == job.Version && ranToCompletion(a) {
				satisfied[a.Name] = true
			}
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

// ranToCompletion reports whether every task of a complete alloc
// finished successfully.
func ranToCompletion(a *structs.Allocation) bool {
	if a.ClientStatus != structs.AllocClientStatusComplete || len(a.TaskStates) == 0 {
		return false
	}
	for _, ts := range a.TaskStates {
		if ts == nil || !ts.Successful() {
			return false
		}
	}
	return true
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

func lastEvent(a *structs.Allocation) int64 {
	var t int64
	for _, ts := range a.TaskStates {
		if ts != nil && ts.FinishedAt.UnixNano() > t {
			t = ts.FinishedAt.UnixNano()
		}
	}
	return t
}
