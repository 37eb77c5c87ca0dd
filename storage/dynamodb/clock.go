package dynamodb

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Indexes without a counter item. Every write needs an index (Nomad's
// Raft index: objects' CreateIndex and ModifyIndex, X-Nomad-Index); one
// counter item bumped by every write would take every write of the
// control plane, far above a partition's 1,000 writes per second at
// 10,000 placements per second. Instead each Store draws indexes from a
// hybrid logical clock: the next index is the larger of the last one it
// issued or read plus one, and the wall clock in unix microseconds.
//
//   - Indexes a Store issues strictly grow (the clock never goes back, and
//     a burst of more than one write per microsecond runs ahead of the wall
//     clock by one per write until the wall clock catches up).
//   - Every index a Store reads from the table (any item's mi, ci, jmi,
//     pIdx, ami or idx) is observed: the next one it issues is larger. A
//     read-modify-write guarded by the modify index it read (mi = :pmi)
//     therefore always writes a larger one, whatever the writers' clocks
//     say, so a guard can never pass twice for the same value (no ABA), and
//     a plan's index always differs from the plan index its snapshot read.
//   - Two Stores (two Lambda containers) may issue the same value in the
//     same microsecond. Nothing relies on indexes being unique across
//     writers except a node's assignment index, whose plan write therefore
//     requires the value to change (renderNode), so that an agent never
//     misses a plan.
//   - Values stay below 2^53 (unix microseconds are about 1.8 × 10^15 in
//     2026), so JSON readers that use doubles keep them exact. An index
//     written by a drover that used the counter item is far smaller, so
//     indexes keep growing across the upgrade.
type hlc struct {
	last atomic.Uint64
	// now is the wall clock (tests replace it).
	now func() time.Time
}

// next returns a new index: greater than every index issued or observed.
func (c *hlc) next() uint64 {
	for {
		last := c.last.Load()
		n := last + 1
		if w := c.wall(); w > n {
			n = w
		}
		if c.last.CompareAndSwap(last, n) {
			return n
		}
	}
}

// observe records an index read from the table.
func (c *hlc) observe(v uint64) {
	for {
		last := c.last.Load()
		if v <= last || c.last.CompareAndSwap(last, v) {
			return
		}
	}
}

func (c *hlc) wall() uint64 {
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	return uint64(now().UnixMicro())
}

// indexAttrs are the attributes that hold indexes, observed on every read.
var indexAttrs = []string{"mi", "ci", "jmi", "pIdx", "ami", "idx"}

// observeItems feeds the indexes of items read into the clock.
func (s *Store) observeItems(items ...item) {
	var top uint64
	for _, it := range items {
		for _, a := range indexAttrs {
			if _, ok := it[a]; ok {
				top = max(top, getU(it, a))
			}
		}
	}
	if top > 0 {
		s.clock.observe(top)
	}
}

// readAfterIndex guards a write at idx of an item read after idx was
// issued, whose modify index was prevMI: the write must carry a larger
// one, so when the read saw prevMI >= idx (a writer whose clock is ahead)
// the operation is retried from its reads (errRace), with a larger index
// since the read was observed.
func readAfterIndex(idx, prevMI uint64, what string) error {
	if prevMI >= idx {
		return fmt.Errorf("%w: %s was written at index %d, after this write's %d", errRace, what, prevMI, idx)
	}
	return nil
}

// nextIndex returns the index of a write. Call it after the reads the
// write is guarded by, so that it is larger than every index they saw.
func (s *Store) nextIndex() uint64 { return s.clock.next() }
