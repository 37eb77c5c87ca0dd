package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
)

// Pace of the wait for a previous alloc.
const (
	// prevAllocLocalPoll is how often a previous alloc on this node is
	// checked for the end of its tasks.
	prevAllocLocalPoll = 100 * time.Millisecond
	// prevAllocRemotePoll is how often the control plane is asked about a
	// previous alloc on another node that still runs, and the first wait
	// after a transient error.
	prevAllocRemotePoll = 2 * time.Second
	// prevAllocMaxBackoff caps the wait between retries after transient
	// errors (the wait doubles from prevAllocRemotePoll).
	prevAllocMaxBackoff = 30 * time.Second
)

// prevAllocHook makes an alloc that replaces another with
// ephemeral_disk { sticky = true } or { migrate = true } wait for the
// previous alloc to stop, then moves its alloc/data and each task's
// local/ dir into this alloc's dir. A move that fails leaves a clean alloc
// dir (the data is lost, the alloc runs). A previous alloc on another node
// is waited for through the control plane; its data is not copied across
// nodes (drover has no node-to-node transfer yet). When the control plane
// answers that the previous alloc cannot be read (refused or unknown: a
// permanent error), the wait ends at once with a task event and a warning
// and the tasks start; transient errors are retried with backoff.
type prevAllocHook struct {
	ar *allocRunner
}

func (*prevAllocHook) Name() string { return "previous_alloc" }

// needsPrevAlloc returns the previous alloc's ID when alloc must wait for
// it and take over its data.
func needsPrevAlloc(alloc *structs.Allocation) (string, bool) {
	if alloc.PreviousAllocation == "" || alloc.Job == nil {
		return "", false
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil || tg.EphemeralDisk == nil || !(tg.EphemeralDisk.Sticky || tg.EphemeralDisk.Migrate) {
		return "", false
	}
	return alloc.PreviousAllocation, true
}

func (h *prevAllocHook) Prerun(ctx context.Context) error {
	ar := h.ar
	alloc := ar.Alloc()
	prevID, ok := needsPrevAlloc(alloc)
	if !ok || ar.tasksEverStarted() {
		// Nothing to take over, or done already before an agent restart.
		return nil
	}
	log := ar.logger.With(zap.String("previous_alloc_id", prevID))
	if prev := ar.agent.runner(prevID); prev != nil {
		log.Info("waiting for the previous allocation to stop")
		if err := waitLocalPrevAlloc(ctx, prev); err != nil {
			return err
		}
		log.Info("moving the previous allocation's data")
		tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
		var tasks []string
		for _, t := range tg.Tasks {
			tasks = append(tasks, t.Name)
		}
		if err := migrateAllocDir(prev.allocDir, ar.allocDir, tasks); err != nil {
			log.Warn("moving the previous allocation's data failed; starting with a clean alloc dir", zap.Error(err))
			if err := ar.allocDir.Destroy(); err != nil {
				return err
			}
			return ar.allocDir.Build()
		}
		return nil
	}
	if err := h.waitRemote(ctx, alloc.ID, prevID, log); err != nil {
		return err
	}
	return nil
}

// waitLocalPrevAlloc waits until every task of prev is dead (or prev is
// destroyed).
func waitLocalPrevAlloc(ctx context.Context, prev *allocRunner) error {
	t := time.NewTicker(prevAllocLocalPoll)
	defer t.Stop()
	for !prev.clientTerminal() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-prev.WaitCh():
			return nil
		case <-t.C:
		}
	}
	return nil
}

// waitRemote waits until the control plane reports the previous alloc
// terminal or gone, or answers with a permanent error (then the wait is
// skipped: see skipPrevAlloc). Transient errors are retried, waiting
// twice as long after each up to prevAllocMaxBackoff.
func (h *prevAllocHook) waitRemote(ctx context.Context, allocID, prevID string, log *zap.Logger) error {
	ar := h.ar
	logged := false
	backoff := time.Duration(0)
	for {
		wait := prevAllocRemotePoll
		prev, err := ar.agent.cp.PreviousAlloc(ctx, ar.agent.NodeID(), allocID)
		switch {
		case err != nil && errors.Is(err, ErrPermanent):
			h.skipPrevAlloc(prevID, err, log)
			return nil
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			backoff = min(max(2*backoff, prevAllocRemotePoll), prevAllocMaxBackoff)
			wait = backoff
			log.Warn("asking the control plane about the previous allocation failed; will retry",
				zap.Error(err), zap.Duration("backoff", wait))
		case prev == nil || prev.ID != prevID:
			log.Info("previous allocation is gone")
			return nil
		case prev.ClientTerminalStatus() || (prev.ServerTerminalStatus() && prev.ClientStatus == structs.AllocClientStatusPending):
			if prev.NodeID != ar.agent.NodeID() {
				log.Info("previous allocation on another node stopped; its data is not moved across nodes", zap.String("previous_node_id", prev.NodeID))
			}
			return nil
		default:
			backoff = 0
			if !logged {
				log.Info("waiting for the previous allocation to stop", zap.String("previous_node_id", prev.NodeID))
				logged = true
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ar.agent.clock.After(wait):
		}
	}
}

// skipPrevAlloc ends the wait for a previous alloc that the control plane
// will not describe (err is permanent): a warning, and an event on every
// task saying that its data is not moved, then the tasks start.
func (h *prevAllocHook) skipPrevAlloc(prevID string, err error, log *zap.Logger) {
	log.Warn("the previous allocation cannot be read; not waiting for it and not moving its data", zap.Error(err))
	for _, tr := range h.ar.taskList() {
		tr.update("", prevAllocSkippedEvent(prevID, err))
	}
}

// migrateAllocDir moves prev's shared data dir and the local dir of each
// of tasks (those that exist in prev) into next, replacing what next has
// there.
func migrateAllocDir(prev, next AllocDir, tasks []string) error {
	moves := [][2]string{{
		filepath.Join(prev.SharedDir(), SharedDataDirName),
		filepath.Join(next.SharedDir(), SharedDataDirName),
	}}
	for _, t := range tasks {
		if validTaskDirName(t) != nil {
			continue
		}
		moves = append(moves, [2]string{prev.TaskDir(t).LocalDir, next.TaskDir(t).LocalDir})
	}
	for _, m := range moves {
		if err := moveDir(m[0], m[1]); err != nil {
			return err
		}
	}
	return nil
}

// moveDir renames src to dst, replacing dst. A missing src is not an
// error (the previous alloc had nothing there).
func moveDir(src, dst string) error {
	if _, err := os.Lstat(src); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("clear %s: %w", dst, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dst), err)
	}
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("move %s to %s: %w", src, dst, err)
	}
	return nil
}
