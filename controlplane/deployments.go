package controlplane

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// The deployment watcher's part of the control plane: what happens to a
// deployment besides what the reconciler decides in a plan. Nomad runs a
// watcher goroutine per deployment; drover reacts to health reports as
// they arrive and checks deadlines from a timer, so the same functions
// serve the embedded home and a scheduled function on AWS.

// ErrBadRequest marks a request that cannot be done as asked (promote a
// deployment without canaries, fail a finished one...): the API answers
// 400 with the message.
var ErrBadRequest = errors.New("bad request")

// badRequestError is a request refused as asked: its text is the message
// alone (the API answers it as the 400's body, as Nomad does), and it
// matches ErrBadRequest with errors.Is.
type badRequestError struct{ msg string }

func (e *badRequestError) Error() string        { return e.msg }
func (e *badRequestError) Is(target error) bool { return target == ErrBadRequest }

func badRequest(format string, args ...any) error {
	return &badRequestError{msg: fmt.Sprintf(format, args...)}
}

// reactToHealth handles health decided by node agents, as Nomad's
// deployment watcher: an evaluation per job so the rollout continues (the
// reconciler places the next batch or marks the deployment successful).
// An unhealthy alloc of a running deployment fails it at once (rolling
// back with auto_revert) only when its group has no progress deadline;
// with one, the alloc is marked for rescheduling instead, and the
// deployment fails only if the deadline passes without progress.
func (s *Service) reactToHealth(ctx context.Context, changes []*storage.ClientAllocChange) error {
	type jobRef struct{ ns, id, deployment string }
	jobs := map[jobRef]bool{}
	var unhealthy []*structs.Allocation
	for _, c := range changes {
		a := c.Alloc
		if a.DeploymentID == "" || c.PrevDeploymentInfo.HasHealth() || !a.DeploymentStatus.HasHealth() {
			continue
		}
		jobs[jobRef{a.Namespace, a.JobID, a.DeploymentID}] = true
		if a.DeploymentStatus.IsUnhealthy() {
			unhealthy = append(unhealthy, a)
		}
	}
	sort.Slice(unhealthy, func(i, j int) bool { return unhealthy[i].ID < unhealthy[j].ID })
	failed := map[string]bool{}
	replace := map[string]*structs.DesiredTransition{}
	yes := true
	for _, a := range unhealthy {
		if failed[a.DeploymentID] {
			continue
		}
		d, err := s.store.Deployment(ctx, a.DeploymentID)
		if err != nil || d.Status != structs.DeploymentStatusRunning {
			continue
		}
		if g, ok := d.TaskGroups[a.TaskGroup]; ok && g.ProgressDeadline > 0 {
			tr := a.DesiredTransition
			tr.Reschedule = &yes
			replace[a.ID] = &tr
			continue
		}
		if _, err := s.failDeployment(ctx, d, structs.DeploymentStatusDescriptionFailedAllocations); err != nil {
			return err
		}
		failed[d.ID] = true
		for k := range jobs {
			if k.deployment == d.ID {
				delete(jobs, k) // failing it created the evaluation
			}
		}
	}
	refs := make([]jobRef, 0, len(jobs))
	for k := range jobs {
		refs = append(refs, k)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].ns+refs[i].id < refs[j].ns+refs[j].id })
	var evals []*structs.Evaluation
	for _, r := range refs {
		ev, err := s.jobEval(ctx, r.ns, r.id, structs.EvalTriggerDeploymentWatcher)
		if err != nil {
			continue
		}
		ev.DeploymentID = r.deployment
		evals = append(evals, ev)
	}
	if len(replace) > 0 {
		// The transitions and the evaluations that act on them land together.
		if _, err := s.store.UpdateAllocDesiredTransitions(ctx, replace, evals...); err != nil {
			return fmt.Errorf("mark unhealthy allocs for rescheduling: %w", err)
		}
		s.log.Info("unhealthy allocations marked for rescheduling", zap.Int("allocs", len(replace)))
	} else if len(evals) > 0 {
		if _, err := s.store.UpsertEvals(ctx, evals...); err != nil {
			return fmt.Errorf("create deployment evaluations: %w", err)
		}
	}
	s.enqueue(ctx, evals...)
	return nil
}

// jobEval builds an evaluation of the job's current version.
func (s *Service) jobEval(ctx context.Context, ns, jobID, trigger string) (*structs.Evaluation, error) {
	job, err := s.store.Job(ctx, ns, jobID)
	if err != nil {
		return nil, err
	}
	ev := s.newEval(ns, jobID, job.Type, job.Priority, trigger)
	ev.JobModifyIndex = job.JobModifyIndex
	return ev, nil
}

// CheckDeployments runs the deployment watcher's timed duties over every
// running deployment: fail those whose progress deadline passed, and those
// counting an unhealthy alloc in a group without a progress deadline
// (rolling back with auto_revert), and promote those whose canaries are
// all healthy when every canary group sets auto_promote. The second is
// what reactToHealth does when the report arrives; doing it from the
// counters too makes it independent of the report's reactions, which a
// control plane that died after writing the report, or a node that never
// sent it again, leaves undone (as Nomad's watcher, which reads the
// deployment's allocs, not the reports).
func (s *Service) CheckDeployments(ctx context.Context) error {
	ds, err := s.store.ActiveDeployments(ctx)
	if err != nil {
		return fmt.Errorf("list deployments: %w", err)
	}
	now := s.now()
	for _, d := range ds {
		if d.Status != structs.DeploymentStatusRunning {
			continue
		}
		if s.progressDeadlinePassed(d, now) {
			if _, err := s.failDeployment(ctx, d, structs.DeploymentStatusDescriptionProgressDeadline); err != nil {
				return err
			}
			continue
		}
		if unhealthyWithoutDeadline(d) {
			if _, err := s.failDeployment(ctx, d, structs.DeploymentStatusDescriptionFailedAllocations); err != nil {
				return err
			}
			continue
		}
		if d.HasAutoPromote() && d.RequiresPromotion() && s.canariesHealthy(ctx, d) == nil {
			if _, err := s.promote(ctx, d, nil); err != nil {
				return err
			}
			s.log.Info("deployment auto-promoted", zap.String("deployment_id", d.ID), zap.String("job_id", d.JobID))
		}
	}
	return nil
}

// progressDeadlinePassed reports whether a group of d has not become
// healthy by its RequireProgressBy.
func (s *Service) progressDeadlinePassed(d *structs.Deployment, now time.Time) bool {
	for _, g := range d.TaskGroups {
		if g.ProgressDeadline <= 0 || g.RequireProgressBy.IsZero() {
			continue
		}
		done := g.HealthyAllocs >= g.DesiredTotal && (g.DesiredCanaries == 0 || g.Promoted)
		if !done && now.After(g.RequireProgressBy) {
			return true
		}
	}
	return false
}

// unhealthyWithoutDeadline reports whether a group of d without a
// progress deadline counts an unhealthy alloc: such a deployment fails
// (with a deadline, the alloc is replaced instead and the deadline decides).
func unhealthyWithoutDeadline(d *structs.Deployment) bool {
	for _, g := range d.TaskGroups {
		if g.ProgressDeadline <= 0 && g.UnhealthyAllocs > 0 {
			return true
		}
	}
	return false
}

// canariesHealthy returns nil when every placed canary of d is healthy,
// else an error naming the first group that is not ready.
func (s *Service) canariesHealthy(ctx context.Context, d *structs.Deployment) error {
	allocs, err := s.store.AllocsByJob(ctx, d.Namespace, d.JobID)
	if err != nil {
		return err
	}
	healthy := map[string]int{}
	for _, a := range allocs {
		if a.DeploymentID == d.ID && a.DeploymentStatus.IsCanary() && a.DeploymentStatus.IsHealthy() && !a.TerminalStatus() {
			healthy[a.TaskGroup]++
		}
	}
	names := make([]string, 0, len(d.TaskGroups))
	for n := range d.TaskGroups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := d.TaskGroups[n]
		if g.DesiredCanaries == 0 || g.Promoted {
			continue
		}
		if healthy[n] < g.DesiredCanaries {
			return badRequest("task group %q has %d/%d healthy canaries", n, healthy[n], g.DesiredCanaries)
		}
	}
	return nil
}

// PromoteDeployment promotes a deployment's canaries (the named groups, or
// all with canaries), as `nomad deployment promote`: every canary of those
// groups must be healthy. The rollout then continues.
// It returns the evaluation created.
func (s *Service) PromoteDeployment(ctx context.Context, id string, groups []string) (string, error) {
	d, err := s.store.Deployment(ctx, id)
	if err != nil {
		return "", err
	}
	if !d.Active() {
		return "", badRequest("deployment %s is %s: it can no longer be promoted", id, d.Status)
	}
	for _, g := range groups {
		if st, ok := d.TaskGroups[g]; !ok || st.DesiredCanaries == 0 {
			return "", badRequest("task group %q of deployment %s has no canaries to promote", g, id)
		}
	}
	if !d.RequiresPromotion() {
		return "", badRequest("deployment %s has no canaries awaiting promotion", id)
	}
	if err := s.canariesHealthy(ctx, d); err != nil {
		return "", err
	}
	return s.promote(ctx, d, groups)
}

func (s *Service) promote(ctx context.Context, d *structs.Deployment, groups []string) (string, error) {
	ev, err := s.jobEval(ctx, d.Namespace, d.JobID, structs.EvalTriggerDeploymentWatcher)
	if err != nil {
		return "", fmt.Errorf("promote deployment %s: %w", d.ID, err)
	}
	ev.DeploymentID = d.ID
	if _, err := s.store.PromoteDeployment(ctx, d.ID, groups, ev); err != nil {
		return "", fmt.Errorf("promote deployment %s: %w", d.ID, err)
	}
	s.log.Info("deployment promoted", zap.String("deployment_id", d.ID), zap.String("job_id", d.JobID), zap.Strings("groups", groups))
	s.enqueue(ctx, ev)
	return ev.ID, nil
}

// FailDeployment marks an active deployment failed, as `nomad deployment
// fail` (rolling back when auto_revert is set). It returns the evaluation
// created.
func (s *Service) FailDeployment(ctx context.Context, id string) (string, error) {
	d, err := s.store.Deployment(ctx, id)
	if err != nil {
		return "", err
	}
	if !d.Active() {
		return "", badRequest("deployment %s is %s: it can no longer be failed", id, d.Status)
	}
	return s.failDeployment(ctx, d, structs.DeploymentStatusDescriptionFailedByUser)
}

// failDeployment fails d with reason and evaluates the job; with
// auto_revert on a group, the job's latest stable version before d's is
// registered again.
func (s *Service) failDeployment(ctx context.Context, d *structs.Deployment, reason string) (string, error) {
	revert := false
	for _, g := range d.TaskGroups {
		revert = revert || g.AutoRevert
	}
	var target *structs.Job
	if revert {
		var err error
		target, err = s.latestStableBefore(ctx, d)
		if err != nil {
			return "", err
		}
		if target != nil {
			reason = fmt.Sprintf("%s - rolling back to job version %d", reason, target.Version)
		} else {
			reason += " - no stable job version to auto revert to"
		}
	}
	ev, err := s.jobEval(ctx, d.Namespace, d.JobID, structs.EvalTriggerDeploymentWatcher)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return "", fmt.Errorf("fail deployment %s: %w", d.ID, err)
	}
	var evals []*structs.Evaluation
	if ev != nil {
		ev.DeploymentID = d.ID
		evals = append(evals, ev)
	}
	if _, err := s.store.UpdateDeploymentStatus(ctx, &structs.DeploymentStatusUpdate{
		DeploymentID: d.ID, Status: structs.DeploymentStatusFailed, StatusDescription: reason}, evals...); err != nil {
		return "", fmt.Errorf("fail deployment %s: %w", d.ID, err)
	}
	s.log.Warn("deployment failed", zap.String("deployment_id", d.ID), zap.String("job_id", d.JobID), zap.String("reason", reason))
	s.enqueue(ctx, evals...)
	if target != nil {
		resp, err := s.revertTo(ctx, target)
		if err != nil {
			return "", fmt.Errorf("auto-revert job %s to version %d: %w", d.JobID, target.Version, err)
		}
		return resp.EvalID, nil
	}
	if ev != nil {
		return ev.ID, nil
	}
	return "", nil
}

// latestStableBefore returns the newest stable version of d's job older
// than d's version, or nil. Versions of a purged incarnation of the job
// do not count: Nomad deletes them with the job.
func (s *Service) latestStableBefore(ctx context.Context, d *structs.Deployment) (*structs.Job, error) {
	versions, err := s.store.JobVersions(ctx, d.Namespace, d.JobID)
	if err != nil {
		return nil, fmt.Errorf("versions of job %s: %w", d.JobID, err)
	}
	cur, err := s.store.Job(ctx, d.Namespace, d.JobID)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", d.JobID, err)
	}
	for _, v := range structs.CurrentIncarnation(versions, cur) { // newest first
		if v.Version < d.JobVersion && v.Stable && !v.Stop {
			return v, nil
		}
	}
	return nil, nil
}

// PauseDeployment pauses (or resumes) a running deployment, as `nomad
// deployment pause|resume`. Resuming returns the evaluation created.
func (s *Service) PauseDeployment(ctx context.Context, id string, pause bool) (string, error) {
	d, err := s.store.Deployment(ctx, id)
	if err != nil {
		return "", err
	}
	status, desc := structs.DeploymentStatusPaused, structs.DeploymentStatusDescriptionPaused
	switch {
	case pause && d.Status != structs.DeploymentStatusRunning:
		return "", badRequest("deployment %s is %s: only a running deployment can be paused", id, d.Status)
	case !pause && d.Status != structs.DeploymentStatusPaused:
		return "", badRequest("deployment %s is %s: only a paused deployment can be resumed", id, d.Status)
	case !pause:
		status, desc = structs.DeploymentStatusRunning, structs.DeploymentStatusDescriptionRunning
	}
	var evals []*structs.Evaluation
	if !pause {
		ev, err := s.jobEval(ctx, d.Namespace, d.JobID, structs.EvalTriggerDeploymentWatcher)
		if err == nil {
			ev.DeploymentID = d.ID
			evals = append(evals, ev)
		}
	}
	if _, err := s.store.UpdateDeploymentStatus(ctx, &structs.DeploymentStatusUpdate{DeploymentID: id, Status: status, StatusDescription: desc}, evals...); err != nil {
		return "", fmt.Errorf("pause deployment %s: %w", id, err)
	}
	s.enqueue(ctx, evals...)
	if len(evals) > 0 {
		return evals[0].ID, nil
	}
	return "", nil
}

// RevertJob registers an earlier version of a job again (as a new
// version), as `nomad job revert`. With enforcePrior set, the job's
// current version must be *enforcePrior.
func (s *Service) RevertJob(ctx context.Context, ns, jobID string, version uint64, enforcePrior *uint64) (*RegisterResponse, error) {
	cur, err := s.store.Job(ctx, ns, jobID)
	if err != nil {
		return nil, err
	}
	if enforcePrior != nil && cur.Version != *enforcePrior {
		return nil, badRequest("current job version %d does not match the enforced prior version %d", cur.Version, *enforcePrior)
	}
	if version == cur.Version {
		return nil, badRequest("can't revert job %q to its current version %d", jobID, version)
	}
	target, err := s.store.JobVersion(ctx, ns, jobID, version)
	if err != nil {
		return nil, err
	}
	if target.CreateIndex != cur.CreateIndex {
		return nil, storage.NotFoundf("version %d of job %q (it belonged to the job purged before this one was registered)", version, jobID)
	}
	return s.revertTo(ctx, target)
}

func (s *Service) revertTo(ctx context.Context, target *structs.Job) (*RegisterResponse, error) {
	job := target.Copy()
	job.Stop = false
	// The new version keeps the source of the version it restores, as
	// Nomad's.
	resp, err := s.RegisterJob(ctx, &RegisterRequest{Job: job, Submission: s.submissionOf(ctx, target)})
	if err != nil {
		return nil, err
	}
	s.log.Info("job reverted", zap.String("job_id", job.ID), zap.Uint64("to_version", target.Version))
	return resp, nil
}
