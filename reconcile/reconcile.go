package reconcile

import (
	"slices"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/structs"
)

// Status descriptions written on the allocs the reconciler stops or marks,
// Nomad's wording (users and Nomad's CLI see them).
const (
	StatusAllocNotNeeded   = "alloc not needed due to job update"
	StatusAllocReconnected = "alloc not needed due to disconnected client reconnect"
	StatusAllocMigrating   = "alloc is being migrated"
	StatusAllocUpdating    = "alloc is being updated due to job update"
	StatusAllocLost        = "alloc is lost since its node is down"
	StatusAllocUnknown     = "alloc is unknown since its node is disconnected"
	StatusAllocRescheduled = "alloc was rescheduled because it failed"
)

// Status descriptions of the follow-up evaluations the reconciler creates.
const (
	FollowupDescReschedule        = "created for delayed rescheduling"
	FollowupDescDisconnectTimeout = "created for delayed disconnect timeout"
)

// Reconcile decides what must change for the job in Input, as Nomad 1.6's
// allocation reconciler does for service and batch jobs, but
// deterministically: wherever Nomad's result depends on Go map order, drover
// walks allocs in canonical order (name index, newest version, alloc ID)
// and groups in job order. Follow-up evaluation and deployment IDs are
// derived from Input.EvalID. Reconcile does not modify its input.
func Reconcile(in Input) *Result {
	r := newReconciler(in)
	r.cancelUnneededDeployments()
	if r.stopped {
		r.stopEverything()
		return r.res
	}
	r.readDeploymentState()
	complete := true
	for _, g := range r.groups {
		if !g.reconcile() {
			complete = false
		}
	}
	r.updateDeploymentStatus(complete)
	return r.res
}

// reconciler is one run of Reconcile: the input, the job's groups with
// their allocs, the deployment as it evolves, and the result.
type reconciler struct {
	in      Input
	job     *structs.Job // current job; nil when purged
	jobID   string
	stopped bool // purged or stopped: everything goes

	// deployment is a private copy of the job's current deployment (the
	// reconciler fills in group states), or the one it creates; nil when
	// there is none or it was cancelled. oldDeployment is a deployment
	// that is no longer current (cancelled, for an older version, or
	// successful): its unpromoted canaries are stopped.
	deployment       *structs.Deployment
	oldDeployment    *structs.Deployment
	deploymentPaused bool // paused, pending or initializing: no new rollout placements
	deploymentFailed bool

	groups []*groupRun
	res    *Result
}

// newReconciler prepares a run: it copies the deployment (the run mutates
// its group states), describes every alloc once and splits them by group.
func newReconciler(in Input) *reconciler {
	r := &reconciler{
		in:         in,
		job:        in.Job,
		jobID:      in.JobID,
		stopped:    in.Job.Stopped(),
		deployment: in.Deployment.Copy(),
		res: &Result{
			AttributeUpdates:     map[string]*structs.Allocation{},
			DisconnectUpdates:    map[string]*structs.Allocation{},
			ReconnectUpdates:     map[string]*structs.Allocation{},
			DesiredTGUpdates:     map[string]*DesiredUpdates{},
			DesiredFollowupEvals: map[string][]*structs.Evaluation{},
		},
	}
	if r.jobID == "" && in.Job != nil {
		r.jobID = in.Job.ID
	}
	r.groups = r.splitByGroup(in.Allocs)
	return r
}

// splitByGroup describes the allocs and builds one groupRun per group: the
// current job's groups first, in job order (a group with no alloc still
// needs placements), then groups that only allocs mention (removed from
// the job), by name. Each group's allocs are sorted canonically.
func (r *reconciler) splitByGroup(allocs []*structs.Allocation) []*groupRun {
	var groups []*groupRun
	byName := map[string]*groupRun{}
	groupFor := func(name string) *groupRun {
		if g, ok := byName[name]; ok {
			return g
		}
		g := &groupRun{r: r, name: name}
		byName[name] = g
		groups = append(groups, g)
		return g
	}
	if r.job != nil {
		for _, tg := range r.job.TaskGroups {
			if tg != nil {
				groupFor(tg.Name)
			}
		}
	}
	fromJob := len(groups)

	infos := make([]allocInfo, 0, len(allocs))
	var lookup groupLookup
	for _, a := range allocs {
		if a != nil {
			infos = append(infos, r.describe(a, &lookup))
		}
	}
	// Two passes: count per group, then fill slices of the right size.
	member := make([]*groupRun, len(infos))
	sizes := map[*groupRun]int{}
	var last *groupRun
	for i := range infos {
		if name := infos[i].alloc.TaskGroup; last == nil || last.name != name {
			last = groupFor(name)
		}
		member[i] = last
		sizes[last]++
	}
	for g, n := range sizes {
		g.allocs = make([]*allocInfo, 0, n)
	}
	for i := range infos {
		member[i].allocs = append(member[i].allocs, &infos[i])
	}
	slices.SortFunc(groups[fromJob:], func(a, b *groupRun) int { return strings.Compare(a.name, b.name) })
	for _, g := range groups {
		sortCanonical(g.allocs)
		g.words = (len(g.allocs) + 63) / 64
	}
	return groups
}

// groupLookup caches the last (job version, group name) → group lookup:
// the allocs of a job share a handful of job versions.
type groupLookup struct {
	job   *structs.Job
	name  string
	group *structs.TaskGroup
}

// find returns job's group called name, or nil.
func (l *groupLookup) find(job *structs.Job, name string) *structs.TaskGroup {
	if job == nil {
		return nil
	}
	if job != l.job || name != l.name {
		l.job, l.name, l.group = job, name, job.LookupTaskGroup(name)
	}
	return l.group
}

// describe derives an allocInfo. An alloc without its Job (which stores
// should fill in) is taken to run the current job's incarnation at its
// JobVersion, with the current job's group definition.
func (r *reconciler) describe(a *structs.Allocation, lookup *groupLookup) allocInfo {
	ai := allocInfo{alloc: a}
	ai.index = parseNameIndex(a.Name, a.JobID, a.TaskGroup)
	ai.generated = isGeneratedName(a.Name, r.jobID, a.TaskGroup, ai.index)
	if a.Job != nil {
		ai.version, ai.createIndex = a.Job.Version, a.Job.CreateIndex
		ai.group = lookup.find(a.Job, a.TaskGroup)
	} else {
		ai.version = a.JobVersion
		if r.job != nil {
			ai.createIndex = r.job.CreateIndex
			ai.group = lookup.find(r.job, a.TaskGroup)
		}
	}
	return ai
}

// cancelUnneededDeployments retires the current deployment when it can no
// longer make progress for this job: the job is stopped (cancelled), the
// deployment is for another version or incarnation of the job (cancelled
// if still active), or it already succeeded. A retired deployment becomes
// the old deployment, whose unpromoted canaries are stopped.
func (r *reconciler) cancelUnneededDeployments() {
	d := r.deployment
	if r.stopped {
		if d != nil && d.Active() {
			r.updateDeployment(d, structs.DeploymentStatusCancelled, structs.DeploymentStatusDescriptionStoppedJob)
		}
		r.oldDeployment, r.deployment = d, nil
		return
	}
	if d == nil {
		return
	}
	if d.JobCreateIndex != r.job.CreateIndex || d.JobVersion != r.job.Version {
		if d.Active() {
			r.updateDeployment(d, structs.DeploymentStatusCancelled, structs.DeploymentStatusDescriptionNewerJob)
		}
		r.oldDeployment, r.deployment = d, nil
	}
	if d.Status == structs.DeploymentStatusSuccessful {
		r.oldDeployment, r.deployment = d, nil
	}
}

// updateDeployment records a status change of an existing deployment.
func (r *reconciler) updateDeployment(d *structs.Deployment, status, description string) {
	r.res.DeploymentUpdates = append(r.res.DeploymentUpdates, &structs.DeploymentStatusUpdate{
		DeploymentID: d.ID, Status: status, StatusDescription: description,
	})
}

// stopEverything handles a stopped or purged job: every non-terminal alloc
// of every group is stopped (those on lost nodes as lost).
func (r *reconciler) stopEverything() {
	for _, g := range r.groups {
		g.desired = r.counters(g.name)
		g.desired.Stop = g.stopAll(g.nonTerminal(g.everything()))
	}
}

// readDeploymentState notes whether the current deployment holds back
// rollout placements: paused by a user, or pending / initializing (a
// multiregion deployment waiting for its peers), or failed.
func (r *reconciler) readDeploymentState() {
	if d := r.deployment; d != nil {
		r.deploymentPaused = d.Status == structs.DeploymentStatusPaused ||
			d.Status == structs.DeploymentStatusPending ||
			d.Status == structs.DeploymentStatusInitializing
		r.deploymentFailed = d.Status == structs.DeploymentStatusFailed
	}
}

// updateDeploymentStatus finishes the deployment once every group is
// complete: successful, or blocked for a multiregion job (which must wait
// for its peer regions; unblocking and successful are later states and
// are kept). An initializing deployment has now been computed and moves on
// to pending. A created deployment whose canaries need promotion says so.
func (r *reconciler) updateDeploymentStatus(complete bool) {
	if d := r.deployment; d != nil {
		if complete {
			switch {
			case !r.job.IsMultiregion():
				r.updateDeployment(d, structs.DeploymentStatusSuccessful, structs.DeploymentStatusDescriptionSuccessful)
			case d.Status != structs.DeploymentStatusUnblocking && d.Status != structs.DeploymentStatusSuccessful:
				r.updateDeployment(d, structs.DeploymentStatusBlocked, structs.DeploymentStatusDescriptionBlocked)
			}
		}
		if d.Status == structs.DeploymentStatusInitializing {
			r.updateDeployment(d, structs.DeploymentStatusPending, structs.DeploymentStatusDescriptionPendingForPeer)
		}
	}
	if d := r.res.Deployment; d != nil && d.RequiresPromotion() {
		if d.HasAutoPromote() {
			d.StatusDescription = structs.DeploymentStatusDescriptionRunningAutoPromotion
		} else {
			d.StatusDescription = structs.DeploymentStatusDescriptionRunningNeedsPromotion
		}
	}
}

// newDeployment creates the deployment for the current job version. Its ID
// is derived from the evaluation, so a re-run of the same evaluation
// creates the same deployment.
func (r *reconciler) newDeployment() *structs.Deployment {
	j := r.job
	return &structs.Deployment{
		ID:                 structs.DeterministicID(r.in.EvalID, "deployment", j.Namespace, j.ID, strconv.FormatUint(j.Version, 10)),
		Namespace:          j.Namespace,
		JobID:              j.ID,
		JobVersion:         j.Version,
		JobModifyIndex:     j.ModifyIndex,
		JobSpecModifyIndex: j.JobModifyIndex,
		JobCreateIndex:     j.CreateIndex,
		IsMultiregion:      j.IsMultiregion(),
		TaskGroups:         make(map[string]*structs.DeploymentState, len(j.TaskGroups)),
		Status:             structs.DeploymentStatusRunning,
		StatusDescription:  structs.DeploymentStatusDescriptionRunning,
		EvalPriority:       r.in.EvalPriority,
		CreateTime:         r.in.Now.UnixNano(),
	}
}

// counters returns the (new) decision counters of a group.
func (r *reconciler) counters(group string) *DesiredUpdates {
	d := &DesiredUpdates{}
	r.res.DesiredTGUpdates[group] = d
	return d
}
