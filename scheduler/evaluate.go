// Package scheduler is the evaluate service: it processes one evaluation
// end to end (load → snapshot → reconcile → place → commit → eval status)
// against any state store, and runs workers over any eval queue. It does
// not know which home it runs in: the embedded agent and the evaluate
// Lambda function both call Evaluator.Process.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/placement"
	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/scheduler/system"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// State is what the evaluate service reads and writes.
type State interface {
	Eval(ctx context.Context, evalID string) (*structs.Evaluation, error)
	EvalsByJob(ctx context.Context, namespace, jobID string) ([]*structs.Evaluation, error)
	Evals(ctx context.Context, filter storage.EvalFilter) ([]*structs.Evaluation, error)
	UpsertEvals(ctx context.Context, evals ...*structs.Evaluation) (uint64, error)
	JobSnapshot(ctx context.Context, namespace, jobID string) (*storage.JobSnapshot, error)
	CandidateNodes(ctx context.Context, q storage.NodeQuery) ([]*storage.NodeUsage, error)
	CommitPlan(ctx context.Context, plan *structs.Plan) (uint64, error)
	// RegisterJob and Jobs launch the children of periodic jobs.
	RegisterJob(ctx context.Context, req *storage.RegisterJobRequest) (*storage.RegisterJobResult, error)
	Jobs(ctx context.Context, namespace, prefix string) ([]*structs.Job, error)
}

// Queue accepts evaluations to run: now, or at their WaitUntil.
type Queue interface {
	Enqueue(ctx context.Context, evals ...*structs.Evaluation) error
}

// ReconcileFunc computes what to change for one job (package reconcile).
type ReconcileFunc func(reconcile.Input) *reconcile.Result

// ErrNotYet is returned by Process for an eval delivered before its
// WaitUntil: the caller must put it back (acknowledge this delivery and
// enqueue the eval again), never run it early (design invariant 4).
var ErrNotYet = errors.New("evaluation delivered before its wait-until")

// Evaluator processes evaluations.
type Evaluator struct {
	State State
	Queue Queue
	// Reconcile decides what to change (default reconcile.Reconcile).
	Reconcile ReconcileFunc
	// Update decides ignore / in-place / destructive per alloc.
	Update reconcile.UpdateFunc
	// UpdateOnNodes, when set, builds the update decision for one
	// evaluation from the nodes it sees (so that an alloc whose node still
	// fits a changed constraint is updated in place); it wins over Update.
	UpdateOnNodes func(nodes map[string]*structs.Node) reconcile.UpdateFunc
	// RescheduleTracker builds a rescheduled replacement's tracker.
	RescheduleTracker func(prev *structs.Allocation, now time.Time) *structs.RescheduleTracker
	// SupportsDisconnectedClients turns on disconnect handling in the
	// reconciler.
	SupportsDisconnectedClients bool
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxAttempts bounds re-evaluation after commit conflicts (default 5).
	MaxAttempts int
	// BeforeCommit, when set, runs between computing a plan and committing
	// it (tests use it to hold evaluations there).
	BeforeCommit func(ctx context.Context, eval *structs.Evaluation, attempt int)
	// Config, when set, is the scheduler configuration: PauseEvalBroker
	// pauses processing (Process returns ErrPaused) and SchedulerAlgorithm
	// picks binpack or spread scoring.
	Config *CachedConfig
	Logger *zap.Logger

	// placing orders the node read, placement and commit of this
	// evaluator's evaluations: first attempts share it (evaluations of
	// different jobs place and commit in parallel), a re-evaluation after
	// a conflict holds it alone. Bin-packing sends concurrent plans to the
	// same fullest nodes, so without it a plan can lose the race for a
	// node again and again; holding it alone, the re-evaluation sees
	// usage that no other evaluation of this process changes before its
	// commit (the store still checks: writers elsewhere can conflict).
	placing sync.RWMutex
}

// lockPlacement takes placing for an attempt and returns its unlock.
func (e *Evaluator) lockPlacement(attempt int) func() {
	if attempt <= 1 {
		e.placing.RLock()
		return e.placing.RUnlock
	}
	e.placing.Lock()
	return e.placing.Unlock
}

func (e *Evaluator) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Evaluator) logger() *zap.Logger {
	if e.Logger != nil {
		return e.Logger
	}
	return zap.NewNop()
}

// Process evaluates one evaluation. It returns nil when the eval is done
// (including when it was already terminal: redelivery is harmless),
// ErrNotYet when it arrived before its WaitUntil, and another error when
// it should be retried (the queue redelivers it).
func (e *Evaluator) Process(ctx context.Context, evalID string) error {
	log := e.logger().With(zap.String("eval_id", evalID))
	if e.Config.Paused(ctx) {
		return fmt.Errorf("eval %s: %w", evalID, ErrPaused)
	}
	ev, err := e.State.Eval(ctx, evalID)
	if errors.Is(err, storage.ErrNotFound) {
		log.Warn("evaluation no longer exists; dropping delivery")
		return nil
	}
	if err != nil {
		return fmt.Errorf("load eval %s: %w", evalID, err)
	}
	log = log.With(zap.String("job_id", ev.JobID), zap.String("namespace", ev.Namespace), zap.String("triggered_by", ev.TriggeredBy))
	if ev.TerminalStatus() {
		log.Debug("evaluation already terminal; acknowledging redelivery", zap.String("status", ev.Status))
		return nil
	}
	if ev.WaitUntil.After(e.now()) {
		return fmt.Errorf("eval %s waits until %s: %w", ev.ID, ev.WaitUntil.Format(time.RFC3339), ErrNotYet)
	}
	attempts := e.MaxAttempts
	if attempts <= 0 {
		attempts = 5
	}
	var lastConflict error
	for attempt := 1; attempt <= attempts; attempt++ {
		out, err := e.evaluateOnce(ctx, ev, attempt)
		if err == nil {
			e.afterCommit(ctx, log, out)
			log.Info("evaluation complete", zap.String("status", out.evalStatus), zap.Int("placed", out.placed),
				zap.Int("stopped", out.stopped), zap.Int("queued", out.queued), zap.Int("attempt", attempt))
			return nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("evaluate eval %s: %w", ev.ID, err)
		}
		lastConflict = err
		log.Info("plan conflicted with newer state; re-evaluating", zap.Int("attempt", attempt), zap.Error(err))
	}
	return fmt.Errorf("evaluate eval %s: gave up after %d conflicting plans: %w", ev.ID, attempts, lastConflict)
}

// outcome is what one successful commit did.
type outcome struct {
	evalStatus string
	placed     int
	stopped    int
	queued     int
	followups  []*structs.Evaluation
	freedRoom  bool
}

// computed is one evaluation's decision before it is committed: what it
// read, what the reconciler (or the system scheduler) decided and the plan
// built from it.
type computed struct {
	snap     *storage.JobSnapshot
	job      *structs.Job
	jobEvals []*structs.Evaluation
	built    *placement.PlanResult
	// annotations are the decisions per group (the plan's annotations).
	annotations *structs.PlanAnnotations
	// blocks: failed placements wait for capacity in a blocked eval (the
	// system scheduler's infeasible nodes do not).
	blocks bool
}

// compute reads a fresh snapshot and runs reconcile and placement for ev.
// With proposed set, that job stands in for the stored one (a dry run:
// Nomad's job plan). It writes nothing.
func (e *Evaluator) compute(ctx context.Context, ev *structs.Evaluation, proposed *structs.Job) (*computed, error) {
	snap, err := e.State.JobSnapshot(ctx, ev.Namespace, ev.JobID)
	if err != nil {
		return nil, err
	}
	query := snap
	if proposed != nil { // the candidates of the proposed job's pool and datacenters
		q := *snap
		q.Job = proposed
		query = &q
	}
	usage, err := e.State.CandidateNodes(ctx, nodeQuery(query, ev))
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	jobEvals, err := e.State.EvalsByJob(ctx, ev.Namespace, ev.JobID)
	if err != nil {
		return nil, fmt.Errorf("read evals of job %s: %w", ev.JobID, err)
	}
	now := e.now()
	nodes := make([]placement.NodeCandidate, 0, len(usage))
	byID := make(map[string]*structs.Node, len(usage))
	for _, u := range usage {
		nodes = append(nodes, placement.NodeCandidate{Node: u.Node, Used: u.Used, Ports: u.Ports})
		byID[u.Node.ID] = u.Node
	}
	job := query.Job
	if job.IsParent() {
		// A periodic or parameterized parent runs nothing itself: its
		// children do. Reconciled as stopped, it places nothing.
		job = job.Copy()
		job.Stop = true
	}
	jobType := ev.Type
	if job != nil {
		jobType = job.Type
	}
	batch := jobType == structs.JobTypeBatch
	update := e.Update
	if e.UpdateOnNodes != nil {
		update = e.UpdateOnNodes(byID)
	}
	if jobType == structs.JobTypeSystem || jobType == structs.JobTypeSysBatch {
		if update == nil {
			update = placement.UpdateType
		}
		res := system.BuildPlan(&system.Input{Eval: ev, Job: job, Allocs: snap.Allocs, Nodes: nodes, Update: update,
			SnapshotIndex: snap.Index, Now: now})
		return &computed{snap: snap, job: job, jobEvals: jobEvals, built: res.PlanResult, annotations: res.Annotations,
			blocks: res.Exhausted}, nil
	}
	reconcileFn := e.Reconcile
	if reconcileFn == nil {
		reconcileFn = reconcile.Reconcile
	}
	result := reconcileFn(reconcile.Input{
		Job: job, Namespace: ev.Namespace, JobID: ev.JobID, Batch: batch,
		Allocs: snap.Allocs, Deployment: snap.Deployment, TaintedNodes: taintedNodes(snap.Allocs, byID),
		SupportsDisconnectedClients: e.SupportsDisconnectedClients,
		EvalID:                      ev.ID, EvalPriority: ev.Priority, Now: now, Update: update,
	})
	built := placement.BuildPlan(&placement.PlanRequest{
		Eval: ev, Job: job, Allocs: snap.Allocs, Deployment: snap.Deployment, Result: result,
		Nodes: nodes, SnapshotIndex: snap.Index, Now: now, RescheduleTracker: e.RescheduleTracker,
		SchedulerAlgorithm: e.Config.Get(ctx).SchedulerAlgorithm,
	})
	return &computed{snap: snap, job: job, jobEvals: jobEvals, built: built, annotations: annotations(result), blocks: true}, nil
}

// evaluateOnce computes and commits one plan from a fresh snapshot.
func (e *Evaluator) evaluateOnce(ctx context.Context, ev *structs.Evaluation, attempt int) (*outcome, error) {
	defer e.lockPlacement(attempt)()
	c, err := e.compute(ctx, ev, nil)
	if err != nil {
		return nil, err
	}
	built := c.built
	plan := built.Plan
	out := &outcome{placed: built.Placed, stopped: len(plan.Stops), freedRoom: len(plan.Stops) > 0}
	for _, q := range built.QueuedAllocations {
		out.queued += q
	}
	if c.snap.Job.IsPeriodicActive() {
		next, err := e.periodicStep(ctx, ev, c, e.logger().With(zap.String("eval_id", ev.ID), zap.String("job_id", ev.JobID), zap.String("namespace", ev.Namespace)))
		if err != nil {
			return nil, err
		}
		if next != nil {
			plan.Evals = append(plan.Evals, next)
		}
	}
	for _, f := range plan.Evals {
		out.followups = append(out.followups, f)
	}
	plan.Evals = append(plan.Evals, e.finishEval(ev, c, out)...)
	if e.BeforeCommit != nil {
		e.BeforeCommit(ctx, ev, attempt)
	}
	if _, err := e.State.CommitPlan(ctx, plan); err != nil {
		return nil, err
	}
	return out, nil
}

// DryRun is what registering a job would do, computed and never
// committed (Nomad's job plan).
type DryRun struct {
	// Current is the stored job (nil: a new job or a purged one).
	Current *structs.Job
	// Job is the proposed job as it would be registered (its Version the
	// next one when the specification changed).
	Job *structs.Job
	// Annotations are the reconciler's decisions per task group.
	Annotations *structs.PlanAnnotations
	// FailedTGAllocs are the placements that would fail, per group.
	FailedTGAllocs map[string]*structs.AllocMetric
	// Plan is the plan that would be committed.
	Plan *structs.Plan
}

// PlanJob runs the same reconcile and placement as an evaluation of job
// registered now, against the current state, and commits nothing.
func (e *Evaluator) PlanJob(ctx context.Context, job *structs.Job) (*DryRun, error) {
	snap, err := e.State.JobSnapshot(ctx, job.Namespace, job.ID)
	if err != nil {
		return nil, fmt.Errorf("plan job %s: %w", job.ID, err)
	}
	proposed := job.Copy()
	cur := snap.Job
	switch {
	case cur != nil && cur.Stop == proposed.Stop && !structs.SpecChanged(cur, proposed):
		proposed.Version, proposed.CreateIndex, proposed.JobModifyIndex = cur.Version, cur.CreateIndex, cur.JobModifyIndex
	case cur != nil:
		proposed.Version, proposed.CreateIndex, proposed.JobModifyIndex = cur.Version+1, cur.CreateIndex, snap.Index+1
	default:
		// A new incarnation: versions continue after those its allocs
		// still name, as the stores number them.
		proposed.CreateIndex, proposed.JobModifyIndex = snap.Index+1, snap.Index+1
		for _, a := range snap.Allocs {
			if a.JobVersion >= proposed.Version {
				proposed.Version = a.JobVersion + 1
			}
		}
	}
	proposed.Stop = false
	ev := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: job.Namespace, JobID: job.ID, Type: job.Type,
		Priority: job.Priority, TriggeredBy: structs.EvalTriggerJobRegister, Status: structs.EvalStatusPending}
	c, err := e.compute(ctx, ev, proposed)
	if err != nil {
		return nil, fmt.Errorf("plan job %s: %w", job.ID, err)
	}
	out := &DryRun{Current: cur, Job: proposed, Annotations: c.annotations, Plan: c.built.Plan}
	if len(c.built.FailedTGAllocs) > 0 {
		out.FailedTGAllocs = c.built.FailedTGAllocs
	}
	return out, nil
}

// nodeQuery selects the nodes an evaluation reads: the candidates of the
// job's pool and datacenters, the nodes its allocs are on, and the node
// the evaluation is about (a node-update eval of a node that just
// registered: a store whose node listing lags, DynamoDB's GSI, still
// returns it).
func nodeQuery(snap *storage.JobSnapshot, ev *structs.Evaluation) storage.NodeQuery {
	seen := map[string]bool{}
	var q storage.NodeQuery
	if ev.NodeID != "" {
		seen[ev.NodeID] = true
		q.Include = append(q.Include, ev.NodeID)
	}
	for _, a := range snap.Allocs {
		if a.NodeID != "" && !seen[a.NodeID] {
			seen[a.NodeID] = true
			q.Include = append(q.Include, a.NodeID)
		}
	}
	if snap.Job == nil || snap.Job.Stop {
		q.OnlyIncluded = true
		return q
	}
	q.NodePool, q.Datacenters = snap.Job.NodePool, snap.Job.Datacenters
	return q
}

// taintedNodes returns the nodes of the job's allocs that are not plain
// healthy: down, disconnected or draining, missing (nil: garbage
// collected), or ready again under an alloc still marked unknown.
func taintedNodes(allocs []*structs.Allocation, nodes map[string]*structs.Node) map[string]*structs.Node {
	out := map[string]*structs.Node{}
	for _, a := range allocs {
		if _, seen := out[a.NodeID]; seen || a.NodeID == "" {
			continue
		}
		n, ok := nodes[a.NodeID]
		switch {
		case !ok:
			out[a.NodeID] = nil
		case n.Status == structs.NodeStatusDown, n.Status == structs.NodeStatusDisconnected, n.Drain:
			out[a.NodeID] = n
		case a.ClientStatus == structs.AllocClientStatusUnknown && n.Status == structs.NodeStatusReady:
			out[a.NodeID] = n
		}
	}
	return out
}

// finishEval returns the evals written with the plan: the processed eval
// with its final status and metrics; when placements failed, the blocked
// eval that retries them once capacity appears (Nomad keeps one blocked
// eval per job: an older one is cancelled, and an eval that was itself
// unblocked and still cannot place is blocked again rather than copied);
// and older pending evals of the job, cancelled because this evaluation
// saw newer state (design §4.8).
func (e *Evaluator) finishEval(ev *structs.Evaluation, c *computed, out *outcome) []*structs.Evaluation {
	job, built, jobEvals := c.job, c.built, c.jobEvals
	done := ev.Copy()
	done.Status = structs.EvalStatusComplete
	done.StatusDescription = ""
	done.SnapshotIndex = c.snap.Index
	done.QueuedAllocations = built.QueuedAllocations
	done.DeploymentID = built.DeploymentID
	done.PlanAnnotations = c.annotations
	done.FailedTGAllocs = nil
	if len(built.FailedTGAllocs) > 0 {
		done.FailedTGAllocs = built.FailedTGAllocs
	}
	blocks := len(built.FailedTGAllocs) > 0 && c.blocks
	var writes []*structs.Evaluation
	if blocks {
		if ev.TriggeredBy == structs.EvalTriggerQueuedAllocs {
			done.Status = structs.EvalStatusBlocked
			done.StatusDescription = "created to place remaining allocations"
		} else {
			blocked := &structs.Evaluation{
				ID: structs.DeterministicID("blocked", ev.ID), Namespace: ev.Namespace, Priority: ev.Priority,
				Type: ev.Type, TriggeredBy: structs.EvalTriggerQueuedAllocs, JobID: ev.JobID,
				Status: structs.EvalStatusBlocked, StatusDescription: "created to place remaining allocations",
				PreviousEval: ev.ID, FailedTGAllocs: built.FailedTGAllocs, QueuedAllocations: built.QueuedAllocations,
			}
			if job != nil {
				blocked.JobModifyIndex = job.JobModifyIndex
			}
			done.BlockedEval = blocked.ID
			writes = append(writes, blocked)
		}
	}
	out.evalStatus = done.Status
	writes = append(writes, done)
	for _, other := range jobEvals {
		if other.ID == ev.ID || other.TerminalStatus() {
			continue
		}
		switch {
		case other.Status == structs.EvalStatusBlocked && blocks && other.ID != done.BlockedEval:
			// The newer blocked eval wins.
			c := other.Copy()
			c.Status = structs.EvalStatusCanceled
			c.StatusDescription = fmt.Sprintf("superseded by blocked eval of %s", ev.ID)
			writes = append(writes, c)
		case other.Status == structs.EvalStatusBlocked && !blocks:
			// Everything is placed: a blocked eval has nothing left to do.
			c := other.Copy()
			c.Status = structs.EvalStatusCanceled
			c.StatusDescription = fmt.Sprintf("evaluation %s placed all allocations", ev.ID)
			writes = append(writes, c)
		case other.Status == structs.EvalStatusPending && other.CreateIndex < ev.CreateIndex && !other.WaitUntil.After(e.now()):
			c := other.Copy()
			c.Status = structs.EvalStatusCanceled
			c.StatusDescription = fmt.Sprintf("canceled after more recent eval %s was processed", ev.ID)
			writes = append(writes, c)
		}
	}
	return writes
}

// afterCommit hands the new follow-up evals to the queue (they wait for
// their WaitUntil there) and, when the plan freed room, re-queues blocked
// evaluations of other jobs.
func (e *Evaluator) afterCommit(ctx context.Context, log *zap.Logger, out *outcome) {
	if len(out.followups) > 0 && e.Queue != nil {
		if err := e.Queue.Enqueue(ctx, out.followups...); err != nil {
			// The follow-ups are pending in the state store; the pending
			// sweep (or the next start) sends them.
			log.Warn("enqueue follow-up evaluations", zap.Error(err))
		}
	}
	if out.freedRoom {
		if _, err := Unblock(ctx, e.State, e.Queue, "capacity freed by a plan", log); err != nil {
			log.Warn("unblock evaluations", zap.Error(err))
		}
	}
}

// annotations are the reconciler's per-group decisions in Nomad's plan
// annotations shape.
func annotations(res *reconcile.Result) *structs.PlanAnnotations {
	if res == nil || len(res.DesiredTGUpdates) == 0 {
		return nil
	}
	out := &structs.PlanAnnotations{DesiredTGUpdates: make(map[string]*structs.DesiredUpdates, len(res.DesiredTGUpdates))}
	for tg, u := range res.DesiredTGUpdates {
		out.DesiredTGUpdates[tg] = &structs.DesiredUpdates{Ignore: u.Ignore, Place: u.Place, Migrate: u.Migrate, Stop: u.Stop,
			InPlaceUpdate: u.InPlaceUpdate, DestructiveUpdate: u.DestructiveUpdate, Canary: u.Canary, Preemptions: u.Preemptions}
	}
	return out
}
