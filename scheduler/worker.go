package scheduler

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
)

// Consumer is an eval queue workers take deliveries from.
type Consumer interface {
	Dequeue(ctx context.Context) (*structs.Evaluation, string, error)
	Ack(evalID, token string) error
	Nack(evalID, token, reason string) error
	Enqueue(ctx context.Context, evals ...*structs.Evaluation) error
}

// DefaultWorkers is how many evaluation workers a server runs unless told:
// four per CPU core the process may use. Evaluations of different jobs
// compute in parallel on them; commits are serialized by the store, and an
// evaluation spends much of its time waiting for its commit to be durable,
// so more workers than cores fill each shared commit (the embedded store's
// group commit): a burst of 4,000 one-alloc jobs was placed 8 s after the
// last registration with 8 workers on 2 cores, 26 s with 2. (Nomad's
// num_schedulers defaults to the core count; its plans commit in memory.)
func DefaultWorkers() int {
	return 4 * runtime.GOMAXPROCS(0)
}

// pausePoll is how often paused workers look whether processing resumed.
const pausePoll = 500 * time.Millisecond

// RunWorkers runs n workers taking evaluations from q until ctx ends or
// the queue closes. Each delivery is processed, then acknowledged; an
// early delivery is acknowledged and put back for its WaitUntil; a failed
// one is negatively acknowledged (the queue redelivers it, or gives up at
// its delivery limit).
func RunWorkers(ctx context.Context, n int, q Consumer, ev *Evaluator, log *zap.Logger) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(worker int) {
			defer wg.Done()
			wlog := log.With(zap.Int("worker", worker))
			for {
				// While paused, take nothing: the queue keeps the evals.
				for ev.Config.Paused(ctx) {
					select {
					case <-ctx.Done():
						return
					case <-time.After(pausePoll):
					}
				}
				e, token, err := q.Dequeue(ctx)
				if err != nil {
					return
				}
				perr := ev.Process(ctx, e.ID)
				switch {
				case perr == nil:
					if err := q.Ack(e.ID, token); err != nil {
						wlog.Warn("ack evaluation", zap.String("eval_id", e.ID), zap.Error(err))
					}
				case errors.Is(perr, ErrPaused):
					// Paused after it was taken: put it back, uncounted,
					// for when processing resumes.
					_ = q.Ack(e.ID, token)
					if err := q.Enqueue(ctx, e); err != nil {
						wlog.Warn("put back evaluation while paused", zap.String("eval_id", e.ID), zap.Error(err))
					}
				case errors.Is(perr, ErrNotYet):
					_ = q.Ack(e.ID, token)
					if err := q.Enqueue(ctx, e); err != nil {
						wlog.Warn("put back early evaluation", zap.String("eval_id", e.ID), zap.Error(err))
					}
				default:
					if ctx.Err() != nil {
						return
					}
					wlog.Warn("evaluation failed; handing it back", zap.String("eval_id", e.ID), zap.String("job_id", e.JobID), zap.Error(perr))
					if err := q.Nack(e.ID, token, perr.Error()); err != nil {
						wlog.Warn("nack evaluation", zap.String("eval_id", e.ID), zap.Error(err))
					}
				}
			}
		}(i)
	}
	wg.Wait()
}
