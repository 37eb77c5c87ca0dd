package scheduler

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// BlockedState is what unblocking reads and writes.
type BlockedState interface {
	Evals(ctx context.Context, filter storage.EvalFilter) ([]*structs.Evaluation, error)
	UpsertEvals(ctx context.Context, evals ...*structs.Evaluation) (uint64, error)
}

// Unblock re-queues every blocked evaluation: called when a node
// registers or becomes eligible, and when capacity is freed (an alloc
// stops or finishes). Each blocked eval becomes pending again and is sent
// to the queue; if it still cannot place, its evaluation blocks it again.
// It returns how many evals were re-queued.
func Unblock(ctx context.Context, state BlockedState, queue Queue, reason string, log *zap.Logger) (int, error) {
	blocked, err := state.Evals(ctx, storage.EvalFilter{Status: structs.EvalStatusBlocked})
	if err != nil {
		return 0, fmt.Errorf("list blocked evals: %w", err)
	}
	if len(blocked) == 0 {
		return 0, nil
	}
	pending := make([]*structs.Evaluation, 0, len(blocked))
	for _, b := range blocked {
		p := b.Copy()
		p.Status = structs.EvalStatusPending
		p.StatusDescription = "unblocked: " + reason
		pending = append(pending, p)
	}
	if _, err := state.UpsertEvals(ctx, pending...); err != nil {
		return 0, fmt.Errorf("mark blocked evals pending: %w", err)
	}
	if queue != nil {
		if err := queue.Enqueue(ctx, pending...); err != nil {
			return 0, fmt.Errorf("enqueue unblocked evals: %w", err)
		}
	}
	if log != nil {
		for _, p := range pending {
			log.Info("re-queued blocked evaluation", zap.String("eval_id", p.ID), zap.String("job_id", p.JobID), zap.String("reason", reason))
		}
	}
	return len(pending), nil
}

// FailedFollowUpDelay is how long after an eval exhausted its deliveries
// its follow-up runs (Nomad waits about a minute).
const FailedFollowUpDelay = time.Minute

// FailEval marks an evaluation that exhausted its delivery limit failed
// with the reason and creates a delayed follow-up that tries again, as
// Nomad's leader does with evals from the failed queue (design §4.8). Both
// are written in one call; the follow-up is handed to the queue.
func FailEval(ctx context.Context, state BlockedState, queue Queue, ev *structs.Evaluation, reason string, now time.Time) (*structs.Evaluation, error) {
	follow := &structs.Evaluation{
		ID: structs.DeterministicID("failed-follow-up", ev.ID), Namespace: ev.Namespace, Priority: ev.Priority,
		Type: ev.Type, TriggeredBy: structs.EvalTriggerFailedFollowUp, JobID: ev.JobID, JobModifyIndex: ev.JobModifyIndex,
		Status: structs.EvalStatusPending, PreviousEval: ev.ID, WaitUntil: now.Add(FailedFollowUpDelay),
		StatusDescription: "follow-up of an evaluation that failed its delivery limit",
	}
	failed := ev.Copy()
	failed.Status = structs.EvalStatusFailed
	failed.StatusDescription = fmt.Sprintf("evaluation reached delivery limit: %s", reason)
	failed.NextEval = follow.ID
	if _, err := state.UpsertEvals(ctx, failed, follow); err != nil {
		return nil, fmt.Errorf("fail eval %s: %w", ev.ID, err)
	}
	if queue != nil {
		if err := queue.Enqueue(ctx, follow); err != nil {
			return nil, fmt.Errorf("enqueue follow-up of failed eval %s: %w", ev.ID, err)
		}
	}
	return follow, nil
}
