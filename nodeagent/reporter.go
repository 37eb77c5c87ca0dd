package nodeagent

import (
	"context"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
)

// Reporting pace.
const (
	// reportInterval is the least time between two UpdateAllocs calls:
	// changes within it are coalesced into one batch.
	reportInterval = 250 * time.Millisecond
	// reportMaxBackoff caps the wait between retries of a failed report.
	reportMaxBackoff = 5 * time.Second
	// reportTimeout bounds one UpdateAllocs call.
	reportTimeout = 15 * time.Second
)

// reporter sends alloc status changes to the control plane: it keeps only
// the latest state of each alloc, sends them in batches at most every
// reportInterval, and retries failed batches with backoff, so that a
// burst of task events costs a few calls and no change is lost.
type reporter struct {
	cp     ControlPlane
	nodeID func() string
	logger *zap.Logger

	// onSent, when set, is told of every batch the control plane
	// accepted.
	onSent func(sent []*structs.Allocation)

	mu      sync.Mutex
	pending map[string]*structs.Allocation
	frozen  bool
	kick    chan struct{}
}

func newReporter(cp ControlPlane, nodeID func() string, logger *zap.Logger) *reporter {
	return &reporter{cp: cp, nodeID: nodeID, logger: logger, pending: map[string]*structs.Allocation{}, kick: make(chan struct{}, 1)}
}

// enqueue queues alloc's latest state, replacing any queued earlier one.
func (r *reporter) enqueue(alloc *structs.Allocation) {
	r.mu.Lock()
	if r.frozen {
		r.mu.Unlock()
		return
	}
	r.pending[alloc.ID] = alloc
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// freeze drops every later enqueue (the dev agent's stop of its tasks at
// shutdown is not reported: the allocs run again at the next start).
func (r *reporter) freeze() {
	r.mu.Lock()
	r.frozen = true
	r.mu.Unlock()
}

// run sends batches until ctx ends.
func (r *reporter) run(ctx context.Context) {
	var last time.Time
	backoff := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		}
		wait := reportInterval - time.Since(last)
		if backoff > wait {
			wait = backoff
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		if err := r.send(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, 500*time.Millisecond), reportMaxBackoff)
			r.logger.Warn("reporting alloc updates failed, will retry", zap.Error(err), zap.Duration("backoff", backoff))
			select {
			case r.kick <- struct{}{}:
			default:
			}
			continue
		}
		backoff = 0
	}
}

// send sends what is pending. On failure, entries not superseded in the
// meantime are queued again.
func (r *reporter) send(ctx context.Context) error {
	r.mu.Lock()
	if len(r.pending) == 0 {
		r.mu.Unlock()
		return nil
	}
	batch := make([]*structs.Allocation, 0, len(r.pending))
	for _, a := range r.pending {
		batch = append(batch, a)
	}
	r.pending = map[string]*structs.Allocation{}
	r.mu.Unlock()
	sort.Slice(batch, func(i, j int) bool { return batch[i].ID < batch[j].ID })

	cctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	err := r.cp.UpdateAllocs(cctx, r.nodeID(), batch)
	if err != nil {
		r.mu.Lock()
		for _, a := range batch {
			if _, newer := r.pending[a.ID]; !newer {
				r.pending[a.ID] = a
			}
		}
		r.mu.Unlock()
		return err
	}
	r.logger.Debug("reported alloc updates", zap.Int("allocs", len(batch)))
	if r.onSent != nil {
		r.onSent(batch)
	}
	return nil
}

// flush sends what is pending now, retrying until ctx ends.
func (r *reporter) flush(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for {
		err := r.send(ctx)
		if err == nil {
			return
		}
		r.logger.Warn("final alloc report failed", zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}
