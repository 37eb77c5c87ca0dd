package structs

import "time"

// Evaluation statuses, as in Nomad.
const (
	EvalStatusPending  = "pending"
	EvalStatusBlocked  = "blocked"
	EvalStatusComplete = "complete"
	EvalStatusFailed   = "failed"
	EvalStatusCanceled = "canceled"
)

// Evaluation triggers (TriggeredBy), Nomad's strings.
const (
	EvalTriggerJobRegister          = "job-register"
	EvalTriggerJobDeregister        = "job-deregister"
	EvalTriggerNodeUpdate           = "node-update"
	EvalTriggerNodeDrain            = "node-drain"
	EvalTriggerAllocStop            = "alloc-stop"
	EvalTriggerRetryFailedAlloc     = "alloc-failure"
	EvalTriggerQueuedAllocs         = "queued-allocs"
	EvalTriggerRollingUpdate        = "rolling-update"
	EvalTriggerDeploymentWatcher    = "deployment-watcher"
	EvalTriggerFailedFollowUp       = "failed-follow-up"
	EvalTriggerMaxDisconnectTimeout = "max-disconnect-timeout"
	EvalTriggerReconnect            = "reconnect"
	EvalTriggerMaxPlans             = "max-plan-attempts"
	EvalTriggerScaling              = "job-scaling"
	EvalTriggerPeriodicJob          = "periodic-job"
)

// Evaluation is a request to reconcile one job: created by a registration,
// a node or alloc change, a timer, or another evaluation (follow-ups and
// blocked evals). JSON shape as Nomad's.
type Evaluation struct {
	ID                string
	Namespace         string
	Priority          int
	Type              string // the job's type
	TriggeredBy       string
	JobID             string
	JobModifyIndex    uint64
	NodeID            string `json:",omitempty"`
	NodeModifyIndex   uint64 `json:",omitempty"`
	DeploymentID      string `json:",omitempty"`
	Status            string
	StatusDescription string
	// Wait is a relative delay (Nomad's older field); drover turns it into
	// WaitUntil when the eval is created.
	Wait time.Duration `json:",omitempty"`
	// WaitUntil: the eval must not be processed before this time.
	WaitUntil    time.Time
	NextEval     string
	PreviousEval string
	// BlockedEval is the eval created to place what this one could not.
	BlockedEval  string
	RelatedEvals []*EvaluationStub `json:",omitempty"`
	// FailedTGAllocs holds, per task group, why placements failed.
	FailedTGAllocs map[string]*AllocMetric `json:",omitempty"`
	// ClassEligibility and EscapedComputedClass are kept for Nomad
	// compatibility; drover unblocks on any capacity change.
	ClassEligibility     map[string]bool `json:",omitempty"`
	EscapedComputedClass bool
	QueuedAllocations    map[string]int `json:",omitempty"`
	// PlanAnnotations are the reconciler's decisions per task group for
	// the plan this eval committed, as Nomad shows in `eval status`.
	PlanAnnotations *PlanAnnotations `json:",omitempty"`
	// ScalingEvent, on an eval created by a scale request (`nomad job
	// scale`), is the request's event; GET /v1/job/:id/scale lists them.
	ScalingEvent *ScalingEvent `json:",omitempty"`
	// SnapshotIndex is the state index the eval was computed at.
	SnapshotIndex uint64
	CreateIndex   uint64
	ModifyIndex   uint64
	CreateTime    int64 // unix nanoseconds
	ModifyTime    int64 // unix nanoseconds
}

// EvaluationStub summarizes an eval in RelatedEvals, as Nomad's.
type EvaluationStub struct {
	ID                string
	Namespace         string
	Priority          int
	Type              string
	TriggeredBy       string
	JobID             string
	NodeID            string
	DeploymentID      string
	Status            string
	StatusDescription string
	WaitUntil         time.Time
	NextEval          string
	PreviousEval      string
	BlockedEval       string
	CreateIndex       uint64
	ModifyIndex       uint64
	CreateTime        int64
	ModifyTime        int64
}

// Stub returns the summary of the eval.
func (e *Evaluation) Stub() *EvaluationStub {
	return &EvaluationStub{
		ID: e.ID, Namespace: e.Namespace, Priority: e.Priority, Type: e.Type,
		TriggeredBy: e.TriggeredBy, JobID: e.JobID, NodeID: e.NodeID, DeploymentID: e.DeploymentID,
		Status: e.Status, StatusDescription: e.StatusDescription, WaitUntil: e.WaitUntil,
		NextEval: e.NextEval, PreviousEval: e.PreviousEval, BlockedEval: e.BlockedEval,
		CreateIndex: e.CreateIndex, ModifyIndex: e.ModifyIndex, CreateTime: e.CreateTime, ModifyTime: e.ModifyTime,
	}
}

// TerminalStatus reports whether the eval is finished (complete, failed or
// canceled): a terminal eval is never processed again.
func (e *Evaluation) TerminalStatus() bool {
	switch e.Status {
	case EvalStatusComplete, EvalStatusFailed, EvalStatusCanceled:
		return true
	}
	return false
}

// Copy returns a deep copy of the eval.
func (e *Evaluation) Copy() *Evaluation {
	if e == nil {
		return nil
	}
	c := *e
	if e.FailedTGAllocs != nil {
		c.FailedTGAllocs = make(map[string]*AllocMetric, len(e.FailedTGAllocs))
		for k, v := range e.FailedTGAllocs {
			m := *v
			c.FailedTGAllocs[k] = &m
		}
	}
	if e.QueuedAllocations != nil {
		c.QueuedAllocations = make(map[string]int, len(e.QueuedAllocations))
		for k, v := range e.QueuedAllocations {
			c.QueuedAllocations[k] = v
		}
	}
	if e.PlanAnnotations != nil {
		pa := &PlanAnnotations{DesiredTGUpdates: make(map[string]*DesiredUpdates, len(e.PlanAnnotations.DesiredTGUpdates))}
		for k, v := range e.PlanAnnotations.DesiredTGUpdates {
			d := *v
			pa.DesiredTGUpdates[k] = &d
		}
		c.PlanAnnotations = pa
	}
	c.RelatedEvals = nil
	return &c
}

// NamespacedJobID returns "namespace/job" for the eval's job.
func (e *Evaluation) NamespacedJobID() string {
	return NamespacedJobID(e.Namespace, e.JobID)
}

// PlanAnnotations explain a plan, Nomad's shape: what the reconciler
// decided per task group, and the allocs it preempts (none in drover).
type PlanAnnotations struct {
	DesiredTGUpdates map[string]*DesiredUpdates
	PreemptedAllocs  []*AllocListStub
}

// DesiredUpdates counts one task group's decisions, Nomad's names.
type DesiredUpdates struct {
	Ignore            uint64
	Place             uint64
	Migrate           uint64
	Stop              uint64
	InPlaceUpdate     uint64
	DestructiveUpdate uint64
	Canary            uint64
	Preemptions       uint64
	Reconnect         uint64
	Disconnect        uint64
	RescheduleNow     uint64
	RescheduleLater   uint64
}

// ScalingEvent is one scale request of a task group, Nomad's shape:
// counts before and after (Count nil: an event without a change), the
// caller's message, error flag and meta, and the eval it created. Time is
// unix nanoseconds.
type ScalingEvent struct {
	TaskGroup     string
	Time          uint64
	Count         *int64
	PreviousCount int64
	Message       string
	Error         bool
	Meta          map[string]any `json:",omitempty"`
	EvalID        *string
	CreateIndex   uint64
}
