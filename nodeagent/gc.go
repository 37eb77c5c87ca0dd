package nodeagent

import (
	"os"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
)

// Garbage collection of allocs on the node. An alloc is destroyed (tasks
// stopped if any still run, local state deleted, alloc dir removed):
//
//   - when the control plane no longer lists it among the node's
//     assignments (it garbage collected the alloc);
//   - when the node holds more than Config.GCMaxAllocs allocs: terminal
//     ones go, oldest first, until the count is back under the limit.
//
// A running alloc is never collected for the limit. Nor is an alloc whose
// terminal status the control plane has not yet acknowledged (it would
// otherwise be assigned again as if new), nor the previous alloc of a
// replacement still waiting to take over its data.

// noteReported records the terminal allocs of a batch the control plane
// accepted.
func (a *Agent) noteReported(sent []*structs.Allocation) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range sent {
		if s.ClientTerminalStatus() {
			a.reported[s.ID] = true
		}
	}
}

// destroyRunner destroys ar and forgets it once it is gone.
func (a *Agent) destroyRunner(ar *allocRunner, why string) {
	a.mu.Lock()
	if a.destroying[ar.id] {
		a.mu.Unlock()
		return
	}
	a.destroying[ar.id] = true
	a.mu.Unlock()
	a.logger.Info(why, zap.String("alloc_id", ar.id))
	ar.Destroy()
	go func() {
		<-ar.WaitCh()
		a.mu.Lock()
		if a.runners[ar.id] == ar {
			delete(a.runners, ar.id)
		}
		delete(a.destroying, ar.id)
		delete(a.reported, ar.id)
		a.mu.Unlock()
	}()
}

// collectGarbage destroys terminal allocs while the node holds more than
// GCMaxAllocs. It is cheap when under the limit (the poll loop calls it
// every poll).
func (a *Agent) collectGarbage() {
	a.mu.Lock()
	live := len(a.runners) - len(a.destroying)
	a.mu.Unlock()
	if live <= a.cfg.GCMaxAllocs {
		return
	}
	type candidate struct {
		ar *allocRunner
		at time.Time
	}
	var cands []candidate
	pinned := map[string]bool{}
	runners := a.allRunners()
	for _, ar := range runners {
		if prev, ok := needsPrevAlloc(ar.Alloc()); ok && !ar.prerunFinished() {
			pinned[prev] = true
		}
	}
	a.mu.Lock()
	for _, ar := range runners {
		if a.destroying[ar.id] || pinned[ar.id] {
			continue
		}
		l := a.listed[ar.id]
		acked := a.reported[ar.id] || (l != nil && l.TerminalStatus())
		if !acked {
			continue
		}
		cands = append(cands, candidate{ar: ar})
	}
	a.mu.Unlock()
	n := 0
	for _, c := range cands {
		at, ok := c.ar.terminalSince()
		if !ok {
			continue // still running: never collected
		}
		cands[n] = candidate{ar: c.ar, at: at}
		n++
	}
	cands = cands[:n]
	sort.Slice(cands, func(i, j int) bool {
		if !cands[i].at.Equal(cands[j].at) {
			return cands[i].at.Before(cands[j].at)
		}
		return cands[i].ar.id < cands[j].ar.id
	})
	for _, c := range cands {
		if live <= a.cfg.GCMaxAllocs {
			return
		}
		a.destroyRunner(c.ar, "garbage collecting a terminal allocation (more than gc_max_allocs on the node)")
		live--
	}
}

// removeStaleAllocDirs removes the alloc dirs that no runner owns and the
// control plane no longer needs (it lists the alloc as terminal, or not at
// all): left over by a destroy cut short by an agent stop.
func (a *Agent) removeStaleAllocDirs() {
	entries, err := os.ReadDir(a.allocsDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		id := e.Name()
		a.mu.Lock()
		_, owned := a.runners[id]
		l := a.listed[id]
		a.mu.Unlock()
		if owned || (l != nil && !l.TerminalStatus()) {
			continue
		}
		d := NewAllocDir(a.allocsDir(), id)
		if a.cleanupAlloc(d, id) > 0 {
			continue // something still ran there; look again next start
		}
		if err := d.Destroy(); err != nil {
			a.logger.Warn("remove stale alloc dir", zap.String("alloc_id", id), zap.Error(err))
			continue
		}
		a.logger.Info("removed stale alloc dir", zap.String("alloc_id", id))
	}
}
