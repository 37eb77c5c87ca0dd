package scheduler

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// SweepPending re-sends every evaluation that has been pending longer than
// olderThan (by its last modification): the safety net for an evaluation
// written but never sent (the process died between the write and the
// send) or whose message was lost, so that no evaluation is lost (design
// invariant 3). Delayed evals go back to the delayed path. Sending twice
// is harmless: the queue drops a duplicate within its dedup window and the
// evaluate service acknowledges an eval that is already terminal. It
// returns how many evals were re-sent.
func SweepPending(ctx context.Context, state BlockedState, queue Queue, olderThan time.Duration, now time.Time, log *zap.Logger) (int, error) {
	pending, err := state.Evals(ctx, storage.EvalFilter{Status: structs.EvalStatusPending})
	if err != nil {
		return 0, fmt.Errorf("list pending evals: %w", err)
	}
	cutoff := now.Add(-olderThan).UnixNano()
	var stale []*structs.Evaluation
	for _, e := range pending {
		if e.ModifyTime <= cutoff {
			stale = append(stale, e)
		}
	}
	if len(stale) == 0 {
		return 0, nil
	}
	if err := queue.Enqueue(ctx, stale...); err != nil {
		return 0, fmt.Errorf("re-send %d pending evals: %w", len(stale), err)
	}
	if log != nil {
		for _, e := range stale {
			log.Info("re-sent a pending evaluation", zap.String("eval_id", e.ID), zap.String("job_id", e.JobID),
				zap.Time("modified", time.Unix(0, e.ModifyTime)))
		}
	}
	return len(stale), nil
}
