package structs

// Plan is everything one evaluation decided, committed all-or-nothing (or,
// on DynamoDB, in atomic chunks that a re-run completes). It names changes,
// not whole objects, so that it never overwrites what node agents report
// (client status, task states, health) between snapshot and commit.
type Plan struct {
	// EvalID is the evaluation that computed the plan.
	EvalID    string
	Namespace string
	JobID     string
	Priority  int
	// JobModifyIndex is the job's JobModifyIndex the plan was computed
	// from (0: the job did not exist). The commit fails with a conflict if
	// the job's current one differs: the plan is stale.
	JobModifyIndex uint64
	// SnapshotIndex is the state index the plan was computed at.
	SnapshotIndex uint64

	// Placements are new allocations. Their IDs are deterministic
	// (AllocIDForPlacement); a store writes one only if its ID is absent.
	// One whose PreviousAllocation is set also sets NextAllocation on the
	// previous alloc.
	Placements []*Allocation
	// Stops stop or evict existing allocations.
	Stops []*AllocStop
	// Updates change server-owned fields of existing allocations that keep
	// running (in-place updates, follow-up eval attachments, disconnect and
	// reconnect markers).
	Updates []*AllocUpdate

	// Deployment is created or replaced with the plan (nil: none).
	Deployment *Deployment
	// DeploymentUpdates change the status of existing deployments.
	DeploymentUpdates []*DeploymentStatusUpdate

	// Evals are created or updated with the plan: follow-up and blocked
	// evaluations, and the processed eval's own final status, so that a
	// redelivered eval finds itself terminal exactly when its plan landed.
	Evals []*Evaluation
}

// IsNoOp reports whether the plan changes no allocation or deployment.
func (p *Plan) IsNoOp() bool {
	return len(p.Placements) == 0 && len(p.Stops) == 0 && len(p.Updates) == 0 &&
		p.Deployment == nil && len(p.DeploymentUpdates) == 0
}

// AllocStop stops (or evicts) an existing allocation.
type AllocStop struct {
	AllocID            string
	NodeID             string
	DesiredStatus      string // AllocDesiredStatusStop or AllocDesiredStatusEvict
	DesiredDescription string
	// ClientStatus, when set, is written too: "lost" for allocs on down
	// nodes, "failed" for failed reconnects.
	ClientStatus string
	// FollowupEvalID, when set, attaches the delayed eval that will act
	// after the stop (stop_after_client_disconnect).
	FollowupEvalID string
}

// AllocUpdate changes server-owned fields of an allocation that keeps its
// desired status. Nil fields are left alone.
type AllocUpdate struct {
	AllocID string
	NodeID  string
	// JobVersion moves the alloc to a newer job version (in-place update).
	JobVersion *uint64
	// DeploymentID attaches the alloc to a deployment (in-place update
	// within a rollout); the alloc's deployment health is reset.
	DeploymentID *string
	// FollowupEvalID attaches a delayed reschedule eval.
	FollowupEvalID *string
	// ClientStatus is set by the control plane for disconnects (unknown)
	// and reconnects; the transition is recorded in AllocStates.
	ClientStatus string
	// DesiredTransition replaces the alloc's desired transition.
	DesiredTransition *DesiredTransition
}
