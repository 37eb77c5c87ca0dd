package controlplane

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
)

// GarbageCollect removes finished jobs, allocations, evaluations,
// deployments and down nodes older than threshold (0: everything finished,
// as `POST /v1/system/gc`). Node agents notice their collected allocs
// missing from their assignments and destroy their dirs.
func (s *Service) GarbageCollect(ctx context.Context, threshold time.Duration) (*storage.GCResult, error) {
	res, err := s.store.GarbageCollect(ctx, s.now().Add(-threshold))
	if err != nil {
		return nil, fmt.Errorf("garbage collect: %w", err)
	}
	if *res != (storage.GCResult{}) {
		s.log.Info("garbage collected", zap.Int("jobs", res.Jobs), zap.Int("allocs", res.Allocs),
			zap.Int("evals", res.Evals), zap.Int("deployments", res.Deployments), zap.Int("nodes", res.Nodes))
	}
	return res, nil
}
