package controlplane

import (
	"context"
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
)

// CheckHeartbeats marks every ready node whose last heartbeat is older
// than the heartbeat TTL plus grace as missed (see NodeMissedHeartbeat).
// A node never heard from since this server started gets a full TTL from
// the first check, as Nomad resets heartbeat timers on a new leader. It
// returns how many nodes it marked.
//
// A node whose last status change is more than a heartbeat TTL plus
// grace old and whose reactions are still marked pending gets them again
// (RedoNodeReactions): the server died between the status write and
// them. That matters for a node marked down, whose agent will not
// heartbeat again to redo them (its allocs would stay on it, neither lost
// nor replaced); the age keeps the check off reactions still in flight.
func (s *Service) CheckHeartbeats(ctx context.Context, grace time.Duration) (int, error) {
	nodes, err := s.store.Nodes(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("list nodes: %w", err)
	}
	now := s.now()
	marked := 0
	for _, n := range nodes {
		if n.ReactionsPending != 0 && now.Sub(time.Unix(n.StatusUpdatedAt, 0)) > s.heartbeatTTL+grace {
			if err := s.RedoNodeReactions(ctx, n.ID); err != nil {
				s.log.Warn("redo a node's pending reactions", zap.String("node_id", n.ID), zap.Error(err))
			}
		}
		if n.Status != structs.NodeStatusReady && n.Status != structs.NodeStatusInit {
			continue
		}
		s.mu.Lock()
		last, ok := s.heartbeats[n.ID]
		if !ok {
			s.heartbeats[n.ID] = now
		}
		s.mu.Unlock()
		if !ok || now.Sub(last) <= s.heartbeatTTL+grace {
			continue
		}
		if err := s.NodeMissedHeartbeat(ctx, n.ID); err != nil {
			return marked, err
		}
		marked++
	}
	return marked, nil
}

// NodeMissedHeartbeat handles a node that stopped heartbeating: it becomes
// "disconnected" when one of its allocations belongs to a group with
// max_client_disconnect (those allocs may come back), else "down"; every
// job with allocations on it gets a node-update evaluation, so the
// reconciler marks them lost or unknown and replaces them. The status
// write's ReactionsPending mark stays until those evaluations are written
// (reactToStatus), for RedoNodeReactions should this process die first.
func (s *Service) NodeMissedHeartbeat(ctx context.Context, nodeID string) error {
	allocs, err := s.store.AllocsByNode(ctx, nodeID)
	if err != nil {
		return fmt.Errorf("allocs of node %s: %w", nodeID, err)
	}
	status := structs.NodeStatusDown
	for _, a := range allocs {
		if a.TerminalStatus() || a.Job == nil {
			continue
		}
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil && tg.MaxClientDisconnect != nil {
			status = structs.NodeStatusDisconnected
			break
		}
	}
	n, err := s.store.UpdateNodeStatus(ctx, nodeID, status, s.now().Unix())
	if err != nil {
		return fmt.Errorf("mark node %s %s: %w", nodeID, status, err)
	}
	s.log.Warn("node missed its heartbeat", zap.String("node_id", nodeID), zap.String("status", status),
		zap.Int("allocs", len(allocs)))
	msg := structs.NodeEventHeartbeatMissed
	if status == structs.NodeStatusDisconnected {
		msg = structs.NodeEventStatusDisconnected
	}
	s.nodeEvent(ctx, nodeID, structs.NodeEventSubsystemCluster, msg, nil)
	return s.reactToStatus(ctx, n)
}

// createNodeEvals creates one evaluation per job with allocations on the
// node that are still wanted or still running, and, when the node can take
// placements, one per system or sysbatch job it may run, as Nomad does
// when a node's status changes.
func (s *Service) createNodeEvals(ctx context.Context, nodeID, trigger string) error {
	allocs, err := s.store.AllocsByNode(ctx, nodeID)
	if err != nil {
		return fmt.Errorf("allocs of node %s: %w", nodeID, err)
	}
	jobs := map[string]*structs.Allocation{}
	for _, a := range allocs {
		if a.ClientTerminalStatus() && a.ServerTerminalStatus() {
			continue
		}
		jobs[structs.NamespacedJobID(a.Namespace, a.JobID)] = a
	}
	if err := s.createJobEvals(ctx, jobs, trigger, nodeID, false); err != nil {
		return err
	}
	skip := make(map[string]bool, len(jobs))
	for k := range jobs {
		skip[k] = true
	}
	return s.evaluateSystemJobs(ctx, nodeID, trigger, skip)
}

// createJobEvals creates, for each job named by one of its allocs (keyed
// by namespace/job), an evaluation of the job's current version with
// trigger and nodeID, in key order; purged jobs are evaluated from the
// alloc's own job version (to stop what runs), and with skipStopped,
// stopped or purged jobs are skipped. The evals are written and enqueued.
func (s *Service) createJobEvals(ctx context.Context, jobs map[string]*structs.Allocation, trigger, nodeID string, skipStopped bool) error {
	keys := make([]string, 0, len(jobs))
	for k := range jobs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var evals []*structs.Evaluation
	for _, k := range keys {
		a := jobs[k]
		job, err := s.store.Job(ctx, a.Namespace, a.JobID)
		if skipStopped && (err != nil || job.Stop) {
			continue
		}
		prio, typ := structs.JobDefaultPriority, structs.JobTypeService
		var jmi uint64
		switch {
		case err == nil:
			prio, typ, jmi = job.Priority, job.Type, job.JobModifyIndex
		case a.Job != nil:
			prio, typ = a.Job.Priority, a.Job.Type
		}
		ev := s.newEval(a.Namespace, a.JobID, typ, prio, trigger)
		ev.NodeID = nodeID
		ev.JobModifyIndex = jmi
		evals = append(evals, ev)
	}
	if len(evals) == 0 {
		return nil
	}
	if _, err := s.store.UpsertEvals(ctx, evals...); err != nil {
		return fmt.Errorf("create %s evaluations: %w", trigger, err)
	}
	for _, ev := range evals {
		s.log.Info("evaluation created", zap.String("eval_id", ev.ID), zap.String("job_id", ev.JobID),
			zap.String("triggered_by", trigger), zap.String("node_id", nodeID))
	}
	s.enqueue(ctx, evals...)
	return nil
}
