// Package reconcile decides, for one service or batch job, what must change
// to move the job's allocations towards its specification: which names to
// place, which allocs to stop, update in place or replace, migrate or
// reschedule (now or later), and how the job's deployment progresses.
//
// It is a pure function of its Input: no I/O, no globals, no wall clock
// (Input.Now is the clock). Given the same input it returns the same
// Result. Where it is fed by the evaluate service, Result is turned into a
// plan by package placement.
package reconcile

import (
	"time"

	"github.com/drover-sched/drover/structs"
)

// UpdateKind is what an existing alloc needs to move to the current job
// version.
type UpdateKind int

const (
	// UpdateIgnore: nothing that matters changed; the alloc keeps running
	// as it is.
	UpdateIgnore UpdateKind = iota
	// UpdateInPlace: the alloc moves to the new job version without a
	// restart (for example a count or update-strategy change).
	UpdateInPlace
	// UpdateDestructive: the alloc must be stopped and replaced.
	UpdateDestructive
)

// String names the kind.
func (k UpdateKind) String() string {
	switch k {
	case UpdateIgnore:
		return "ignore"
	case UpdateInPlace:
		return "inplace"
	case UpdateDestructive:
		return "destructive"
	}
	return "unknown"
}

// UpdateFunc decides the update kind of an existing alloc against the
// current job and its group. It must be pure. For UpdateInPlace it may
// return the updated alloc (a copy moved to the new job version); nil means
// "the same alloc".
type UpdateFunc func(existing *structs.Allocation, newJob *structs.Job, newTG *structs.TaskGroup) (UpdateKind, *structs.Allocation)

// Input is everything the reconciler reads.
type Input struct {
	// Job is the current job version; nil when the job was purged. A
	// stopped job (Stop set) stops everything, like a purged one.
	Job *structs.Job
	// Namespace and JobID name the job even when Job is nil.
	Namespace string
	JobID     string
	// Batch selects batch-job semantics (completed allocs are not re-run).
	Batch bool
	// Allocs are every existing alloc of the job, terminal ones included.
	// Each alloc's Job must be the job version it runs: that copy, not the
	// current job, decides its reschedule policy and disconnect settings.
	Allocs []*structs.Allocation
	// Deployment is the job's latest deployment, or nil.
	Deployment *structs.Deployment
	// TaintedNodes holds the nodes of the allocs that are not plain
	// healthy: down, disconnected, draining, or ready again after a
	// disconnect. A nil value means the node no longer exists (its allocs
	// are lost). A node ID not in the map is healthy.
	TaintedNodes map[string]*structs.Node
	// SupportsDisconnectedClients turns on the disconnect / reconnect
	// logic for groups with max_client_disconnect.
	SupportsDisconnectedClients bool
	// EvalID and EvalPriority are those of the evaluation being processed.
	EvalID       string
	EvalPriority int
	// Now is the reconciler's clock for every time comparison.
	Now time.Time
	// Update decides ignore / in-place / destructive per alloc.
	Update UpdateFunc
}

// Placement is a new allocation to place (including canaries, reschedules,
// lost replacements and migrations; destructive updates are separate).
type Placement struct {
	// Name is the alloc name job.group[index].
	Name      string
	TaskGroup *structs.TaskGroup
	Canary    bool
	// PreviousAlloc is the alloc this placement replaces, or nil.
	PreviousAlloc *structs.Allocation
	// Reschedule marks the replacement of a failed alloc (it inherits the
	// reschedule tracker with one more event).
	Reschedule bool
	// Lost marks the replacement of an alloc on a down or disconnected
	// node.
	Lost bool
	// DowngradeNonCanary: place the non-canary job version MinJobVersion
	// instead of the current one (a canary rollout still unpromoted).
	DowngradeNonCanary bool
	MinJobVersion      uint64
}

// Stop is an existing alloc to stop.
type Stop struct {
	Alloc *structs.Allocation
	// ClientStatus, when set, is written with the stop (lost, failed).
	ClientStatus      string
	StatusDescription string
	// FollowupEvalID, when set, is the delayed eval attached to the stop.
	FollowupEvalID string
	// ForPlacement, when set, is the placement this stop exists for: the
	// alloc is stopped only to be replaced (a failed or forced alloc being
	// rescheduled). A plan must drop the stop when that placement cannot
	// be made, so the alloc stays as it was (desired run, with its
	// reschedule tracker) and a later evaluation replaces it, as later
	// Nomad releases do. Nomad 1.6 keeps the stop, and the replacement
	// placed later starts with no previous alloc and an empty tracker.
	ForPlacement *Placement
}

// DestructiveUpdate stops an alloc and places its replacement under the
// same name with the current job version.
type DestructiveUpdate struct {
	PlaceName             string
	PlaceTaskGroup        *structs.TaskGroup
	StopAlloc             *structs.Allocation
	StopStatusDescription string
}

// DesiredUpdates counts, per task group, what the reconciler decided, as
// Nomad reports in plan annotations.
type DesiredUpdates struct {
	Ignore            uint64
	Place             uint64
	Migrate           uint64
	Stop              uint64
	InPlaceUpdate     uint64
	DestructiveUpdate uint64
	Canary            uint64
	Preemptions       uint64
}

// Result is what the reconciler decided.
type Result struct {
	// Deployment is a deployment to create (or the existing one handed
	// back for an initializing deployment), or nil.
	Deployment *structs.Deployment
	// DeploymentUpdates change existing deployments' status, in the order
	// they were decided.
	DeploymentUpdates []*structs.DeploymentStatusUpdate

	Place             []*Placement
	DestructiveUpdate []*DestructiveUpdate
	InPlaceUpdate     []*structs.Allocation
	Stop              []*Stop

	// AttributeUpdates are allocs (keyed by ID) whose server-side
	// attributes changed: a failed alloc given the follow-up eval that
	// will reschedule it later.
	AttributeUpdates map[string]*structs.Allocation
	// DisconnectUpdates are allocs on disconnected nodes that become
	// unknown, with their timeout follow-up eval.
	DisconnectUpdates map[string]*structs.Allocation
	// ReconnectUpdates are allocs whose node came back and that are kept.
	ReconnectUpdates map[string]*structs.Allocation

	// DesiredTGUpdates counts decisions per task group.
	DesiredTGUpdates map[string]*DesiredUpdates
	// DesiredFollowupEvals are delayed evaluations to create, per group.
	DesiredFollowupEvals map[string][]*structs.Evaluation
}
