// Package embedded is the eval queue of drover's embedded home: an
// in-process broker with Nomad's eval-broker semantics. Evaluations are
// delivered to workers by priority (then age); at most one evaluation per
// job is in flight; a delivery is acknowledged or negatively acknowledged
// (redelivered after a back-off, up to a delivery limit); a delivery not
// acknowledged within the visibility timeout is redelivered; evaluations
// with a future WaitUntil wait on a timer.
//
// The broker keeps nothing on disk: every evaluation it holds is a pending
// evaluation in the state store (delayed ones with their WaitUntil), and
// the agent re-enqueues all pending evaluations at start. That is what
// makes queued and delayed evaluations survive a restart.
package embedded

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/drover-sched/drover/structs"
)

// ErrNotOutstanding is returned by Ack/Nack for a delivery the broker does
// not hold (already acked, redelivered after its timeout, or a wrong token).
var ErrNotOutstanding = errors.New("evaluation is not outstanding with this token")

// ErrClosed is returned by Dequeue once the broker is closed.
var ErrClosed = errors.New("broker closed")

// Config tunes the broker. Zero values take the defaults.
type Config struct {
	// DeliveryLimit is how many deliveries an eval gets before it is
	// handed to OnDeliveryLimit instead (Nomad's default: 3).
	DeliveryLimit int
	// VisibilityTimeout is how long a delivery may stay unacknowledged
	// before the broker redelivers it (default 5 min).
	VisibilityTimeout time.Duration
	// NackDelay is the back-off before a nacked eval is delivered again,
	// multiplied by the number of deliveries so far (default 1 s).
	NackDelay time.Duration
	// OnDeliveryLimit receives an eval whose deliveries all failed; the
	// caller marks it failed and creates a follow-up (design §4.8). It is
	// called without the broker's lock held, on its own goroutine.
	OnDeliveryLimit func(eval *structs.Evaluation, lastErr string)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Broker is the in-process eval queue. It is safe for concurrent use.
type Broker struct {
	cfg Config

	mu      sync.Mutex
	closed  bool
	known   map[string]*entry    // every eval the broker holds, by ID
	ready   readyHeap            // deliverable now, one job at most once
	jobs    map[string]*jobQueue // per namespace/job: in flight + waiting
	delayed delayHeap            // waiting for WaitUntil or a nack back-off
	unacked map[string]*entry    // in flight, by eval ID
	wake    chan struct{}        // signals Dequeue waiters
	timer   *time.Timer          // fires at the earliest delayed entry
}

type entry struct {
	eval       *structs.Evaluation
	token      string
	deliveries int
	lastErr    string
	readyAt    time.Time // when a delayed entry becomes deliverable
	// requeue is the eval enqueued again while this entry was in flight
	// (a blocked eval unblocked between its commit and its ack): it is
	// delivered again once the entry is acknowledged.
	requeue    *structs.Evaluation
	deadline   *time.Timer
	heapIndex  int
	delayIndex int
}

// jobQueue serializes a job's evals: while one is in flight (or ready to
// be), the others wait here in priority order.
type jobQueue struct {
	active  *entry // the eval in flight or in the ready heap
	waiting readyHeap
}

// New returns a running broker. Close stops it.
func New(cfg Config) *Broker {
	if cfg.DeliveryLimit <= 0 {
		cfg.DeliveryLimit = 3
	}
	if cfg.VisibilityTimeout <= 0 {
		cfg.VisibilityTimeout = 5 * time.Minute
	}
	if cfg.NackDelay <= 0 {
		cfg.NackDelay = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b := &Broker{
		cfg:     cfg,
		known:   map[string]*entry{},
		jobs:    map[string]*jobQueue{},
		unacked: map[string]*entry{},
		wake:    make(chan struct{}),
	}
	b.timer = time.AfterFunc(time.Hour, b.promoteDelayed)
	b.timer.Stop()
	return b
}

// Close stops the broker: Dequeue returns ErrClosed; held evals are
// dropped (they are still pending in the state store).
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	b.timer.Stop()
	for _, e := range b.unacked {
		e.deadline.Stop()
	}
	b.signalLocked()
}

// Enqueue adds evaluations. An eval the broker already holds queued or
// delayed is not added twice; one in flight is delivered again after its
// acknowledgement (what its worker read may be older than what it is sent
// again for: a blocked eval unblocked between its commit and its ack, by
// its own plan or another's, would be pending in the state store and held
// by no one). An eval whose WaitUntil is in the future waits for it.
// Terminal evals are ignored.
func (b *Broker) Enqueue(_ context.Context, evals ...*structs.Evaluation) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	for _, ev := range evals {
		if ev.TerminalStatus() || ev.Status == structs.EvalStatusBlocked {
			continue
		}
		if _, ok := b.known[ev.ID]; ok {
			if u, inFlight := b.unacked[ev.ID]; inFlight {
				u.requeue = ev.Copy()
			}
			continue
		}
		b.addLocked(ev.Copy())
	}
	return nil
}

// addLocked makes a new entry of ev, delayed until its WaitUntil or ready.
func (b *Broker) addLocked(ev *structs.Evaluation) {
	e := &entry{eval: ev, heapIndex: -1, delayIndex: -1}
	b.known[ev.ID] = e
	if ev.WaitUntil.After(b.cfg.Now()) {
		e.readyAt = ev.WaitUntil
		b.delayLocked(e)
		return
	}
	b.readyLocked(e)
}

// readyLocked makes e deliverable, or parks it behind its job's active
// eval.
func (b *Broker) readyLocked(e *entry) {
	key := e.eval.NamespacedJobID()
	jq, ok := b.jobs[key]
	if !ok {
		jq = &jobQueue{}
		b.jobs[key] = jq
	}
	switch jq.active {
	case nil:
		jq.active = e
	case e:
		// A nacked eval back from its back-off: it kept its job's turn.
	default:
		heap.Push(&jq.waiting, e)
		return
	}
	heap.Push(&b.ready, e)
	b.signalLocked()
}

func (b *Broker) delayLocked(e *entry) {
	heap.Push(&b.delayed, e)
	b.resetTimerLocked()
}

func (b *Broker) resetTimerLocked() {
	if len(b.delayed) == 0 || b.closed {
		b.timer.Stop()
		return
	}
	d := b.delayed[0].readyAt.Sub(b.cfg.Now())
	if d < 0 {
		d = 0
	}
	b.timer.Reset(d)
}

// promoteDelayed moves delayed entries whose time has come to ready.
func (b *Broker) promoteDelayed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	now := b.cfg.Now()
	for len(b.delayed) > 0 && !b.delayed[0].readyAt.After(now) {
		e := heap.Pop(&b.delayed).(*entry)
		b.readyLocked(e)
	}
	b.resetTimerLocked()
}

func (b *Broker) signalLocked() {
	close(b.wake)
	b.wake = make(chan struct{})
}

// Dequeue blocks until an eval is deliverable (or ctx ends, or the broker
// closes) and returns it with a delivery token for Ack/Nack.
func (b *Broker) Dequeue(ctx context.Context) (*structs.Evaluation, string, error) {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, "", ErrClosed
		}
		if len(b.ready) > 0 {
			e := heap.Pop(&b.ready).(*entry)
			e.deliveries++
			e.token = structs.GenerateUUID()
			b.unacked[e.eval.ID] = e
			token := e.token
			e.deadline = time.AfterFunc(b.cfg.VisibilityTimeout, func() {
				_ = b.nack(e.eval.ID, token, "not acknowledged within the visibility timeout")
			})
			ev := e.eval.Copy()
			b.mu.Unlock()
			return ev, token, nil
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-wake:
		}
	}
}

// Ack confirms an eval was processed: it leaves the broker and the next
// waiting eval of its job becomes deliverable.
func (b *Broker) Ack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.unacked[evalID]
	if !ok || e.token != token {
		return fmt.Errorf("ack eval %s: %w", evalID, ErrNotOutstanding)
	}
	e.deadline.Stop()
	delete(b.unacked, evalID)
	delete(b.known, evalID)
	b.releaseJobLocked(e)
	if e.requeue != nil {
		b.addLocked(e.requeue)
	}
	return nil
}

// Nack hands an eval back after a failed attempt: it is delivered again
// after a back-off, or, past the delivery limit, given to OnDeliveryLimit.
func (b *Broker) Nack(evalID, token, reason string) error {
	return b.nack(evalID, token, reason)
}

func (b *Broker) nack(evalID, token, reason string) error {
	b.mu.Lock()
	e, ok := b.unacked[evalID]
	if !ok || e.token != token {
		b.mu.Unlock()
		return fmt.Errorf("nack eval %s: %w", evalID, ErrNotOutstanding)
	}
	e.deadline.Stop()
	delete(b.unacked, evalID)
	e.token = ""
	e.lastErr = reason
	// It is delivered again anyway (or given up): a request to send it
	// again while it was in flight is met by that.
	e.requeue = nil
	if e.deliveries >= b.cfg.DeliveryLimit {
		delete(b.known, evalID)
		b.releaseJobLocked(e)
		cb := b.cfg.OnDeliveryLimit
		ev := e.eval.Copy()
		b.mu.Unlock()
		if cb != nil {
			go cb(ev, reason)
		}
		return nil
	}
	// The job stays blocked behind this eval while it backs off, so that
	// a newer eval of the same job cannot overtake it.
	e.readyAt = b.cfg.Now().Add(time.Duration(e.deliveries) * b.cfg.NackDelay)
	heap.Push(&b.delayed, e)
	b.resetTimerLocked()
	b.mu.Unlock()
	return nil
}

// releaseJobLocked ends e's turn for its job and lets the next one go.
func (b *Broker) releaseJobLocked(e *entry) {
	key := e.eval.NamespacedJobID()
	jq := b.jobs[key]
	if jq == nil || jq.active != e {
		return
	}
	jq.active = nil
	if len(jq.waiting) == 0 {
		delete(b.jobs, key)
		return
	}
	next := heap.Pop(&jq.waiting).(*entry)
	jq.active = next
	heap.Push(&b.ready, next)
	b.signalLocked()
}

// Stats is a point-in-time count of what the broker holds.
type Stats struct {
	Ready, Waiting, Delayed, Unacked int
}

// Stats reports what the broker holds.
func (b *Broker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Stats{Ready: len(b.ready), Delayed: len(b.delayed), Unacked: len(b.unacked)}
	for _, jq := range b.jobs {
		s.Waiting += len(jq.waiting)
	}
	return s
}

// readyHeap orders evals by priority (high first), then CreateIndex and ID
// (old first), as Nomad's broker does.
type readyHeap []*entry

func (h readyHeap) Len() int { return len(h) }
func (h readyHeap) Less(i, j int) bool {
	a, b := h[i].eval, h[j].eval
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	if a.CreateIndex != b.CreateIndex {
		return a.CreateIndex < b.CreateIndex
	}
	return a.ID < b.ID
}
func (h readyHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = i, j
}
func (h *readyHeap) Push(x any) {
	e := x.(*entry)
	e.heapIndex = len(*h)
	*h = append(*h, e)
}
func (h *readyHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	e.heapIndex = -1
	return e
}

// delayHeap orders entries by readyAt.
type delayHeap []*entry

func (h delayHeap) Len() int { return len(h) }
func (h delayHeap) Less(i, j int) bool {
	if !h[i].readyAt.Equal(h[j].readyAt) {
		return h[i].readyAt.Before(h[j].readyAt)
	}
	return h[i].eval.ID < h[j].eval.ID
}
func (h delayHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].delayIndex, h[j].delayIndex = i, j
}
func (h *delayHeap) Push(x any) {
	e := x.(*entry)
	e.delayIndex = len(*h)
	*h = append(*h, e)
}
func (h *delayHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	e.delayIndex = -1
	return e
}
