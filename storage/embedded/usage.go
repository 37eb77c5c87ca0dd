package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/structs"
)

// Node usage records. Bucket node_usage maps a node ID to what its
// resource-holding allocs hold together. Every write that places an alloc,
// changes whether one holds resources (a stop, a client report, a lost
// node) or removes one (GC) moves the record in the same transaction
// (wtx.saveAlloc, wtx.dropAlloc), so usage is never recomputed from the
// allocs and is released exactly once: a transaction that aborts rolls the
// record back with the allocs.
//
// Record format (version 2), all integers signed varints
// (encoding/binary.AppendVarint):
//
//	byte 0:   format version (2)
//	varint:   CPU MHz held
//	varint:   memory MiB held
//	varint:   disk MiB held
//	varint:   number of allocs holding resources
//	varint:   number of host ports held, then each port, ascending, as
//	          the difference from the one before (the first from 0)
//
// Version 1 records end after the alloc count (no ports: allocs held none
// before group networks existed). A reader takes the fields present and
// leaves the rest zero. The port list may hold a port twice only if a
// non-plan write made two allocs hold it (a client report reviving a
// finished alloc); a plan that would is refused (checkCapacity).

const usageFormat = 2

// usageRec is one node's usage record.
type usageRec struct {
	res    structs.ComparableResources
	allocs int64
	ports  []int // host ports held, ascending
	// clashes are ports this transaction's placements took that were
	// already held (not stored; checkCapacity refuses the plan).
	clashes []int
}

// addPorts takes ports into the record, noting those already held.
func (u *usageRec) addPorts(ports []int) {
	for _, p := range ports {
		i, found := slices.BinarySearch(u.ports, p)
		if found {
			u.clashes = append(u.clashes, p)
		}
		u.ports = slices.Insert(u.ports, i, p)
	}
}

// dropPorts gives ports back (one holder each).
func (u *usageRec) dropPorts(ports []int) {
	for _, p := range ports {
		if i, found := slices.BinarySearch(u.ports, p); found {
			u.ports = slices.Delete(u.ports, i, i+1)
		}
	}
}

func encodeUsage(u usageRec) []byte {
	b := make([]byte, 1, 1+(5+len(u.ports))*binary.MaxVarintLen64)
	b[0] = usageFormat
	for _, v := range []int64{u.res.CPU, u.res.MemoryMB, u.res.DiskMB, u.allocs, int64(len(u.ports))} {
		b = binary.AppendVarint(b, v)
	}
	prev := 0
	for _, p := range u.ports {
		b = binary.AppendVarint(b, int64(p-prev))
		prev = p
	}
	return b
}

func decodeUsage(b []byte) (usageRec, error) {
	var u usageRec
	if len(b) == 0 {
		return u, nil
	}
	if b[0] < 1 {
		return u, fmt.Errorf("usage record format %d unknown", b[0])
	}
	var nports int64
	fields := []*int64{&u.res.CPU, &u.res.MemoryMB, &u.res.DiskMB, &u.allocs, &nports}
	rest := b[1:]
	for _, f := range fields {
		if len(rest) == 0 {
			break
		}
		v, n := binary.Varint(rest)
		if n <= 0 {
			return u, errors.New("usage record truncated")
		}
		*f, rest = v, rest[n:]
	}
	if nports < 0 || nports > int64(len(rest)) {
		return u, fmt.Errorf("usage record holds %d ports in %d bytes", nports, len(rest))
	}
	if nports > 0 {
		u.ports = make([]int, 0, nports)
		prev := 0
		for range nports {
			v, n := binary.Varint(rest)
			if n <= 0 {
				return u, errors.New("usage record truncated in its ports")
			}
			prev += int(v)
			u.ports, rest = append(u.ports, prev), rest[n:]
		}
	}
	return u, nil
}

// holding is what one alloc holds on its node (zero unless it holds
// resources). holding{} stands for a new alloc.
type holding struct {
	node   string
	res    structs.ComparableResources
	ports  []int // host ports
	held   bool
	stored bool // the alloc exists in the store
}

func holdingOf(a *structs.Allocation) holding {
	if a == nil {
		return holding{}
	}
	if !a.HoldsResources() {
		return holding{stored: true}
	}
	return holding{node: a.NodeID, res: a.AllocatedResources.Comparable(), ports: a.AllocatedResources.HostPorts(), held: true, stored: true}
}

// usageOf returns the node's usage as this transaction has it (loaded
// once, then changed in memory; flushUsage writes it back).
func (w *wtx) usageOf(nodeID string) (*usageRec, error) {
	if u, ok := w.usage[nodeID]; ok {
		return u, nil
	}
	u, err := decodeUsage(w.tx.Bucket(bNodeUsage).Get([]byte(nodeID)))
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", nodeID, err)
	}
	w.usage[nodeID] = &u
	return &u, nil
}

// moveUsage replaces what was held (before a change) by what is held now.
func (w *wtx) moveUsage(was, now holding) error {
	if was.held {
		u, err := w.usageOf(was.node)
		if err != nil {
			return err
		}
		u.res = u.res.Sub(was.res)
		u.allocs--
		u.dropPorts(was.ports)
	}
	if now.held {
		u, err := w.usageOf(now.node)
		if err != nil {
			return err
		}
		u.res = u.res.Add(now.res)
		u.allocs++
		u.addPorts(now.ports)
	}
	return nil
}

// flushUsage writes the usage records the transaction changed. A negative
// record means an alloc was released twice: the write is refused rather
// than corrupting the books.
func (w *wtx) flushUsage() error {
	b := w.tx.Bucket(bNodeUsage)
	for id, u := range w.usage {
		if u.res.CPU < 0 || u.res.MemoryMB < 0 || u.res.DiskMB < 0 || u.allocs < 0 {
			return fmt.Errorf("usage of node %s would become negative (%+v, %d allocs): an alloc released twice", id, u.res, u.allocs)
		}
		if err := b.Put([]byte(id), encodeUsage(*u)); err != nil {
			return err
		}
	}
	return nil
}

// saveAlloc writes a, whose stored state held was (holding{} for a new
// alloc), moves its node's usage by the change and keeps allocs_terminal
// (the allocs garbage collection looks at) in step.
func (w *wtx) saveAlloc(was holding, a *structs.Allocation) error {
	data, err := encodeAlloc(a)
	if err != nil {
		return fmt.Errorf("encode alloc %s: %w", a.ID, err)
	}
	return w.saveAllocData(was, a, data)
}

// saveAllocData is saveAlloc with a's stored form already encoded.
func (w *wtx) saveAllocData(was holding, a *structs.Allocation, data []byte) error {
	now := holdingOf(a)
	if err := w.moveUsage(was, now); err != nil {
		return err
	}
	if !structs.ServiceRegistrationLive(a) {
		if err := w.deleteAllocServices(a.ID); err != nil {
			return err
		}
	}
	terminal := w.tx.Bucket(bAllocsTerminal)
	switch {
	case !now.held:
		if err := terminal.Put([]byte(a.ID), nil); err != nil {
			return err
		}
	case was.stored && !was.held:
		if err := terminal.Delete([]byte(a.ID)); err != nil {
			return err
		}
	}
	return w.tx.Bucket(bAllocs).Put([]byte(a.ID), data)
}

// rebuildUsage computes every node's usage record from the allocs: once,
// when a state file written before usage records existed is opened.
func rebuildUsage(tx *bolt.Tx) error {
	recs := map[string]*usageRec{}
	c := tx.Bucket(bAllocs).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		a, err := decodeAlloc(v)
		if err != nil {
			return err
		}
		h := holdingOf(a)
		if !h.held {
			continue
		}
		u, ok := recs[h.node]
		if !ok {
			u = &usageRec{}
			recs[h.node] = u
		}
		u.res = u.res.Add(h.res)
		u.allocs++
		u.addPorts(h.ports)
	}
	b := tx.Bucket(bNodeUsage)
	for id, u := range recs {
		if err := b.Put([]byte(id), encodeUsage(*u)); err != nil {
			return err
		}
	}
	return tx.Bucket(bMeta).Put(keyUsageBuilt, putUint(usageFormat))
}

// buildTerminalIndex fills allocs_terminal: once, when a state file
// written before it existed is opened.
func buildTerminalIndex(tx *bolt.Tx) error {
	terminal := tx.Bucket(bAllocsTerminal)
	c := tx.Bucket(bAllocs).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		a, err := decodeAlloc(v)
		if err != nil {
			return err
		}
		if !a.HoldsResources() {
			if err := terminal.Put([]byte(a.ID), nil); err != nil {
				return err
			}
		}
	}
	return tx.Bucket(bMeta).Put(keyTerminalBuilt, putUint(1))
}
