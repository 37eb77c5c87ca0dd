package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Periodic jobs run on the eval machinery both homes already have, so
// their timers cost nothing new: a periodic parent's next launch is a
// delayed evaluation of the parent (TriggeredBy periodic-job, WaitUntil
// the launch time, JobModifyIndex the parent version that armed it),
// which the embedded home keeps in its state file and the AWS home in an
// EventBridge Scheduler one-time schedule. When it runs, the evaluator
// registers the child of that launch time and arms the next launch in the
// same commit that completes the evaluation:
//
//   - the child's ID derives from the launch time, so a redelivered or
//     re-run launch finds the child and launches nothing again;
//   - the next launch's eval ID derives from the parent version and its
//     time, so re-running a launch arms the same eval, never a second chain;
//   - a launch that runs late (the server was down) launches once and arms
//     the next launch after now: missed launches are not replayed, as Nomad;
//   - a launch armed by an older version of the parent, or of a parent
//     that was stopped or purged since, launches nothing and arms nothing;
//     registering a version arms its own first launch.

// PeriodicState is what launching a periodic child needs of the state
// store.
type PeriodicState interface {
	RegisterJob(ctx context.Context, req *storage.RegisterJobRequest) (*storage.RegisterJobResult, error)
	Jobs(ctx context.Context, namespace, prefix string) ([]*structs.Job, error)
}

// ErrAlreadyLaunched is returned by LaunchPeriodicChild when the child of
// that launch time already exists.
var ErrAlreadyLaunched = errors.New("periodic child already launched")

// LaunchPeriodicChild registers the child parent launches at launch (its
// ID from the launch's unix second) with its pending evaluation, triggered
// by periodic-job as in Nomad, and sends the evaluation to q. It fails
// with ErrAlreadyLaunched when that child exists (or existed and was
// stopped): a launch happens once.
func LaunchPeriodicChild(ctx context.Context, st PeriodicState, q Queue, parent *structs.Job, launch time.Time, now time.Time) (*storage.RegisterJobResult, error) {
	child := structs.NewPeriodicChild(parent, launch)
	ev := &structs.Evaluation{
		ID: structs.GenerateUUID(), Namespace: child.Namespace, JobID: child.ID, Type: child.Type, Priority: child.Priority,
		TriggeredBy: structs.EvalTriggerPeriodicJob, Status: structs.EvalStatusPending, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
	}
	// JobModifyIndex 0 with EnforceIndex: only if the child does not exist.
	res, err := st.RegisterJob(ctx, &storage.RegisterJobRequest{Job: child, Eval: ev, EnforceIndex: true, SubmitTime: now.UnixNano()})
	if errors.Is(err, storage.ErrConflict) {
		return nil, fmt.Errorf("launch %s: %w", child.ID, ErrAlreadyLaunched)
	}
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w", child.ID, err)
	}
	if q != nil {
		// On failure the eval stays pending in the store: the pending
		// sweep (AWS) or the next start (embedded) sends it.
		_ = q.Enqueue(ctx, res.Eval)
	}
	return res, nil
}

// RunningChildren returns the periodic children of parent that are not
// dead (what prohibit_overlap waits for).
func RunningChildren(ctx context.Context, st PeriodicState, parent *structs.Job) ([]*structs.Job, error) {
	kids, err := st.Jobs(ctx, parent.Namespace, parent.ID+structs.PeriodicLaunchSuffix)
	if err != nil {
		return nil, fmt.Errorf("children of %s: %w", parent.ID, err)
	}
	var out []*structs.Job
	for _, k := range kids {
		if k.ParentID == parent.ID && k.Status != structs.JobStatusDead {
			out = append(out, k)
		}
	}
	return out, nil
}

// NextLaunchEval returns the delayed evaluation that launches job's next
// child after from (or after now, when that time has passed already:
// missed launches are not replayed), or nil when the cron never matches
// again. Its ID derives from the job's version and the launch time.
func NextLaunchEval(job *structs.Job, from, now time.Time, previous string) (*structs.Evaluation, error) {
	next, err := job.Periodic.Next(from)
	if err != nil {
		return nil, err
	}
	if !next.IsZero() && !next.After(now) {
		if next, err = job.Periodic.Next(now); err != nil {
			return nil, err
		}
	}
	if next.IsZero() {
		return nil, nil
	}
	return &structs.Evaluation{
		ID:        structs.DeterministicID("periodic", job.Namespace, job.ID, strconv.FormatUint(job.JobModifyIndex, 10), strconv.FormatInt(next.UnixNano(), 10)),
		Namespace: job.Namespace, JobID: job.ID, Type: job.Type, Priority: job.Priority,
		TriggeredBy: structs.EvalTriggerPeriodicJob, Status: structs.EvalStatusPending, WaitUntil: next.UTC(),
		JobModifyIndex: job.JobModifyIndex, PreviousEval: previous, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
	}, nil
}

// periodicStep is the periodic part of evaluating a periodic parent: a
// launch eval of the current version launches its child (unless
// prohibit_overlap holds it back); then the next launch is armed, unless a
// launch of this version is armed already. It returns the next launch's
// eval to commit with the plan, or nil.
func (e *Evaluator) periodicStep(ctx context.Context, ev *structs.Evaluation, c *computed, log *zap.Logger) (*structs.Evaluation, error) {
	job := c.snap.Job // the stored job (c.job is its stopped view)
	if !job.IsPeriodicActive() {
		return nil, nil
	}
	now := e.now()
	from := now
	if ev.TriggeredBy == structs.EvalTriggerPeriodicJob && !ev.WaitUntil.IsZero() {
		if ev.JobModifyIndex != job.JobModifyIndex {
			log.Info("periodic launch armed by an earlier version of the job; skipped", zap.Uint64("armed_by", ev.JobModifyIndex))
			return nil, nil
		}
		from = ev.WaitUntil
		if err := e.launch(ctx, job, ev.WaitUntil, now, log); err != nil {
			return nil, err
		}
	} else if armed(c.jobEvals, job, ev.ID) {
		return nil, nil
	}
	next, err := NextLaunchEval(job, from, now, ev.ID)
	if err != nil {
		log.Warn("periodic job: cannot compute its next launch", zap.Error(err))
		return nil, nil
	}
	if next != nil {
		log.Info("next periodic launch armed", zap.Time("launch", next.WaitUntil), zap.String("launch_eval_id", next.ID))
	}
	return next, nil
}

// launch launches job's child of launch, unless prohibit_overlap and a
// running child hold it back.
func (e *Evaluator) launch(ctx context.Context, job *structs.Job, launch, now time.Time, log *zap.Logger) error {
	if job.Periodic.ProhibitOverlap {
		running, err := RunningChildren(ctx, e.State, job)
		if err != nil {
			return err
		}
		if len(running) > 0 {
			log.Info("periodic launch skipped: prohibit_overlap and a child still runs",
				zap.Time("launch", launch), zap.String("running_child", running[0].ID))
			return nil
		}
	}
	res, err := LaunchPeriodicChild(ctx, e.State, e.Queue, job, launch, now)
	if errors.Is(err, ErrAlreadyLaunched) {
		log.Info("periodic child already launched", zap.Time("launch", launch))
		return nil
	}
	if err != nil {
		return err
	}
	log.Info("periodic child launched", zap.String("child_job_id", res.Job.ID), zap.String("child_eval_id", res.Eval.ID),
		zap.Time("launch", launch))
	return nil
}

// armed reports whether a launch of job's current version is pending
// already (registering an unchanged job again arms nothing new).
func armed(evals []*structs.Evaluation, job *structs.Job, self string) bool {
	for _, o := range evals {
		if o.ID != self && o.Status == structs.EvalStatusPending && o.TriggeredBy == structs.EvalTriggerPeriodicJob &&
			!o.WaitUntil.IsZero() && o.JobModifyIndex == job.JobModifyIndex {
			return true
		}
	}
	return false
}
