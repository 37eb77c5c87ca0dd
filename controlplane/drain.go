package controlplane

import (
	"context"
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
)

// DrainSpec is what an operator asks of a drain, as Nomad's: Deadline > 0
// forces the remaining allocs off after that long; 0 means no deadline;
// < 0 forces them off now (Nomad's DrainStrategy.DeadlineTime).
type DrainSpec struct {
	Deadline         time.Duration
	IgnoreSystemJobs bool
}

// UpdateDrain starts (spec set) or cancels (nil) a node's drain, as `nomad
// node drain -enable|-disable`. Starting makes the node ineligible at
// once; the drainer (RunDrainer) then migrates its allocs.
func (s *Service) UpdateDrain(ctx context.Context, nodeID string, spec *DrainSpec, markEligible bool) (*structs.Node, error) {
	var strategy *structs.DrainStrategy
	if spec != nil {
		now := s.now()
		strategy = &structs.DrainStrategy{Deadline: spec.Deadline, IgnoreSystemJobs: spec.IgnoreSystemJobs, StartedAt: now}
		switch {
		case spec.Deadline > 0:
			strategy.ForceDeadline = now.Add(spec.Deadline)
		case spec.Deadline < 0: // force: everything moves now
			strategy.ForceDeadline = now
		}
	}
	prev, err := s.store.Node(ctx, nodeID)
	if err != nil {
		return nil, fmt.Errorf("drain node %s: %w", nodeID, err)
	}
	n, err := s.store.UpdateNodeDrain(ctx, nodeID, strategy, markEligible)
	if err != nil {
		return nil, fmt.Errorf("drain node %s: %w", nodeID, err)
	}
	switch {
	case spec != nil && prev.Drain:
		s.nodeEvent(ctx, nodeID, structs.NodeEventSubsystemDrain, structs.NodeEventDrainUpdated, nil)
	case spec != nil:
		s.nodeEvent(ctx, nodeID, structs.NodeEventSubsystemDrain, structs.NodeEventDrainSet, nil)
	case prev.Drain:
		s.nodeEvent(ctx, nodeID, structs.NodeEventSubsystemDrain, structs.NodeEventDrainDisabled, nil)
	}
	s.log.Info("node drain updated", zap.String("node_id", nodeID), zap.Bool("drain", n.Drain),
		zap.String("eligibility", n.SchedulingEligibility))
	if spec != nil {
		if err := s.RunDrainer(ctx); err != nil {
			return n, err
		}
	} else if markEligible {
		if err := s.evaluateSystemJobs(ctx, nodeID, structs.EvalTriggerNodeUpdate, nil); err != nil {
			return n, err
		}
		s.unblock(ctx, "node eligible")
	}
	return n, nil
}

// UpdateEligibility sets a node's scheduling eligibility, as `nomad node
// eligibility -enable|-disable`. A draining node cannot be made eligible.
func (s *Service) UpdateEligibility(ctx context.Context, nodeID, eligibility string) (*structs.Node, error) {
	if eligibility != structs.NodeSchedulingEligible && eligibility != structs.NodeSchedulingIneligible {
		return nil, badRequest("eligibility %q: must be %q or %q", eligibility, structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible)
	}
	cur, err := s.store.Node(ctx, nodeID)
	if err != nil {
		return nil, err
	}
	if cur.Drain && eligibility == structs.NodeSchedulingEligible {
		return nil, badRequest("node %s is draining: it can't be marked eligible", nodeID)
	}
	n, err := s.store.UpdateNodeEligibility(ctx, nodeID, eligibility)
	if err != nil {
		return nil, fmt.Errorf("eligibility of node %s: %w", nodeID, err)
	}
	if cur.SchedulingEligibility != eligibility {
		msg := structs.NodeEventIneligible
		if eligibility == structs.NodeSchedulingEligible {
			msg = structs.NodeEventEligible
		}
		s.nodeEvent(ctx, nodeID, structs.NodeEventSubsystemCluster, msg, nil)
	}
	if eligibility == structs.NodeSchedulingEligible {
		// Also when the node was eligible already: the request may be
		// sent again because the first one's reactions were lost after
		// its write (an extra evaluation of a system job that runs on the
		// node places nothing).
		if err := s.evaluateSystemJobs(ctx, nodeID, structs.EvalTriggerNodeUpdate, nil); err != nil {
			return n, err
		}
		s.unblock(ctx, "node eligible")
	}
	return n, nil
}

// RunDrainer moves allocations off draining nodes, as Nomad's drainer: for
// each task group it marks allocs for migration only while at least
// count - migrate.max_parallel of the group's allocs elsewhere are
// healthy, so a drain never takes more than max_parallel of a group down
// at once; batch and sysbatch allocs are left to finish until the
// deadline; system allocs are drained last, all at once, when everything
// else on the node has stopped (left running with IgnoreSystemJobs); at
// the deadline everything left is marked. A node with nothing left to move
// ends its drain (it stays ineligible).
func (s *Service) RunDrainer(ctx context.Context) error {
	nodes, err := s.store.Nodes(ctx, "")
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	now := s.now()
	for _, n := range nodes {
		if !n.Drain || n.DrainStrategy == nil {
			continue
		}
		if err := s.drainNode(ctx, n, now); err != nil {
			return err
		}
	}
	return nil
}

type groupKey struct{ ns, job, group string }

func (s *Service) drainNode(ctx context.Context, n *structs.Node, now time.Time) error {
	allocs, err := s.store.AllocsByNode(ctx, n.ID)
	if err != nil {
		return fmt.Errorf("allocs of node %s: %w", n.ID, err)
	}
	forced := !n.DrainStrategy.ForceDeadline.IsZero() && !now.Before(n.DrainStrategy.ForceDeadline)
	remaining := 0
	candidates := map[groupKey][]*structs.Allocation{}
	var system []*structs.Allocation
	othersDone := true // every non-system alloc has stopped on the node
	for _, a := range allocs {
		isSystem := a.Job != nil && a.Job.Type == structs.JobTypeSystem
		if !isSystem && !a.ClientTerminalStatus() {
			othersDone = false
		}
		if a.TerminalStatus() || (isSystem && n.DrainStrategy.IgnoreSystemJobs) {
			continue
		}
		remaining++
		if a.DesiredTransition.ShouldMigrate() {
			continue
		}
		switch {
		case isSystem:
			system = append(system, a)
			continue
		case a.Job != nil && (a.Job.Type == structs.JobTypeBatch || a.Job.Type == structs.JobTypeSysBatch) && !forced:
			continue
		}
		k := groupKey{a.Namespace, a.JobID, a.TaskGroup}
		candidates[k] = append(candidates[k], a)
	}
	if len(system) > 0 && (othersDone || forced) {
		for _, a := range system {
			k := groupKey{a.Namespace, a.JobID, a.TaskGroup}
			candidates[k] = append(candidates[k], a)
		}
	}
	if remaining == 0 {
		if _, err := s.store.UpdateNodeDrain(ctx, n.ID, nil, false); err != nil {
			return fmt.Errorf("complete drain of node %s: %w", n.ID, err)
		}
		s.log.Info("node drain complete", zap.String("node_id", n.ID))
		s.nodeEvent(ctx, n.ID, structs.NodeEventSubsystemDrain, structs.NodeEventDrainComplete, nil)
		return nil
	}
	keys := make([]groupKey, 0, len(candidates))
	for k := range candidates {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].ns+"/"+keys[i].job+"/"+keys[i].group < keys[j].ns+"/"+keys[j].job+"/"+keys[j].group
	})
	yes := true
	transitions := map[string]*structs.DesiredTransition{}
	jobs := map[[2]string]bool{}
	for _, k := range keys {
		list := candidates[k]
		sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
		take := len(list)
		if !forced && (list[0].Job == nil || list[0].Job.Type != structs.JobTypeSystem) {
			take, err = s.migratable(ctx, k, now)
			if err != nil {
				return err
			}
			if take > len(list) {
				take = len(list)
			}
		}
		for _, a := range list[:max(take, 0)] {
			tr := a.DesiredTransition
			tr.Migrate = &yes
			transitions[a.ID] = &tr
			jobs[[2]string{a.Namespace, a.JobID}] = true
		}
	}
	if len(transitions) == 0 {
		return nil
	}
	var evals []*structs.Evaluation
	for j := range jobs {
		ev, err := s.jobEval(ctx, j[0], j[1], structs.EvalTriggerNodeDrain)
		if err != nil {
			continue
		}
		ev.NodeID = n.ID
		evals = append(evals, ev)
	}
	sort.Slice(evals, func(i, j int) bool { return evals[i].JobID < evals[j].JobID })
	if _, err := s.store.UpdateAllocDesiredTransitions(ctx, transitions, evals...); err != nil {
		return fmt.Errorf("mark allocs of node %s for migration: %w", n.ID, err)
	}
	s.log.Info("drain: allocations marked for migration", zap.String("node_id", n.ID), zap.Int("allocs", len(transitions)),
		zap.Bool("forced", forced))
	s.enqueue(ctx, evals...)
	return nil
}

// migratable returns how many more allocs of a group may be migrated now:
// its healthy allocs beyond count - max_parallel.
func (s *Service) migratable(ctx context.Context, k groupKey, now time.Time) (int, error) {
	job, err := s.store.Job(ctx, k.ns, k.job)
	if err != nil {
		return 0, nil // stopped or purged: the scheduler stops its allocs anyway
	}
	tg := job.LookupTaskGroup(k.group)
	if tg == nil {
		return 0, nil
	}
	maxParallel, minHealthy := 1, 10*time.Second
	if tg.Migrate != nil {
		if tg.Migrate.MaxParallel > 0 {
			maxParallel = tg.Migrate.MaxParallel
		}
		minHealthy = tg.Migrate.MinHealthyTime
	}
	allocs, err := s.store.AllocsByJob(ctx, k.ns, k.job)
	if err != nil {
		return 0, err
	}
	healthy := 0
	for _, a := range allocs {
		if a.TaskGroup != k.group || a.TerminalStatus() || a.DesiredTransition.ShouldMigrate() {
			continue
		}
		if allocHealthy(a, minHealthy, now) {
			healthy++
		}
	}
	return healthy - (tg.Count - maxParallel), nil
}

// allocHealthy: the node agent's deployment health when it decided one,
// else running with every task up for at least minHealthy (the migrate
// block's min_healthy_time).
func allocHealthy(a *structs.Allocation, minHealthy time.Duration, now time.Time) bool {
	if a.DeploymentStatus.HasHealth() {
		return a.DeploymentStatus.IsHealthy()
	}
	if a.ClientStatus != structs.AllocClientStatusRunning || len(a.TaskStates) == 0 {
		return false
	}
	for _, ts := range a.TaskStates {
		if ts.State != structs.TaskStateRunning || ts.StartedAt.IsZero() || now.Sub(ts.StartedAt) < minHealthy {
			return false
		}
	}
	return true
}
