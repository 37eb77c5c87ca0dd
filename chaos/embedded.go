package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/agent"
	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

// The embedded home's faults.
const (
	// FaultCrashBeforeCommit kills the server inside one of its next few
	// writes' transactions, before the commit (between any two of the
	// write's puts: bbolt rolls all of them back).
	FaultCrashBeforeCommit = "crash-before-commit"
	// FaultCrashAfterCommit kills the server after one of its next few
	// writes is durable and before its caller is answered (between a
	// plan's commit and its ack, between a node report's write and its
	// reactions, between a registration and its enqueue).
	FaultCrashAfterCommit = "crash-after-commit"
	// FaultRestart kills the server between two steps (kill -9: the
	// queue in memory is lost, the state file is not).
	FaultRestart = "restart"
)

// deliveryLimit is the embedded broker's default delivery limit.
const deliveryLimit = 3

// Embedded is the embedded home: a bbolt state file, the evaluator the
// agent wires, the control-plane service, with the worker's
// acknowledgement rules and the broker's delivery limit. A crash closes
// the file and the restart opens it again, as a server restarted after
// kill -9 does (pending evals restored from the file).
type Embedded struct {
	path string
	env  *Env

	mu        sync.Mutex
	bolt      *embedded.Store
	svc       *controlplane.Service
	ev        *scheduler.Evaluator
	delivered map[string]int

	crash crashState
}

type crashState struct {
	mu        sync.Mutex
	point     string // armed crash point, "" when disarmed
	countdown int    // writes until it fires
	dead      bool
}

// hook is the store's CrashPoint.
func (c *crashState) hook(point string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return errCrashed
	}
	if c.point != point {
		return nil
	}
	c.countdown--
	if c.countdown > 0 {
		return nil
	}
	c.dead, c.point = true, ""
	return fmt.Errorf("%s: %w", point, errCrashed)
}

// NewEmbedded opens a home on the state file at path.
func NewEmbedded(path string, env *Env) (*Embedded, error) {
	h := &Embedded{path: path, env: env}
	if err := h.open(); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *Embedded) open() error {
	s, err := embedded.OpenWith(h.path, embedded.Options{NoSync: true, CrashPoint: h.crash.hook})
	if err != nil {
		return err
	}
	h.bolt = s
	ev := agent.NewEvaluator(s, h.env.Queue, zap.NewNop())
	ev.Now = h.env.Clock.Now
	ev.State = h.env.Observe(s)
	h.ev = ev
	h.svc = controlplane.New(controlplane.Config{Store: s, Queue: h.env.Queue, Now: h.env.Clock.Now, Planner: ev})
	h.delivered = map[string]int{}
	return nil
}

// Store implements Home.
func (h *Embedded) Store() storage.Store { return h.bolt }

// Service implements Home.
func (h *Embedded) Service() *controlplane.Service { return h.svc }

// Faults implements Home.
func (h *Embedded) Faults() []string {
	return []string{FaultCrashBeforeCommit, FaultCrashAfterCommit, FaultRestart}
}

// Fault implements Home.
func (h *Embedded) Fault(kind string, r *rand.Rand) {
	h.crash.mu.Lock()
	defer h.crash.mu.Unlock()
	switch kind {
	case FaultCrashBeforeCommit:
		h.crash.point, h.crash.countdown = embedded.CrashBeforeCommit, 1+r.IntN(4)
	case FaultCrashAfterCommit:
		h.crash.point, h.crash.countdown = embedded.CrashAfterCommit, 1+r.IntN(4)
	case FaultRestart:
		h.crash.dead = true
	}
}

// Disarm implements Home.
func (h *Embedded) Disarm() {
	h.crash.mu.Lock()
	h.crash.point = ""
	h.crash.mu.Unlock()
}

// Crashed implements Home.
func (h *Embedded) Crashed() bool {
	h.crash.mu.Lock()
	defer h.crash.mu.Unlock()
	return h.crash.dead
}

// Restart implements Home: the queue in memory is gone, the state file is
// opened again and its pending evals are sent again (the agent's start).
func (h *Embedded) Restart(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.bolt.Close(); err != nil {
		return err
	}
	h.env.Queue.Reset()
	h.crash.mu.Lock()
	h.crash.dead, h.crash.point = false, ""
	h.crash.mu.Unlock()
	if err := h.open(); err != nil {
		return err
	}
	if _, err := h.svc.RestorePending(ctx); err != nil {
		return fmt.Errorf("restore pending evals: %w", err)
	}
	return nil
}

// Deliver implements Home with the embedded worker's rules: done, or
// early (put back for its time), is acknowledged; a failure is handed
// back, and at the broker's delivery limit the eval is marked failed
// with a follow-up.
func (h *Embedded) Deliver(ctx context.Context, ev *structs.Evaluation) bool {
	err := h.ev.Process(ctx, ev.ID)
	switch {
	case err == nil:
		return true
	case errors.Is(err, scheduler.ErrNotYet):
		if cur, gerr := h.bolt.Eval(ctx, ev.ID); gerr == nil {
			_ = h.env.Queue.Enqueue(ctx, cur)
		}
		return true
	}
	if h.Crashed() {
		return false
	}
	h.mu.Lock()
	h.delivered[ev.ID]++
	n := h.delivered[ev.ID]
	h.mu.Unlock()
	if n < deliveryLimit {
		return false
	}
	cur, gerr := h.bolt.Eval(ctx, ev.ID)
	if gerr != nil {
		return false
	}
	if _, ferr := scheduler.FailEval(ctx, h.bolt, h.env.Queue, cur, err.Error(), h.env.Clock.Now()); ferr != nil {
		return false
	}
	return true
}

// Sweep implements Home: the embedded home has no pending sweep.
func (h *Embedded) Sweep(context.Context) {}

// Close implements Home.
func (h *Embedded) Close() { h.bolt.Close() }
