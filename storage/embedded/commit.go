package embedded

import (
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// Group commit. bbolt has one writer at a time, and each transaction ends
// with an fsync (about 3 ms on this project's CI machine): writes that
// arrive while a transaction commits wait, then all of them run in the
// next transaction, one after another, and share its fsync. Nobody waits
// on purpose: a lone write commits at once. A write that fails in a
// shared transaction gets its error (computed after the writes before it,
// a valid serial order) and the others run again without it in a fresh
// transaction, so a failed write never leaves anything behind.
//
// The writer that finds no commit in progress leads: it commits the
// writes queued at that moment, then hands the lead to the first write
// queued meanwhile (if any) and returns.

type committer struct {
	mu      sync.Mutex
	leading bool
	queue   []*pendingWrite
	txs     atomic.Int64 // write transactions run (tests)
}

type pendingWrite struct {
	fn   func(w *wtx) error
	w    *wtx
	err  error
	wake chan bool // true: lead the next batch; false: done
}

// groupCommit runs fn in a write transaction (maybe shared) and returns
// the wtx of the run that committed.
func (s *Store) groupCommit(fn func(w *wtx) error) (*wtx, error) {
	c := &s.commits
	p := &pendingWrite{fn: fn, wake: make(chan bool, 1)}
	c.mu.Lock()
	c.queue = append(c.queue, p)
	lead := !c.leading
	c.leading = true
	c.mu.Unlock()
	if lead || <-p.wake {
		s.leadBatch()
	}
	return p.w, p.err
}

// leadBatch commits every queued write, then passes the lead on.
func (s *Store) leadBatch() {
	c := &s.commits
	c.mu.Lock()
	batch := c.queue
	c.queue = nil
	c.mu.Unlock()

	s.commitBatch(batch)

	c.mu.Lock()
	if len(c.queue) > 0 {
		c.queue[0].wake <- true
	} else {
		c.leading = false
	}
	c.mu.Unlock()
	for _, p := range batch {
		p.wake <- false
	}
}

// commitBatch runs the writes in one transaction; a write that fails is
// taken out with its error and the rest run again.
func (s *Store) commitBatch(batch []*pendingWrite) {
	run := batch
	for len(run) > 0 {
		failed := -1
		s.commits.txs.Add(1)
		err := s.db.Update(func(tx *bolt.Tx) error {
			for i, p := range run {
				w, err := s.runWrite(tx, p.fn)
				if err != nil {
					failed, p.err = i, err
					return err
				}
				p.w = w
			}
			return nil
		})
		if failed < 0 {
			for _, p := range run {
				p.err = err
			}
			return
		}
		rest := make([]*pendingWrite, 0, len(run)-1)
		rest = append(rest, run[:failed]...)
		run = append(rest, run[failed+1:]...)
	}
}
