// Package controlplane holds drover's core control-plane services, the ones
// the HTTP API and node agents call: registering and stopping jobs (a job
// version and its evaluation in one write, then the eval to the queue),
// registering nodes and heartbeats, and node status reports with their
// reactions (a failed alloc creates an evaluation; a finished one frees
// room for blocked evaluations). It knows nothing of HTTP or of which home
// it runs in.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Store is what the services need of the state store.
type Store interface {
	RegisterJob(ctx context.Context, req *storage.RegisterJobRequest) (*storage.RegisterJobResult, error)
	DeregisterJob(ctx context.Context, req *storage.DeregisterJobRequest) (*storage.RegisterJobResult, error)
	Job(ctx context.Context, namespace, jobID string) (*structs.Job, error)
	UpsertNode(ctx context.Context, node *structs.Node) (*structs.Node, error)
	UpdateNodeStatus(ctx context.Context, nodeID, status string, at int64) (*structs.Node, error)
	NodeReactionsDone(ctx context.Context, nodeID string, index uint64) (*structs.Node, error)
	Node(ctx context.Context, nodeID string) (*structs.Node, error)
	NodeAssignmentIndex(ctx context.Context, nodeID string) (uint64, error)
	AllocsByNode(ctx context.Context, nodeID string) ([]*structs.Allocation, error)
	Alloc(ctx context.Context, allocID string) (*structs.Allocation, error)
	UpdateAllocsFromClient(ctx context.Context, nodeID string, updates []*structs.Allocation) ([]*storage.ClientAllocChange, error)
	UpsertEvals(ctx context.Context, evals ...*structs.Evaluation) (uint64, error)
	Eval(ctx context.Context, evalID string) (*structs.Evaluation, error)
	Evals(ctx context.Context, filter storage.EvalFilter) ([]*structs.Evaluation, error)
	Nodes(ctx context.Context, prefix string) ([]*structs.Node, error)
	AllocsByJob(ctx context.Context, namespace, jobID string) ([]*structs.Allocation, error)
	JobVersions(ctx context.Context, namespace, jobID string) ([]*structs.Job, error)
	JobVersion(ctx context.Context, namespace, jobID string, version uint64) (*structs.Job, error)
	Deployment(ctx context.Context, deploymentID string) (*structs.Deployment, error)
	Deployments(ctx context.Context, namespace, prefix string) ([]*structs.Deployment, error)
	ActiveDeployments(ctx context.Context) ([]*structs.Deployment, error)
	UpdateDeploymentStatus(ctx context.Context, u *structs.DeploymentStatusUpdate, evals ...*structs.Evaluation) (uint64, error)
	PromoteDeployment(ctx context.Context, deploymentID string, groups []string, evals ...*structs.Evaluation) (uint64, error)
	UpdateNodeDrain(ctx context.Context, nodeID string, strategy *structs.DrainStrategy, markEligible bool, evals ...*structs.Evaluation) (*structs.Node, error)
	UpdateNodeEligibility(ctx context.Context, nodeID, eligibility string) (*structs.Node, error)
	UpdateAllocDesiredTransitions(ctx context.Context, transitions map[string]*structs.DesiredTransition, evals ...*structs.Evaluation) (uint64, error)
	GarbageCollect(ctx context.Context, olderThan time.Time) (*storage.GCResult, error)
	AppendNodeEvents(ctx context.Context, nodeID string, events ...*structs.NodeEvent) (*structs.Node, error)
	JobSubmission(ctx context.Context, namespace, jobID string, version uint64) (*structs.JobSubmission, error)
	Namespace(ctx context.Context, name string) (*structs.Namespace, error)
	Namespaces(ctx context.Context) ([]*structs.Namespace, error)
	UpsertNamespace(ctx context.Context, ns *structs.Namespace) (*structs.Namespace, error)
	DeleteNamespace(ctx context.Context, name string) error
	Jobs(ctx context.Context, namespace, prefix string) ([]*structs.Job, error)
	SystemJobs(ctx context.Context) ([]*structs.Job, error)
	SchedulerConfig(ctx context.Context) (*structs.SchedulerConfiguration, error)
	SetSchedulerConfig(ctx context.Context, cfg *structs.SchedulerConfiguration, cas *uint64) (bool, uint64, error)
	UpsertServiceRegistrations(ctx context.Context, nodeID string, regs []*structs.ServiceRegistration) (uint64, error)
	DeleteServiceRegistrations(ctx context.Context, nodeID string, ids []string) (uint64, error)
	ServiceRegistrations(ctx context.Context, namespace string) ([]*structs.ServiceRegistration, error)
	ServiceRegistrationsByName(ctx context.Context, namespace, serviceName string) ([]*structs.ServiceRegistration, error)
	Index(ctx context.Context, table string) (uint64, error)
}

// DefaultHeartbeatTTL is the heartbeat TTL handed to node agents (Nomad's
// minimum heartbeat TTL is 10 s).
const DefaultHeartbeatTTL = 10 * time.Second

// Service is the control plane's core.
type Service struct {
	store        Store
	queue        scheduler.Queue
	log          *zap.Logger
	now          func() time.Time
	heartbeatTTL time.Duration
	planner      Planner
	configHook   func()

	mu         sync.Mutex
	heartbeats map[string]time.Time // node ID → last heartbeat
}

// Config configures a Service.
type Config struct {
	Store  Store
	Queue  scheduler.Queue
	Logger *zap.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// HeartbeatTTL is handed to node agents (default 10 s).
	HeartbeatTTL time.Duration
	// Planner, when set, answers job plans (the evaluator, dry-running).
	Planner Planner
	// SchedulerConfigChanged, when set, is called after the scheduler
	// configuration is written (the embedded home drops the evaluator's
	// cached copy, so a pause takes effect at once).
	SchedulerConfigChanged func()
}

// New returns a Service.
func New(cfg Config) *Service {
	s := &Service{store: cfg.Store, queue: cfg.Queue, log: cfg.Logger, now: cfg.Now,
		heartbeatTTL: cfg.HeartbeatTTL, heartbeats: map[string]time.Time{}, planner: cfg.Planner,
		configHook: cfg.SchedulerConfigChanged}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.heartbeatTTL <= 0 {
		s.heartbeatTTL = DefaultHeartbeatTTL
	}
	return s
}

// RegisterRequest is a job registration, as Nomad's JobRegisterRequest.
type RegisterRequest struct {
	Job *structs.Job
	// EnforceIndex registers only if the job's JobModifyIndex is
	// JobModifyIndex (0: only if it does not exist).
	EnforceIndex   bool
	JobModifyIndex uint64
	// EvalPriority overrides the job's priority for this evaluation.
	EvalPriority int
	// PreserveCounts keeps the current count of every group the job
	// already has (Nomad's `job run -preserve-counts`).
	PreserveCounts bool
	// Warnings found while decoding, handed back in the response.
	Warnings []string
	// Submission is the job's source as the CLI sent it (nil: none); one
	// over structs.MaxJobSourceBytes is discarded with a warning, as Nomad.
	Submission *structs.JobSubmission
}

// RegisterResponse is Nomad's JobRegisterResponse.
type RegisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Warnings        string
	Index           uint64
}

// RegisterJob writes a new job version and its pending evaluation in one
// transaction, then sends the evaluation to the queue. If the process dies
// between the two, the eval is pending in the store and is sent again at
// the next start (embedded) or by the pending-eval sweep (AWS).
func (s *Service) RegisterJob(ctx context.Context, req *RegisterRequest) (*RegisterResponse, error) {
	return s.register(ctx, req, structs.EvalTriggerJobRegister, nil)
}

// register writes a job version with an eval triggered by trigger, which
// carries the scaling event when there is one.
func (s *Service) register(ctx context.Context, req *RegisterRequest, trigger string, scaling *structs.ScalingEvent) (*RegisterResponse, error) {
	job := req.Job
	if err := s.checkNamespace(ctx, job); err != nil {
		return nil, err
	}
	if req.PreserveCounts {
		job = s.withPreservedCounts(ctx, job)
	}
	prio := job.Priority
	if req.EvalPriority > 0 {
		prio = req.EvalPriority
	}
	ev := s.newEval(job.Namespace, job.ID, job.Type, prio, trigger)
	ev.ScalingEvent = scaling
	warnings := req.Warnings
	sub := req.Submission
	if size := sub.Size(); size > structs.MaxJobSourceBytes {
		warnings = append(warnings, fmt.Sprintf("job source size of %s exceeds maximum of %s and will be discarded",
			siBytes(size), siBytes(structs.MaxJobSourceBytes)))
		sub = nil
	}
	res, err := s.store.RegisterJob(ctx, &storage.RegisterJobRequest{
		Job: job, Eval: ev, EnforceIndex: req.EnforceIndex, JobModifyIndex: req.JobModifyIndex,
		SubmitTime: s.now().UnixNano(), Submission: sub,
	})
	if err != nil {
		return nil, fmt.Errorf("register job %s: %w", job.ID, err)
	}
	s.log.Info("job registered", zap.String("job_id", job.ID), zap.String("namespace", job.Namespace),
		zap.Uint64("version", res.Job.Version), zap.String("eval_id", res.Eval.ID))
	s.enqueue(ctx, res.Eval)
	return &RegisterResponse{EvalID: res.Eval.ID, EvalCreateIndex: res.Eval.CreateIndex,
		JobModifyIndex: res.Job.JobModifyIndex, Index: res.Index, Warnings: strings.Join(warnings, "\n")}, nil
}

// DeregisterJob stops (or purges) a job and sends its evaluation.
func (s *Service) DeregisterJob(ctx context.Context, namespace, jobID string, purge bool) (*RegisterResponse, error) {
	cur, err := s.store.Job(ctx, namespace, jobID)
	if err != nil {
		return nil, fmt.Errorf("deregister job %s: %w", jobID, err)
	}
	ev := s.newEval(namespace, jobID, cur.Type, cur.Priority, structs.EvalTriggerJobDeregister)
	res, err := s.store.DeregisterJob(ctx, &storage.DeregisterJobRequest{Namespace: namespace, JobID: jobID, Purge: purge, Eval: ev})
	if err != nil {
		return nil, fmt.Errorf("deregister job %s: %w", jobID, err)
	}
	s.log.Info("job deregistered", zap.String("job_id", jobID), zap.String("namespace", namespace),
		zap.Bool("purge", purge), zap.String("eval_id", res.Eval.ID))
	s.enqueue(ctx, res.Eval)
	return &RegisterResponse{EvalID: res.Eval.ID, EvalCreateIndex: res.Eval.CreateIndex,
		JobModifyIndex: res.Job.JobModifyIndex, Index: res.Index}, nil
}

// withPreservedCounts returns job with the counts of the groups the
// current version already has.
func (s *Service) withPreservedCounts(ctx context.Context, job *structs.Job) *structs.Job {
	cur, err := s.store.Job(ctx, job.Namespace, job.ID)
	if err != nil {
		return job
	}
	out := job.Copy()
	for _, tg := range out.TaskGroups {
		if old := cur.LookupTaskGroup(tg.Name); old != nil {
			tg.Count = old.Count
		}
	}
	return out
}

func (s *Service) newEval(namespace, jobID, jobType string, priority int, trigger string) *structs.Evaluation {
	now := s.now().UnixNano()
	return &structs.Evaluation{
		ID: structs.GenerateUUID(), Namespace: namespace, JobID: jobID, Type: jobType, Priority: priority,
		TriggeredBy: trigger, Status: structs.EvalStatusPending, CreateTime: now, ModifyTime: now,
	}
}

func (s *Service) enqueue(ctx context.Context, evals ...*structs.Evaluation) {
	if s.queue == nil || len(evals) == 0 {
		return
	}
	if err := s.queue.Enqueue(ctx, evals...); err != nil {
		s.log.Warn("enqueue evaluations; they stay pending in the state store", zap.Error(err))
	}
}

// RestorePending sends every pending evaluation in the store to the queue
// (delayed ones wait for their WaitUntil there). The embedded agent calls
// it at start, so that evaluations pending at shutdown run again.
func (s *Service) RestorePending(ctx context.Context) (int, error) {
	pending, err := s.store.Evals(ctx, storage.EvalFilter{Status: structs.EvalStatusPending})
	if err != nil {
		return 0, fmt.Errorf("list pending evals: %w", err)
	}
	if s.queue != nil && len(pending) > 0 {
		if err := s.queue.Enqueue(ctx, pending...); err != nil {
			return 0, fmt.Errorf("enqueue pending evals: %w", err)
		}
	}
	return len(pending), nil
}

// RegisterNode implements nodeagent.ControlPlane: it writes the node as
// ready and re-queues blocked evaluations, which may fit on it now. A new
// node, or one that was not ready (or whose earlier status change's
// reactions are still pending), gets its status change's reactions
// (reactToStatus); a known node whose fingerprint changed gets the
// system jobs it may run now evaluated.
func (s *Service) RegisterNode(ctx context.Context, node *structs.Node) (time.Duration, error) {
	if node.ID == "" {
		return 0, fmt.Errorf("register node: missing node ID")
	}
	prev, err := s.store.Node(ctx, node.ID)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return 0, fmt.Errorf("register node %s: %w", node.ID, err)
	}
	n := node.Copy()
	n.Status = structs.NodeStatusReady
	n.StatusUpdatedAt = s.now().Unix()
	if n.NodePool == "" {
		n.NodePool = structs.DefaultNodePool
	}
	if n.Datacenter == "" {
		n.Datacenter = structs.DefaultDatacenter
	}
	if n.NodeResources == nil {
		n.NodeResources = &structs.NodeResources{}
	}
	if n.ReservedResources == nil {
		// Nomad's clients read it without a nil check.
		n.ReservedResources = &structs.NodeReservedResources{}
	}
	stored, err := s.store.UpsertNode(ctx, n)
	if err != nil {
		return 0, fmt.Errorf("register node %s: %w", node.ID, err)
	}
	switch {
	case prev == nil:
		s.nodeEvent(ctx, node.ID, structs.NodeEventSubsystemCluster, structs.NodeEventRegistered, nil)
	case prev.Status != structs.NodeStatusReady:
		s.nodeEvent(ctx, node.ID, structs.NodeEventSubsystemCluster, structs.NodeEventReregistered, map[string]string{"previous_status": prev.Status})
	}
	s.markHeartbeat(node.ID)
	s.log.Info("node registered", zap.String("node_id", node.ID), zap.String("node_name", node.Name),
		zap.String("datacenter", n.Datacenter), zap.String("node_pool", n.NodePool))
	if stored.ReactionsPending != 0 {
		if err := s.reactToStatus(ctx, stored); err != nil {
			return 0, fmt.Errorf("register node %s: %w", node.ID, err)
		}
		return s.heartbeatTTL, nil
	}
	if prev == nil || fingerprintChanged(prev, n) {
		// A node whose fingerprint changed: the system jobs it may run
		// now are evaluated for it.
		if err := s.evaluateSystemJobs(ctx, node.ID, structs.EvalTriggerNodeUpdate, nil); err != nil {
			return 0, err
		}
	}
	s.unblock(ctx, "node registered")
	return s.heartbeatTTL, nil
}

// Heartbeat implements nodeagent.ControlPlane. A node that was marked down
// or disconnected becomes ready again, and the reactions run
// (reactToStatus): an evaluation of each job with allocs on it (the
// reconnect of a disconnected node's allocs) and of each system job it
// may run, and blocked evaluations re-queued.
//
// The status write leaves the node's ReactionsPending mark set until the
// reactions have run, so a heartbeat that finds the node ready with the
// mark still set runs them again: the control plane that wrote the status
// died (or the answer was lost) before they ran, and the system jobs
// would never run there (found by the chaos suite, seed 1309). The mark
// is in the store, so this holds across processes and restarts (a Lambda
// cold start, another server). A steady node's heartbeat writes nothing.
func (s *Service) Heartbeat(ctx context.Context, nodeID string) (time.Duration, error) {
	n, err := s.store.Node(ctx, nodeID)
	if err != nil {
		return 0, fmt.Errorf("heartbeat of node %s: %w", nodeID, err)
	}
	s.markHeartbeat(nodeID)
	switch {
	case n.Status != structs.NodeStatusReady:
		was := n.Status
		if n, err = s.store.UpdateNodeStatus(ctx, nodeID, structs.NodeStatusReady, s.now().Unix()); err != nil {
			return 0, fmt.Errorf("heartbeat of node %s: %w", nodeID, err)
		}
		s.log.Info("node ready again", zap.String("node_id", nodeID), zap.String("was", was))
		s.nodeEvent(ctx, nodeID, structs.NodeEventSubsystemCluster, structs.NodeEventHeartbeatReturned, nil)
	case n.ReactionsPending == 0:
		return s.heartbeatTTL, nil
	default:
		s.log.Info("node status change's reactions pending, done again", zap.String("node_id", nodeID),
			zap.String("status", n.Status), zap.Uint64("status_index", n.ReactionsPending))
	}
	if err := s.reactToStatus(ctx, n); err != nil {
		return 0, fmt.Errorf("heartbeat of node %s: %w", nodeID, err)
	}
	return s.heartbeatTTL, nil
}

// RedoNodeReactions runs the reactions of the node's last status change
// again when its ReactionsPending mark says they have not all run (the
// control plane that wrote the status died before), and does nothing
// otherwise. The AWS sweeper calls it for each node its listing shows
// marked (agents do not call Heartbeat there: the sweeper is what writes
// a node ready). Running them twice is harmless: an extra evaluation
// finds nothing to do, re-queued blocked evals block again.
func (s *Service) RedoNodeReactions(ctx context.Context, nodeID string) error {
	n, err := s.store.Node(ctx, nodeID)
	if err != nil {
		return fmt.Errorf("pending reactions of node %s: %w", nodeID, err)
	}
	if n.ReactionsPending == 0 {
		return nil
	}
	s.log.Info("node status change's reactions pending, done again", zap.String("node_id", nodeID),
		zap.String("status", n.Status), zap.Uint64("status_index", n.ReactionsPending))
	if err := s.reactToStatus(ctx, n); err != nil {
		return fmt.Errorf("pending reactions of node %s: %w", nodeID, err)
	}
	return nil
}

// reactToStatus runs the reactions to node n's status change, as Nomad
// does when a node's status changes: an evaluation of each job with allocs
// on it and of each system job it may run (createNodeEvals), and, when it
// is ready (back, or registered), the blocked evaluations re-queued. Then
// it clears the node's ReactionsPending mark, unless a later status change
// replaced it. An error leaves the mark set, for the next heartbeat or
// sweep (RedoNodeReactions).
func (s *Service) reactToStatus(ctx context.Context, n *structs.Node) error {
	if err := s.createNodeEvals(ctx, n.ID, structs.EvalTriggerNodeUpdate); err != nil {
		return err
	}
	if n.Status == structs.NodeStatusReady {
		if _, err := scheduler.Unblock(ctx, s.store, s.queue, "node "+n.ID+" ready", s.log); err != nil {
			return fmt.Errorf("re-queue blocked evaluations: %w", err)
		}
	}
	if n.ReactionsPending == 0 {
		return nil
	}
	if _, err := s.store.NodeReactionsDone(ctx, n.ID, n.ReactionsPending); err != nil {
		return err
	}
	return nil
}

func (s *Service) markHeartbeat(nodeID string) {
	s.mu.Lock()
	s.heartbeats[nodeID] = s.now()
	s.mu.Unlock()
}

// AssignmentIndex implements nodeagent.ControlPlane.
func (s *Service) AssignmentIndex(ctx context.Context, nodeID string) (uint64, error) {
	return s.store.NodeAssignmentIndex(ctx, nodeID)
}

// Assignments implements nodeagent.ControlPlane. The index is read first,
// so a change that lands while the allocs are read moves the index again
// and the agent reads once more.
func (s *Service) Assignments(ctx context.Context, nodeID string) ([]*structs.Allocation, uint64, error) {
	idx, err := s.store.NodeAssignmentIndex(ctx, nodeID)
	if err != nil {
		return nil, 0, fmt.Errorf("assignment index of node %s: %w", nodeID, err)
	}
	allocs, err := s.store.AllocsByNode(ctx, nodeID)
	if err != nil {
		return nil, 0, fmt.Errorf("assignments of node %s: %w", nodeID, err)
	}
	return allocs, idx, nil
}

// UpdateAllocs implements nodeagent.ControlPlane: it records the node's
// report, then reacts as Nomad's node endpoint does: an alloc that failed
// while wanted creates an evaluation of its job (triggered by
// alloc-failure), and an alloc that finished frees room, so blocked
// evaluations are re-queued.
func (s *Service) UpdateAllocs(ctx context.Context, nodeID string, updates []*structs.Allocation) error {
	changes, err := s.store.UpdateAllocsFromClient(ctx, nodeID, updates)
	if err != nil {
		return err
	}
	failedJobs := map[string]*structs.Allocation{}
	freed, health := s.redoLostReactions(ctx, updates, changes, failedJobs)
	for _, c := range changes {
		a := c.Alloc
		wasTerminal := (&structs.Allocation{ClientStatus: c.PrevClientStatus}).ClientTerminalStatus()
		if a.ClientTerminalStatus() && !wasTerminal {
			freed = true
			s.log.Info("allocation finished", zap.String("alloc_id", a.ID), zap.String("job_id", a.JobID),
				zap.String("node_id", nodeID), zap.String("client_status", a.ClientStatus))
		}
		if a.ClientStatus == structs.AllocClientStatusFailed && c.PrevClientStatus != structs.AllocClientStatusFailed &&
			a.DesiredStatus == structs.AllocDesiredStatusRun {
			failedJobs[structs.NamespacedJobID(a.Namespace, a.JobID)] = a
		}
	}
	// A failed alloc of a wanted job is rescheduled by a new evaluation.
	if err := s.createJobEvals(ctx, failedJobs, structs.EvalTriggerRetryFailedAlloc, nodeID, true); err != nil {
		return err
	}
	if err := s.reactToHealth(ctx, append(changes[:len(changes):len(changes)], health...)); err != nil {
		return err
	}
	if freed {
		s.unblock(ctx, "capacity freed on node "+nodeID)
	}
	return nil
}

// redoLostReactions handles a report the node sends again because its
// first sending failed: the store may have written it and the process
// died (or its answer was lost) before the reactions ran, so this time
// nothing changes and the reactions would never run (found by the chaos
// suite). For each update that changed nothing, the stored alloc is
// looked at: a terminal one may have freed room (freed: the caller
// unblocks), a failed one still wanted, not yet replaced and with no
// follow-up eval attached gets its job into failedJobs, and one whose
// health in a running deployment is what the update reports is returned
// in health, as the change the first sending made, for reactToHealth (an
// unhealthy alloc left in a running deployment is otherwise held back by
// the reconciler for the deployment's health logic, and without a
// progress deadline nothing else fails the deployment or replaces it).
// Doing this when the first reactions did run is harmless: an extra
// evaluation of the job finds nothing to do, an extra unblock re-queues
// evals that block again, a deployment already failed is left alone.
func (s *Service) redoLostReactions(ctx context.Context, updates []*structs.Allocation, changes []*storage.ClientAllocChange,
	failedJobs map[string]*structs.Allocation) (freed bool, health []*storage.ClientAllocChange) {
	changed := make(map[string]bool, len(changes))
	for _, c := range changes {
		changed[c.Alloc.ID] = true
	}
	for _, u := range updates {
		terminal := (&structs.Allocation{ClientStatus: u.ClientStatus}).ClientTerminalStatus()
		reportsHealth := u.DeploymentID != "" && u.DeploymentStatus.HasHealth()
		if changed[u.ID] || !(terminal || reportsHealth) {
			continue
		}
		a, err := s.store.Alloc(ctx, u.ID)
		if err != nil {
			continue
		}
		if reportsHealth && a.DeploymentID == u.DeploymentID && a.DeploymentStatus.HasHealth() &&
			a.DeploymentStatus.IsHealthy() == u.DeploymentStatus.IsHealthy() {
			if d, err := s.store.Deployment(ctx, a.DeploymentID); err == nil && d.Status == structs.DeploymentStatusRunning {
				health = append(health, &storage.ClientAllocChange{Alloc: a, PrevClientStatus: a.ClientStatus})
			}
		}
		if !terminal || !a.ClientTerminalStatus() {
			continue
		}
		freed = true
		if a.ClientStatus == structs.AllocClientStatusFailed && a.DesiredStatus == structs.AllocDesiredStatusRun &&
			a.NextAllocation == "" && a.FollowupEvalID == "" {
			failedJobs[structs.NamespacedJobID(a.Namespace, a.JobID)] = a
		}
	}
	return freed, health
}

func (s *Service) unblock(ctx context.Context, reason string) {
	if _, err := scheduler.Unblock(ctx, s.store, s.queue, reason, s.log); err != nil {
		s.log.Warn("unblock evaluations", zap.Error(err))
	}
}

// siBytes renders a size in SI units as Nomad's messages do ("1.0 MB").
func siBytes(n int) string {
	units := []string{"B", "kB", "MB", "GB"}
	v, u := float64(n), 0
	for v >= 1000 && u < len(units)-1 {
		v /= 1000
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", n)
	}
	if v < 10 {
		return fmt.Sprintf("%.1f %s", v, units[u])
	}
	return fmt.Sprintf("%.0f %s", v, units[u])
}
