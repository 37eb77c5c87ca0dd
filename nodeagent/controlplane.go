package nodeagent

import (
	"context"
	"errors"
	"time"

	"github.com/drover-sched/drover/structs"
)

// ControlPlane is what a node agent needs from drover's control plane. In
// the dev agent it is served in-process; otherwise over the server's HTTP
// API (or, on AWS, partly from the node's own DynamoDB items).
type ControlPlane interface {
	// RegisterNode creates or updates the node (fingerprint, drivers,
	// resources) and marks it ready. It returns the heartbeat TTL: the
	// agent must heartbeat well within it.
	RegisterNode(ctx context.Context, node *structs.Node) (ttl time.Duration, err error)
	// Heartbeat keeps the node alive and returns the TTL to use next.
	Heartbeat(ctx context.Context, nodeID string) (ttl time.Duration, err error)
	// AssignmentIndex returns the node's assignment index, which moves
	// whenever a committed plan or a server-side change touches one of the
	// node's allocations. It is cheap: the agent polls it.
	AssignmentIndex(ctx context.Context, nodeID string) (uint64, error)
	// Assignments returns every allocation assigned to the node that the
	// control plane still knows (terminal ones until garbage collected),
	// each with Job set to the job version it runs, and the assignment
	// index they were read at.
	Assignments(ctx context.Context, nodeID string) ([]*structs.Allocation, uint64, error)
	// UpdateAllocs reports client-side state for allocations of the node:
	// for each, ID plus ClientStatus, ClientDescription, TaskStates and
	// DeploymentStatus (health) with DeploymentID, the deployment that
	// health is for, are read; other fields are ignored. Health for
	// another deployment than the alloc's current one is ignored.
	UpdateAllocs(ctx context.Context, nodeID string, updates []*structs.Allocation) error
	// PreviousAlloc returns the allocation that allocID (an allocation
	// assigned to nodeID) replaces, with at least its ID, NodeID,
	// DesiredStatus and ClientStatus; nil when allocID replaces none or
	// that allocation no longer exists. The agent asks it while a sticky
	// or migrating alloc waits for a previous alloc on another node. An
	// error matching ErrPermanent (the node may not ask, or allocID is
	// unknown) makes the agent stop waiting; any other error is retried
	// with backoff.
	PreviousAlloc(ctx context.Context, nodeID, allocID string) (*structs.Allocation, error)
}

// ErrPermanent marks a control plane answer that asking again will not
// change: the request is refused (HTTP 400, 401, 403) or names something
// the control plane does not know (404, 410). Implementations of
// ControlPlane return errors that match it with errors.Is; every other
// error (transport, 5xx, throttling, a store failure) is transient.
var ErrPermanent = errors.New("permanent control plane error")
