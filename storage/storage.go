// Package storage defines drover's state store in the domain's words (jobs
// and their versions, allocations, evaluations, deployments, nodes, plans)
// and the errors every backend returns. Backends live in sub-packages:
// storage/embedded (a bbolt file, the default home) and storage/dynamodb
// (the AWS home). storage/storagetest holds the ONE conformance suite
// every backend must pass.
//
// Consumers should not depend on Store as a whole: each defines the small
// interface it uses (the scheduler needs snapshots and CommitPlan, the HTTP
// API needs reads and registrations, ...), which Store satisfies.
package storage

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/drover-sched/drover/structs"
)

// ErrNotFound is returned (wrapped) when a looked-up object does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned (wrapped, usually in a *ConflictError) when an
// optimistic-concurrency condition fails: the job changed since the plan
// was computed, a node would be over-committed, an alloc already exists, an
// enforced index does not match. It is retryable by re-reading state and
// computing again, never by repeating the same write.
var ErrConflict = errors.New("conflict")

// ErrWrongNode is returned (wrapped) when a node reports on an allocation
// placed on another node.
var ErrWrongNode = errors.New("allocation belongs to another node")

// ErrRetryable marks transient failures of a backend (throttling, a
// transaction conflict with another in-flight write) where repeating the
// same write after a back-off is right.
var ErrRetryable = errors.New("retryable")

// ConflictError says which condition failed. errors.Is(err, ErrConflict)
// holds for it.
type ConflictError struct {
	// Reason names the failed condition, e.g. "job web changed: job modify
	// index 12, plan computed at 9" or "node n1 over-committed: memory".
	Reason string
}

// Error implements error.
func (e *ConflictError) Error() string { return "conflict: " + e.Reason }

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Conflictf returns a *ConflictError with a formatted reason.
func Conflictf(format string, args ...any) error {
	return &ConflictError{Reason: fmt.Sprintf(format, args...)}
}

// NotFoundf returns an error wrapping ErrNotFound with a formatted message.
func NotFoundf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrNotFound)
}

// Tables name the kinds of objects whose index a reader can wait on
// (Nomad's table indexes, returned as X-Nomad-Index).
const (
	TableJobs        = "jobs"
	TableAllocs      = "allocs"
	TableEvals       = "evals"
	TableDeployments = "deployments"
	TableNodes       = "nodes"
	// TableNamespaces and TableSchedulerConfig are the namespace objects
	// and the scheduler configuration, Nomad's table names.
	TableNamespaces      = "namespaces"
	TableSchedulerConfig = "scheduler_config"
	// TableACLTokens and TableACLPolicies are Nomad's ACL tables.
	TableACLTokens   = "acl_token"
	TableACLPolicies = "acl_policy"
	// TableServiceRegistrations is Nomad's table of native service
	// registrations.
	TableServiceRegistrations = "service_registrations"
)

// RegisterJobRequest registers a new version of a job together with the
// evaluation that will act on it.
type RegisterJobRequest struct {
	// Job is the specification to register. The store sets Version,
	// CreateIndex, ModifyIndex, JobModifyIndex, SubmitTime, Stable and
	// Status.
	Job *structs.Job
	// Eval is written pending in the same transaction; the store sets its
	// JobModifyIndex and indexes.
	Eval *structs.Evaluation
	// EnforceIndex makes the registration conditional on the job's current
	// JobModifyIndex being JobModifyIndex (0: the job must not exist), as
	// Nomad's `job run -check-index`. A mismatch is a conflict.
	EnforceIndex   bool
	JobModifyIndex uint64
	// SubmitTime is the registration time, unix nanoseconds.
	SubmitTime int64
	// Submission, when set, is the source the job was registered from,
	// kept with the version the registration writes (or keeps).
	Submission *structs.JobSubmission
}

// RegisterJobResult is what a registration wrote.
type RegisterJobResult struct {
	Job   *structs.Job
	Eval  *structs.Evaluation
	Index uint64
}

// DeregisterJobRequest stops (or purges) a job together with the
// evaluation that will stop its allocations.
type DeregisterJobRequest struct {
	Namespace string
	JobID     string
	// Purge deletes the job; otherwise a new version with Stop set is
	// written, as Nomad does. Purged jobs' versions stay until their
	// allocations are gone, so that those allocs still know their spec.
	Purge bool
	Eval  *structs.Evaluation
}

// NodeUsage is a node and what its allocations that hold resources use:
// CPU in MHz, memory and disk in MiB, and host ports. Stores keep it as a
// record per node, changed by the same transaction that places an alloc or
// makes one terminal (released exactly once), never recomputed from the
// allocs; it is the record the commit-time over-commit check reads.
type NodeUsage struct {
	Node *structs.Node
	Used structs.ComparableResources
	// Allocs counts the allocations holding resources on the node.
	Allocs int
	// Ports are the host ports those allocations hold
	// (AllocatedResources.HostPorts), ascending.
	Ports []int
}

// NodeQuery selects the nodes one evaluation reads (CandidateNodes): the
// candidates for its placements, and the nodes its job's allocations are
// on, whatever their state.
type NodeQuery struct {
	// NodePool is the job's node pool: "" is the default pool,
	// structs.NodePoolAll every pool.
	NodePool string
	// Datacenters are the job's datacenter patterns (globs, as
	// path.Match); none means every datacenter.
	Datacenters []string
	// Include names nodes returned whatever their status, eligibility,
	// pool or datacenter (the nodes the job's allocs are on: the
	// reconciler needs to know whether they are down or draining). IDs of
	// nodes that do not exist are left out.
	Include []string
	// OnlyIncluded asks for the Include nodes alone, no candidates (the
	// job is stopped or purged: nothing will be placed).
	OnlyIncluded bool
}

// Candidate reports whether n may take placements of a job q selects:
// ready (status ready, eligible, not draining), in the pool and in one of
// the datacenters.
func (q NodeQuery) Candidate(n *structs.Node) bool {
	return !q.OnlyIncluded && n.Ready() && q.InPoolAndDatacenters(n)
}

// InPoolAndDatacenters reports whether n is in q's node pool (empty: the
// default pool; "all": any) and in one of its datacenters (glob patterns;
// none: any), whatever n's status: the cheap part of feasibility, as
// Nomad checks it before it creates an evaluation for a node.
func (q NodeQuery) InPoolAndDatacenters(n *structs.Node) bool {
	pool, np := q.NodePool, n.NodePool
	if pool == "" {
		pool = structs.DefaultNodePool
	}
	if np == "" {
		np = structs.DefaultNodePool
	}
	if pool != structs.NodePoolAll && pool != np {
		return false
	}
	if len(q.Datacenters) == 0 {
		return true
	}
	for _, p := range q.Datacenters {
		if ok, err := path.Match(p, n.Datacenter); err == nil && ok {
			return true
		}
	}
	return false
}

// JobSnapshot is what an evaluation reads of one job, consistently: the
// current job (nil when purged), every allocation of the job (terminal ones
// included, each with Job set to the version it runs), and the job's latest
// deployment.
type JobSnapshot struct {
	Job        *structs.Job
	Allocs     []*structs.Allocation
	Deployment *structs.Deployment
	// Index is the state index the snapshot was read at.
	Index uint64
}

// ClientAllocChange is one allocation changed by a node's status report:
// the alloc after the change and the client status it had before.
type ClientAllocChange struct {
	Alloc              *structs.Allocation
	PrevClientStatus   string
	PrevDeploymentInfo *structs.AllocDeploymentStatus
}

// EvalFilter narrows an evaluation listing.
type EvalFilter struct {
	Namespace string // "" or "*": all namespaces
	Prefix    string // ID prefix
	JobID     string
	Status    string
}

// Store is everything a backend offers. See storage/storagetest for the
// behaviour every method must have.
type Store interface {
	// RegisterJob writes a job version and its pending eval atomically.
	// A registration whose specification equals the current one keeps the
	// version and JobModifyIndex (and still writes the eval), as Nomad.
	RegisterJob(ctx context.Context, req *RegisterJobRequest) (*RegisterJobResult, error)
	// DeregisterJob stops or purges a job and writes its eval atomically.
	// It returns ErrNotFound for an unknown job.
	DeregisterJob(ctx context.Context, req *DeregisterJobRequest) (*RegisterJobResult, error)
	// Job returns the current version of a job, or ErrNotFound.
	Job(ctx context.Context, namespace, jobID string) (*structs.Job, error)
	// JobVersion returns one version of a job, or ErrNotFound.
	JobVersion(ctx context.Context, namespace, jobID string, version uint64) (*structs.Job, error)
	// JobVersions returns the stored versions of a job, newest first.
	JobVersions(ctx context.Context, namespace, jobID string) ([]*structs.Job, error)
	// Jobs lists current jobs whose ID starts with prefix, in namespace
	// ("" or "*" for all), sorted by namespace then ID.
	Jobs(ctx context.Context, namespace, prefix string) ([]*structs.Job, error)
	// SystemJobs lists the current jobs of type system and sysbatch, of
	// every namespace (stopped ones included), sorted by namespace then
	// ID: what a node that joins may have to run. Its cost grows with
	// the number of such jobs, not with the number of all jobs.
	SystemJobs(ctx context.Context) ([]*structs.Job, error)

	// JobSnapshot reads what an evaluation of the job needs.
	JobSnapshot(ctx context.Context, namespace, jobID string) (*JobSnapshot, error)
	// CandidateNodes returns what an evaluation reads of the nodes: each
	// node q.Candidate accepts and each node q.Include names, once, with
	// its usage record, sorted by node ID. Its cost grows with the nodes
	// returned, never with the allocations of other jobs. The nodes may be
	// shared between readers (a cache validated by the nodes table
	// index): callers must not modify them. A node list slightly older
	// than the latest write is allowed: CommitPlan re-checks readiness
	// and capacity, and a conflict makes the evaluation read again.
	CandidateNodes(ctx context.Context, q NodeQuery) ([]*NodeUsage, error)
	// NodesWithUsage lists every node with its usage record, sorted by
	// node ID: for operators and checks, not for evaluations (whose read
	// is CandidateNodes).
	NodesWithUsage(ctx context.Context) ([]*NodeUsage, error)
	// CommitPlan applies a plan all-or-nothing and returns the index it was
	// written at. It fails with a *ConflictError when the job's
	// JobModifyIndex is no longer plan.JobModifyIndex, a placement's alloc
	// ID exists, a placement's node is missing or not ready, or a node
	// would be over-committed (the node's usage record, after the plan's
	// stops and with its placements, must fit the node's capacity, and no
	// host port of a placement may be held by another live alloc of the
	// node).
	CommitPlan(ctx context.Context, plan *structs.Plan) (uint64, error)

	// Alloc returns an allocation with its Job, or ErrNotFound.
	Alloc(ctx context.Context, allocID string) (*structs.Allocation, error)
	// AllocsByPrefix lists allocations whose ID starts with prefix.
	AllocsByPrefix(ctx context.Context, namespace, prefix string) ([]*structs.Allocation, error)
	// AllocsByJob lists a job's allocations (all of them, terminal too).
	AllocsByJob(ctx context.Context, namespace, jobID string) ([]*structs.Allocation, error)
	// AllocsByNode lists the allocations placed on a node.
	AllocsByNode(ctx context.Context, nodeID string) ([]*structs.Allocation, error)
	// AllocsByEval lists the allocations an evaluation placed.
	AllocsByEval(ctx context.Context, evalID string) ([]*structs.Allocation, error)
	// UpdateAllocsFromClient applies a node's report (client status and
	// description, task states, deployment health) to allocs of that node
	// and returns what changed. Health counts only when the report's
	// DeploymentID is the alloc's current deployment (see
	// ApplyClientUpdate). An alloc of another node is an error;
	// an unknown alloc is skipped (it may have been garbage collected).
	// An alloc that becomes terminal releases what it held from its
	// node's usage record in the same transaction.
	UpdateAllocsFromClient(ctx context.Context, nodeID string, updates []*structs.Allocation) ([]*ClientAllocChange, error)

	// UpsertEvals creates or replaces evaluations.
	UpsertEvals(ctx context.Context, evals ...*structs.Evaluation) (uint64, error)
	// Eval returns an evaluation, or ErrNotFound.
	Eval(ctx context.Context, evalID string) (*structs.Evaluation, error)
	// Evals lists evaluations matching the filter, sorted by CreateIndex
	// then ID.
	Evals(ctx context.Context, filter EvalFilter) ([]*structs.Evaluation, error)
	// EvalsByJob lists a job's evaluations, sorted by CreateIndex then ID.
	EvalsByJob(ctx context.Context, namespace, jobID string) ([]*structs.Evaluation, error)

	// Deployment returns a deployment, or ErrNotFound.
	Deployment(ctx context.Context, deploymentID string) (*structs.Deployment, error)
	// LatestDeployment returns the job's most recent deployment, or
	// ErrNotFound.
	LatestDeployment(ctx context.Context, namespace, jobID string) (*structs.Deployment, error)
	// DeploymentsByJob lists a job's deployments, newest first.
	DeploymentsByJob(ctx context.Context, namespace, jobID string) ([]*structs.Deployment, error)
	// Deployments lists deployments whose ID starts with prefix, in
	// namespace ("" or "*" for all), newest first.
	Deployments(ctx context.Context, namespace, prefix string) ([]*structs.Deployment, error)
	// ActiveDeployments lists the deployments not yet terminal
	// (structs.Deployment.Active) in every namespace, newest first: what
	// the deployment watcher looks at each tick. Its cost grows with the
	// active deployments, not with all the deployments kept.
	ActiveDeployments(ctx context.Context) ([]*structs.Deployment, error)
	// UpdateDeploymentStatus sets a deployment's status and writes evals
	// with it, atomically. A deployment that becomes successful marks its
	// job version stable. ErrNotFound for an unknown deployment.
	UpdateDeploymentStatus(ctx context.Context, u *structs.DeploymentStatusUpdate, evals ...*structs.Evaluation) (uint64, error)
	// PromoteDeployment marks the canaries of the named groups (every group
	// with canaries when groups is empty) promoted and writes evals with
	// it. ErrNotFound for an unknown deployment.
	PromoteDeployment(ctx context.Context, deploymentID string, groups []string, evals ...*structs.Evaluation) (uint64, error)

	// UpsertNode registers a node or updates its fingerprint. Status
	// becomes ready; scheduling eligibility and drain set by an operator
	// are kept across re-registrations. A new node, or one whose status
	// the write changes, gets ReactionsPending set to the write's index
	// (its ModifyIndex); otherwise the stored mark is kept.
	UpsertNode(ctx context.Context, node *structs.Node) (*structs.Node, error)
	// UpdateNodeStatus sets a node's status (ready, down, disconnected)
	// and, in the same write, ReactionsPending to the write's index (its
	// ModifyIndex). A node already in status is returned unchanged (its
	// mark too). ErrNotFound for an unknown node.
	UpdateNodeStatus(ctx context.Context, nodeID, status string, at int64) (*structs.Node, error)
	// NodeReactionsDone clears the node's ReactionsPending when it is
	// still index (a later status change's mark is left alone) and
	// returns the node. ErrNotFound for an unknown node.
	NodeReactionsDone(ctx context.Context, nodeID string, index uint64) (*structs.Node, error)
	// Node returns a node, or ErrNotFound.
	Node(ctx context.Context, nodeID string) (*structs.Node, error)
	// Nodes lists nodes whose ID starts with prefix, sorted by ID. The
	// nodes may be shared between readers (the node cache): callers must
	// not modify them.
	Nodes(ctx context.Context, prefix string) ([]*structs.Node, error)
	// NodeAssignmentIndex returns the index that moves whenever the
	// control plane changes an allocation of the node.
	NodeAssignmentIndex(ctx context.Context, nodeID string) (uint64, error)
	// UpdateNodeDrain starts (strategy set) or ends (nil) a node's drain.
	// Starting makes the node ineligible; ending keeps it ineligible
	// unless markEligible. Evals are written with it.
	UpdateNodeDrain(ctx context.Context, nodeID string, strategy *structs.DrainStrategy, markEligible bool, evals ...*structs.Evaluation) (*structs.Node, error)
	// UpdateNodeEligibility sets a node's scheduling eligibility.
	UpdateNodeEligibility(ctx context.Context, nodeID, eligibility string) (*structs.Node, error)
	// UpdateAllocDesiredTransitions sets allocations' desired transitions
	// (by alloc ID: migrate off a draining node, reschedule) and writes
	// evals with them, atomically. Unknown allocs are skipped.
	UpdateAllocDesiredTransitions(ctx context.Context, transitions map[string]*structs.DesiredTransition, evals ...*structs.Evaluation) (uint64, error)

	// GarbageCollect removes what is finished and older than olderThan:
	// dead jobs that are stopped or batch (with their versions, allocs,
	// evals and deployments), terminal allocs that are stopped or
	// replaced, terminal evals no remaining alloc points to, terminal
	// deployments other than a job's latest, down nodes without allocs.
	// An alloc removed while it still held resources releases them.
	GarbageCollect(ctx context.Context, olderThan time.Time) (*GCResult, error)

	// JobSubmission returns the source a job version was registered
	// from (Namespace, JobID, Version and JobModifyIndex set), or
	// ErrNotFound when that version has none.
	JobSubmission(ctx context.Context, namespace, jobID string, version uint64) (*structs.JobSubmission, error)

	// AppendNodeEvents adds events to a node, each stamped with the
	// write's index, keeping the newest structs.MaxRetainedNodeEvents.
	// UpsertNode keeps a node's events across re-registrations.
	// ErrNotFound for an unknown node.
	AppendNodeEvents(ctx context.Context, nodeID string, events ...*structs.NodeEvent) (*structs.Node, error)

	// UpsertNamespace creates a namespace or replaces its Description,
	// Quota and Meta (CreateIndex kept).
	UpsertNamespace(ctx context.Context, ns *structs.Namespace) (*structs.Namespace, error)
	// Namespace returns a stored namespace, or ErrNotFound.
	Namespace(ctx context.Context, name string) (*structs.Namespace, error)
	// Namespaces lists the stored namespaces, sorted by name.
	Namespaces(ctx context.Context) ([]*structs.Namespace, error)
	// DeleteNamespace removes a stored namespace; ErrNotFound if absent.
	DeleteNamespace(ctx context.Context, name string) error

	// SchedulerConfig returns the scheduler configuration, or
	// structs.DefaultSchedulerConfiguration (indexes 0) if never set.
	SchedulerConfig(ctx context.Context) (*structs.SchedulerConfiguration, error)
	// SetSchedulerConfig writes the scheduler configuration. With cas
	// set, only if the stored ModifyIndex is *cas (0: never set), as
	// Nomad's ?cas=; it reports whether it wrote and the write's index.
	SetSchedulerConfig(ctx context.Context, cfg *structs.SchedulerConfiguration, cas *uint64) (bool, uint64, error)

	// ACL tokens and policies (Nomad's ACL system) and node secrets.

	// ACLBootstrapIndex returns the index at which ACLs were last
	// bootstrapped, 0 if never (Nomad's bootstrap reset index).
	ACLBootstrapIndex(ctx context.Context) (uint64, error)
	// ACLBootstrap writes token (the bootstrap management token) and makes
	// the write's index the bootstrap index, only if the bootstrap index
	// is still expectIndex (0: never bootstrapped); else a *ConflictError
	// and nothing is written. It returns the token as stored.
	ACLBootstrap(ctx context.Context, token *structs.ACLToken, expectIndex uint64) (*structs.ACLToken, error)
	// UpsertACLPolicies creates or replaces policies by name in one write
	// (a replaced policy keeps its CreateIndex) and returns its index.
	UpsertACLPolicies(ctx context.Context, policies []*structs.ACLPolicy) (uint64, error)
	// ACLPolicy returns a policy, or ErrNotFound.
	ACLPolicy(ctx context.Context, name string) (*structs.ACLPolicy, error)
	// ACLPolicies lists the policies whose name starts with prefix,
	// sorted by name.
	ACLPolicies(ctx context.Context, prefix string) ([]*structs.ACLPolicy, error)
	// DeleteACLPolicies removes policies in one write; ErrNotFound (and
	// nothing removed) if one is absent.
	DeleteACLPolicies(ctx context.Context, names []string) (uint64, error)
	// UpsertACLTokens creates or replaces tokens by AccessorID in one
	// write. A created token needs AccessorID and SecretHash; a replaced
	// one keeps its SecretHash, CreateTime and CreateIndex. A token whose
	// SecretHash is another token's is a *ConflictError.
	UpsertACLTokens(ctx context.Context, tokens []*structs.ACLToken) (uint64, error)
	// ACLTokenByAccessor returns a token, or ErrNotFound.
	ACLTokenByAccessor(ctx context.Context, accessorID string) (*structs.ACLToken, error)
	// ACLTokenBySecretHash returns the token whose secret has this hash,
	// or ErrNotFound.
	ACLTokenBySecretHash(ctx context.Context, hash string) (*structs.ACLToken, error)
	// ACLTokens lists the tokens whose accessor ID starts with prefix,
	// sorted by CreateIndex then AccessorID.
	ACLTokens(ctx context.Context, prefix string) ([]*structs.ACLToken, error)
	// DeleteACLTokens removes tokens (both lookups) in one write;
	// ErrNotFound (and nothing removed) if one is absent.
	DeleteACLTokens(ctx context.Context, accessorIDs []string) (uint64, error)
	// BindNodeSecret binds a node ID to the hash of the node's secret
	// (Nomad's node SecretID) the first time; later calls with the same
	// hash succeed and with another are a *ConflictError.
	BindNodeSecret(ctx context.Context, nodeID, secretHash string) error
	// NodeSecretHash returns the hash bound to a node, or ErrNotFound.
	NodeSecretHash(ctx context.Context, nodeID string) (string, error)

	// Service registrations (Nomad's native service discovery). A
	// registration is served only while its alloc is live
	// (structs.ServiceRegistrationLive): the write that makes an alloc
	// terminal or unknown removes its registrations (DynamoDB: see its
	// README), and so does a node going down.

	// UpsertServiceRegistrations writes registrations reported by nodeID's
	// agent, in one write. A registration for another node's alloc is an
	// error (ErrWrongNode); one whose alloc is missing or not live is
	// skipped, so that a late report cannot bring it back. A registration
	// equal to the stored one is left as is; a changed one keeps its
	// CreateIndex.
	UpsertServiceRegistrations(ctx context.Context, nodeID string, regs []*structs.ServiceRegistration) (uint64, error)
	// DeleteServiceRegistrations removes registrations of nodeID's allocs
	// by ID; unknown IDs, and another node's registrations, are skipped.
	DeleteServiceRegistrations(ctx context.Context, nodeID string, ids []string) (uint64, error)
	// DeleteServiceRegistration removes one registration of a service
	// (Nomad's DELETE /v1/service/:name/:id), or ErrNotFound.
	DeleteServiceRegistration(ctx context.Context, namespace, serviceName, id string) (uint64, error)
	// ServiceRegistrations lists the registrations in namespace ("" or "*":
	// all), sorted by namespace, service name and ID.
	ServiceRegistrations(ctx context.Context, namespace string) ([]*structs.ServiceRegistration, error)
	// ServiceRegistrationsByName lists one service's registrations in
	// namespace, sorted by ID (none: an empty list, no error).
	ServiceRegistrationsByName(ctx context.Context, namespace, serviceName string) ([]*structs.ServiceRegistration, error)

	// Index returns the index of the last write to a table (Table*
	// constants); 0 if never written.
	Index(ctx context.Context, table string) (uint64, error)

	// Close releases the backend.
	Close() error
}

// GCResult counts what a garbage collection removed.
type GCResult struct {
	Jobs, Allocs, Evals, Deployments, Nodes int
}

// Watcher is offered by backends that can signal writes, so that blocking
// queries wake at once instead of polling.
type Watcher interface {
	// WatchTables returns a channel closed at the next write to any of
	// the tables.
	WatchTables(tables ...string) <-chan struct{}
}
