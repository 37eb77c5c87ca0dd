package controlplane

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// System and sysbatch jobs run on every eligible node, so a node that can
// take placements anew — registered for the first time, ready again,
// eligible again, or with a changed fingerprint — gets a node-update
// evaluation of each such job of its pool and datacenter, as Nomad's node
// endpoint creates them (createNodeEvals). Nomad leaves sysbatch jobs to
// their registration; drover evaluates them too, so that a new node runs a
// sysbatch job once (a node that already ran it does not run it again).

// isSystemJob reports whether jobs of type t go through the system
// scheduler.
func isSystemJob(t string) bool {
	return t == structs.JobTypeSystem || t == structs.JobTypeSysBatch
}

// systemJobEvals returns node-update evaluations of the running system and
// sysbatch jobs that may place on node n, except those of skip (jobs that
// get an evaluation anyway, by namespace/ID). It reads only the system and
// sysbatch jobs (the store lists them apart), never the other jobs.
func (s *Service) systemJobEvals(ctx context.Context, n *structs.Node, trigger string, skip map[string]bool) ([]*structs.Evaluation, error) {
	if !n.Ready() {
		return nil, nil
	}
	jobs, err := s.store.SystemJobs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list jobs for the system jobs of node %s: %w", n.ID, err)
	}
	var out []*structs.Evaluation
	for _, j := range jobs {
		if !isSystemJob(j.Type) || j.Stop || skip[j.NamespacedID()] || !nodeRunsJob(n, j) {
			continue
		}
		ev := s.newEval(j.Namespace, j.ID, j.Type, j.Priority, trigger)
		ev.NodeID, ev.JobModifyIndex = n.ID, j.JobModifyIndex
		out = append(out, ev)
	}
	return out, nil
}

// nodeRunsJob reports whether n is in the job's node pool and one of its
// datacenters (the cheap part of feasibility, as Nomad checks before it
// creates the evaluation).
func nodeRunsJob(n *structs.Node, j *structs.Job) bool {
	return storage.NodeQuery{NodePool: j.NodePool, Datacenters: j.Datacenters}.InPoolAndDatacenters(n)
}

// evaluateSystemJobs writes and enqueues the node-update evaluations of
// the system jobs node nodeID may now run, except those of skip.
func (s *Service) evaluateSystemJobs(ctx context.Context, nodeID, trigger string, skip map[string]bool) error {
	n, err := s.store.Node(ctx, nodeID)
	if err != nil {
		return fmt.Errorf("system jobs of node %s: %w", nodeID, err)
	}
	evals, err := s.systemJobEvals(ctx, n, trigger, skip)
	if err != nil || len(evals) == 0 {
		return err
	}
	if _, err := s.store.UpsertEvals(ctx, evals...); err != nil {
		return fmt.Errorf("create %s evaluations of system jobs: %w", trigger, err)
	}
	for _, ev := range evals {
		s.log.Info("evaluation created", zap.String("eval_id", ev.ID), zap.String("job_id", ev.JobID),
			zap.String("triggered_by", trigger), zap.String("node_id", nodeID))
	}
	s.enqueue(ctx, evals...)
	return nil
}

// fingerprintChanged reports whether a re-registration changes what
// feasibility reads of the node (Nomad's shouldCreateNodeEval): its
// datacenter, pool, name, class, attributes, meta, or its drivers'
// detection, health and attributes.
func fingerprintChanged(prev, next *structs.Node) bool {
	if prev.Datacenter != next.Datacenter || prev.NodePool != next.NodePool || prev.Name != next.Name || prev.NodeClass != next.NodeClass ||
		!maps.Equal(prev.Attributes, next.Attributes) || !maps.Equal(prev.Meta, next.Meta) {
		return true
	}
	if len(prev.Drivers) != len(next.Drivers) {
		return true
	}
	for _, name := range slices.Sorted(maps.Keys(prev.Drivers)) {
		a, b := prev.Drivers[name], next.Drivers[name]
		if b == nil || a.Detected != b.Detected || a.Healthy != b.Healthy || !maps.Equal(a.Attributes, b.Attributes) {
			return true
		}
	}
	return false
}
