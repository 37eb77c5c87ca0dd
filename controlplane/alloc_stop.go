package controlplane

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
)

// StopAlloc stops one allocation so that it is replaced, as `nomad alloc
// stop`: the alloc is marked for migration (DesiredTransition.Migrate) and
// an evaluation triggered by alloc-stop is written with it; the reconciler
// then stops it and places its replacement. It returns the eval and the
// write's index.
func (s *Service) StopAlloc(ctx context.Context, allocID string) (*structs.Evaluation, uint64, error) {
	a, err := s.store.Alloc(ctx, allocID)
	if err != nil {
		return nil, 0, fmt.Errorf("stop alloc %s: %w", allocID, err)
	}
	if a.TerminalStatus() {
		return nil, 0, badRequest("allocation %s is already %s (desired %s): there is nothing to stop", allocID, a.ClientStatus, a.DesiredStatus)
	}
	typ, prio := structs.JobTypeService, structs.JobDefaultPriority
	if a.Job != nil {
		typ, prio = a.Job.Type, a.Job.Priority
	}
	ev := s.newEval(a.Namespace, a.JobID, typ, prio, structs.EvalTriggerAllocStop)
	migrate := true
	idx, err := s.store.UpdateAllocDesiredTransitions(ctx, map[string]*structs.DesiredTransition{a.ID: {Migrate: &migrate}}, ev)
	if err != nil {
		return nil, 0, fmt.Errorf("stop alloc %s: %w", allocID, err)
	}
	s.log.Info("allocation stop requested", zap.String("alloc_id", a.ID), zap.String("job_id", a.JobID), zap.String("eval_id", ev.ID))
	s.enqueue(ctx, ev)
	return ev, idx, nil
}
