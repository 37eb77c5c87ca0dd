package controlplane

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// SchedulerConfig returns the cluster's scheduler configuration
// (`nomad operator scheduler get-config`).
func (s *Service) SchedulerConfig(ctx context.Context) (*structs.SchedulerConfiguration, error) {
	return s.store.SchedulerConfig(ctx)
}

// SetSchedulerConfig validates and writes the scheduler configuration
// (`nomad operator scheduler set-config`); with cas set only if the stored
// ModifyIndex is *cas. Resuming a paused broker sends every pending
// evaluation again, each with a fresh modify index so that the queue's
// de-duplication of the earlier send does not drop it.
func (s *Service) SetSchedulerConfig(ctx context.Context, cfg *structs.SchedulerConfiguration, cas *uint64) (bool, uint64, error) {
	switch cfg.SchedulerAlgorithm {
	case "":
		cfg.SchedulerAlgorithm = structs.SchedulerAlgorithmBinpack
	case structs.SchedulerAlgorithmBinpack, structs.SchedulerAlgorithmSpread:
	default:
		return false, 0, badRequest("SchedulerAlgorithm: %q is not a scheduler algorithm (want %q or %q)",
			cfg.SchedulerAlgorithm, structs.SchedulerAlgorithmBinpack, structs.SchedulerAlgorithmSpread)
	}
	prev, err := s.store.SchedulerConfig(ctx)
	if err != nil {
		return false, 0, fmt.Errorf("read scheduler configuration: %w", err)
	}
	ok, idx, err := s.store.SetSchedulerConfig(ctx, cfg, cas)
	if err != nil || !ok {
		return ok, idx, err
	}
	if s.configHook != nil {
		s.configHook()
	}
	s.log.Info("scheduler configuration set", zap.String("algorithm", cfg.SchedulerAlgorithm),
		zap.Bool("pause_eval_broker", cfg.PauseEvalBroker))
	if prev.PauseEvalBroker && !cfg.PauseEvalBroker {
		if err := s.resendPending(ctx); err != nil {
			return true, idx, err
		}
	}
	return true, idx, nil
}

// resendPending re-writes and re-sends every pending evaluation.
func (s *Service) resendPending(ctx context.Context) error {
	pending, err := s.store.Evals(ctx, storage.EvalFilter{Status: structs.EvalStatusPending})
	if err != nil || len(pending) == 0 {
		return err
	}
	if _, err := s.store.UpsertEvals(ctx, pending...); err != nil {
		return fmt.Errorf("refresh pending evals: %w", err)
	}
	fresh := make([]*structs.Evaluation, 0, len(pending))
	for _, e := range pending {
		if cur, err := s.store.Eval(ctx, e.ID); err == nil && cur.Status == structs.EvalStatusPending {
			fresh = append(fresh, cur)
		}
	}
	s.log.Info("evaluation processing resumed; pending evals sent again", zap.Int("evals", len(fresh)))
	s.enqueue(ctx, fresh...)
	return nil
}
