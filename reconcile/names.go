package reconcile

import (
	"math/bits"
	"slices"
	"strings"
)

// nameIndex records which name indexes of a group are taken, to pick the
// lowest free names for new placements and canaries and the highest taken
// names to stop on a scale-down. It mirrors Nomad's allocNameIndex bitmap,
// including its size rule (the bitmap covers max(count, taken, highest
// index) rounded up to a byte), which bounds whole-index scans when the
// group count is 0.
//
// Indexes below len(dense)*64 live in a bitmap; the rare larger ones (a
// name like web[4000000000]) live in a sorted slice, so a strange name
// never costs gigabytes.
type nameIndex struct {
	count  uint
	size   uint
	dense  []uint64
	sparse []uint // taken indexes >= len(dense)*64, ascending
}

// newNameIndex builds the index for a group of the given count with the
// given taken indexes (duplicates allowed).
func newNameIndex(count int, taken []uint) *nameIndex {
	c := uint(max(count, 0))
	var highest uint
	for _, i := range taken {
		highest = max(highest, i)
	}
	size := max(c, uint(len(taken)))
	if highest >= size {
		size = highest
		if size%8 == 0 {
			size++
		}
	}
	if size == 0 {
		size = 8
	}
	size = (size + 7) &^ 7
	denseBits := (max(c, uint(len(taken))) + 64 + 63) &^ 63
	ni := &nameIndex{count: c, size: size, dense: make([]uint64, denseBits/64)}
	for _, i := range taken {
		ni.set(i)
	}
	return ni
}

// has reports whether index i is taken.
func (ni *nameIndex) has(i uint) bool {
	if w := i / 64; w < uint(len(ni.dense)) {
		return ni.dense[w]&(1<<(i%64)) != 0
	}
	_, found := slices.BinarySearch(ni.sparse, i)
	return found
}

// set marks index i as taken.
func (ni *nameIndex) set(i uint) {
	if w := i / 64; w < uint(len(ni.dense)) {
		ni.dense[w] |= 1 << (i % 64)
		return
	}
	if at, found := slices.BinarySearch(ni.sparse, i); !found {
		ni.sparse = slices.Insert(ni.sparse, at, i)
	}
}

// unset marks index i as free.
func (ni *nameIndex) unset(i uint) {
	if w := i / 64; w < uint(len(ni.dense)) {
		ni.dense[w] &^= 1 << (i % 64)
		return
	}
	if at, found := slices.BinarySearch(ni.sparse, i); found {
		ni.sparse = slices.Delete(ni.sparse, at, at+1)
	}
}

// scanEnd is the exclusive end of the range Nomad scans for free names:
// [0, count), or the whole bitmap when count is 0 (Nomad computes count-1
// in unsigned arithmetic, which wraps).
func (ni *nameIndex) scanEnd() uint {
	if ni.count == 0 {
		return ni.size
	}
	return ni.count
}

// highest frees and returns (ascending) the n highest taken indexes, or all
// of them when fewer are taken. Scale-downs stop the allocs with these
// names.
func (ni *nameIndex) highest(n uint) []uint {
	var out []uint
	for len(ni.sparse) > 0 && uint(len(out)) < n {
		out = append(out, ni.sparse[len(ni.sparse)-1])
		ni.sparse = ni.sparse[:len(ni.sparse)-1]
	}
	for w := len(ni.dense) - 1; w >= 0 && uint(len(out)) < n; w-- {
		for ni.dense[w] != 0 && uint(len(out)) < n {
			b := 63 - bits.LeadingZeros64(ni.dense[w])
			ni.dense[w] &^= 1 << uint(b)
			out = append(out, uint(w)*64+uint(b))
		}
	}
	slices.Reverse(out)
	return out
}

// next takes and returns the n lowest free indexes below the count. When
// fewer are free, the rest are taken from 0 upwards even though they are in
// use (Nomad's behaviour: placing beyond the count reuses low names).
func (ni *nameIndex) next(n uint) []uint {
	out := make([]uint, 0, n)
	end := ni.scanEnd()
	// Free indexes in the bitmap, a word at a time.
	denseEnd := min(end, uint(len(ni.dense))*64)
	for w := uint(0); w*64 < denseEnd && uint(len(out)) < n; w++ {
		free := ^ni.dense[w]
		if rest := denseEnd - w*64; rest < 64 {
			free &= 1<<rest - 1
		}
		for free != 0 && uint(len(out)) < n {
			b := uint(bits.TrailingZeros64(free))
			free &^= 1 << b
			ni.dense[w] |= 1 << b
			out = append(out, w*64+b)
		}
	}
	for i := denseEnd; i < end && uint(len(out)) < n; i++ {
		if !ni.has(i) {
			out = append(out, i)
			ni.set(i)
		}
	}
	for i := uint(0); uint(len(out)) < n; i++ {
		out = append(out, i)
		ni.set(i)
	}
	return out
}

// nextCanaries takes and returns n names for canaries. It prefers the
// indexes of the allocs being destructively updated (destructive, ascending
// and distinct), so that canaries share names with what they will replace,
// then the lowest free indexes; indexes in existing (names of the current
// canaries) are skipped in both passes. What is still missing is taken
// above the count (count, count+1, ...) so that surplus canaries do not
// overlap the names of the allocs they replace.
func (ni *nameIndex) nextCanaries(n uint, existing map[uint]bool, destructive []uint) []uint {
	out := make([]uint, 0, n)
	if n == 0 {
		return out
	}
	for _, i := range destructive {
		if ni.count != 0 && i >= ni.count {
			continue
		}
		if !existing[i] {
			out = append(out, i)
			ni.set(i)
			if uint(len(out)) == n {
				return out
			}
		}
	}
	for i := uint(0); i < ni.scanEnd(); i++ {
		if !ni.has(i) && !existing[i] {
			out = append(out, i)
			ni.set(i)
			if uint(len(out)) == n {
				return out
			}
		}
	}
	for i := ni.count; uint(len(out)) < n; i++ {
		out = append(out, i)
	}
	return out
}

// allocNames formats the names job.group[index] of one group's new
// placements back to back into one buffer, so that a scale-up of n
// placements costs one allocation for all its names instead of one or two
// per name (structs.AllocName concatenates, and formats indexes of 100 and
// more into a string of their own). Each name is a substring of the
// buffer: a strings.Builder never rewrites the bytes it has handed out.
// Consecutive indexes, the common case, are counted up in place rather than
// formatted from scratch.
type allocNames struct {
	prefix string // "job.group["
	b      strings.Builder
	index  decimal
}

// newAllocNames prepares the names of indexes (as nameIndex.next returns
// them): room for all of them is reserved up front.
func newAllocNames(jobID, group string, indexes []uint) *allocNames {
	n := &allocNames{prefix: jobID + "." + group + "["}
	widest := uint(0)
	for _, i := range indexes {
		widest = max(widest, i)
	}
	n.b.Grow(len(indexes) * (len(n.prefix) + decimalDigits(widest) + 1))
	return n
}

// next returns structs.AllocName(jobID, group, i).
func (n *allocNames) next(i uint) string {
	n.index.set(i)
	start := n.b.Len()
	n.b.WriteString(n.prefix)
	n.b.Write(n.index.digits())
	n.b.WriteByte(']')
	return n.b.String()[start:]
}

// decimal is an unsigned number with its base-10 digits, which set keeps
// up to date cheaply when the number only grows by one.
type decimal struct {
	value uint
	buf   [20]byte // digits right-aligned: buf[start:]
	start int      // 0 until the first set
}

// set makes the number i.
func (d *decimal) set(i uint) {
	switch {
	case d.start != 0 && i == d.value:
	case d.start != 0 && i == d.value+1:
		d.increment()
	default:
		d.start = len(d.buf)
		for v := i; ; v /= 10 {
			d.start--
			d.buf[d.start] = byte('0' + v%10)
			if v < 10 {
				break
			}
		}
	}
	d.value = i
}

// increment adds one to the digits, carrying.
func (d *decimal) increment() {
	for p := len(d.buf) - 1; p >= d.start; p-- {
		if d.buf[p] != '9' {
			d.buf[p]++
			return
		}
		d.buf[p] = '0'
	}
	d.start--
	d.buf[d.start] = '1'
}

// digits returns the number in base 10.
func (d *decimal) digits() []byte { return d.buf[d.start:] }

// decimalDigits is the length of i in base 10.
func decimalDigits(i uint) int {
	n := 1
	for ; i >= 10; i /= 10 {
		n++
	}
	return n
}
