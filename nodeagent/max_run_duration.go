package nodeagent

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
)

// AllocTimeoutReasonMaxRunDuration is the client description of an alloc
// stopped for exceeding its group's max_run_duration, and the message of
// its tasks' Killing events (Nomad's words).
const AllocTimeoutReasonMaxRunDuration = "allocation exceeded max_run_duration"

// maxRunDuration returns the group's max_run_duration when it applies:
// set, positive, and a batch or sysbatch job (Nomad's
// Allocation.MaxRunDuration).
func maxRunDuration(alloc *structs.Allocation) (time.Duration, bool) {
	if alloc == nil || alloc.Job == nil {
		return 0, false
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil || tg.MaxRunDuration == nil || *tg.MaxRunDuration <= 0 {
		return 0, false
	}
	switch alloc.Job.Type {
	case structs.JobTypeBatch, structs.JobTypeSysBatch:
		return *tg.MaxRunDuration, true
	}
	return 0, false
}

// maxRunDurationHook enforces the group's max_run_duration (Nomad's
// max_run_duration hook): a timer at the alloc's creation time plus the
// duration — stable across agent restarts and task restarts — whose
// expiry has the alloc runner stop every task, poststop tasks included
// (they never run), with a Killing event saying why. An in-place update
// that changes the duration re-arms the timer.
type maxRunDurationHook struct {
	ar *allocRunner

	mu       sync.Mutex
	timer    *time.Timer
	duration time.Duration
}

func newMaxRunDurationHook(ar *allocRunner) *maxRunDurationHook {
	return &maxRunDurationHook{ar: ar}
}

func (*maxRunDurationHook) Name() string { return "max_run_duration" }

func (h *maxRunDurationHook) Prerun(context.Context) error {
	h.reset(h.ar.Alloc())
	return nil
}

func (h *maxRunDurationHook) Update(alloc *structs.Allocation) error {
	h.reset(alloc)
	return nil
}

func (h *maxRunDurationHook) Postrun() error { h.stop(); return nil }

func (h *maxRunDurationHook) Shutdown() { h.stop() }

func (h *maxRunDurationHook) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	h.duration = 0
}

// reset arms the timer for alloc, unless it is armed for the same
// duration already.
func (h *maxRunDurationHook) reset(alloc *structs.Allocation) {
	d, ok := maxRunDuration(alloc)
	if !ok || alloc.ServerTerminalStatus() {
		h.stop()
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timer != nil && h.duration == d {
		return
	}
	if h.timer != nil {
		h.timer.Stop()
	}
	deadline := h.ar.createdAt().Add(d)
	h.duration = d
	h.ar.logger.Debug("max_run_duration armed", zap.Duration("max_run_duration", d), zap.Time("deadline", deadline))
	h.timer = time.AfterFunc(time.Until(deadline), func() { h.ar.exceedMaxRunDuration(deadline) })
}

// createdAt is when the alloc was created: the server's CreateTime, or,
// when the alloc carries none, when this node first received it.
func (ar *allocRunner) createdAt() time.Time {
	if ct := ar.Alloc().CreateTime; ct > 0 {
		return time.Unix(0, ct)
	}
	return ar.receivedAt
}

// exceedMaxRunDuration stops the alloc for running past deadline: every
// task is killed with a Killing event naming max_run_duration, poststop
// tasks first (before they can start), and the alloc, once its tasks are
// dead, reports complete with that reason, as Nomad's.
func (ar *allocRunner) exceedMaxRunDuration(deadline time.Time) {
	if time.Now().Before(deadline) {
		return
	}
	ar.mu.Lock()
	ar.maxRunExceeded = true
	ar.mu.Unlock()
	ar.logger.Info("allocation exceeded max_run_duration, killing its tasks", zap.Time("deadline", deadline))
	for _, tr := range ar.taskList() {
		if isPoststopTask(tr.task) {
			tr.Kill(maxRunDurationEvent())
		}
	}
	ar.stopAllWith(maxRunDurationEvent)
	ar.taskStateChanged()
}

// maxRunDurationEvent is the Killing event of a task stopped by
// max_run_duration.
func maxRunDurationEvent() *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskKilling)
	ev.KillReason = AllocTimeoutReasonMaxRunDuration
	ev.Details["kill_reason"] = ev.KillReason
	ev.DisplayMessage = AllocTimeoutReasonMaxRunDuration
	return ev
}
