package reconcile

import (
	"iter"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/structs"
)

// allocInfo is one existing allocation plus what the reconciler derives from
// it exactly once: its name index as an integer, the job version it runs and
// the group definition of that version. Everything later works on these, so
// no name is parsed and no job is searched twice.
type allocInfo struct {
	alloc *structs.Allocation
	// index is the number in the alloc's name, parsed as Nomad does: the
	// text between "<job>.<group>[" and the closing "]"; 0 when it does not
	// parse.
	index uint
	// generated reports whether the alloc's name is exactly the name the
	// group generates for index (AllocName(job, group, index)). Only such
	// names match the names the name index picks for removal or for
	// canaries; a malformed name never does (as a string compare in Nomad).
	generated bool
	// version and createIndex identify the job version (and incarnation)
	// the alloc runs.
	version     uint64
	createIndex uint64
	// group is the alloc's group as defined in the job version the alloc
	// runs: it, not the current job, decides the reschedule policy, the
	// disconnect settings and the kill timeouts. Nil when that version has
	// no such group.
	group *structs.TaskGroup
}

// parseNameIndex reads the index out of an alloc name the way Nomad does:
// it skips len(job)+len(group)+2 bytes ("<job>.<group>[") and parses what
// lies before the last byte. Anything unparsable (or negative) is index 0.
func parseNameIndex(name, jobID, group string) uint {
	prefix := len(jobID) + len(group) + 2
	if len(name) <= 3 || len(name) <= prefix {
		return 0
	}
	n, err := strconv.Atoi(name[prefix : len(name)-1])
	if err != nil || n < 0 {
		return 0
	}
	return uint(n)
}

// isGeneratedName reports whether name == structs.AllocName(jobID, group,
// index), without building the string: the prefix matches and the
// bracketed number is written canonically (digits, no leading zero).
func isGeneratedName(name, jobID, group string, index uint) bool {
	prefix := len(jobID) + len(group) + 2
	if len(name) < prefix+2 || name[:len(jobID)] != jobID || name[len(jobID)] != '.' ||
		name[len(jobID)+1:prefix-1] != group || name[prefix-1] != '[' || name[len(name)-1] != ']' {
		return false
	}
	digits := name[prefix : len(name)-1]
	if digits[0] == '0' && len(digits) > 1 {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	// Canonical digits parse to index unless they overflowed (index 0).
	return index != 0 || digits == "0"
}

// compareCanonical is the order in which the reconciler walks the allocs of
// a group wherever Nomad walks a Go map: by name index, then newest job
// version first, then alloc ID. Walking it backwards therefore meets the
// highest index first and, among duplicates of one name, the oldest version
// first, which is what scale-downs and duplicate removal should stop.
func compareCanonical(a, b *allocInfo) int {
	switch {
	case a.index != b.index:
		if a.index < b.index {
			return -1
		}
		return 1
	case a.version != b.version:
		if a.version > b.version {
			return -1
		}
		return 1
	}
	return strings.Compare(a.alloc.ID, b.alloc.ID)
}

// sortCanonical sorts a group's allocs in canonical order. Name indexes are
// nearly always dense (0..count-1), so a counting sort by index does the bulk
// in linear time and only allocs sharing an index are compared further.
func sortCanonical(as []*allocInfo) {
	n := len(as)
	if n < 2 {
		return
	}
	var maxIndex uint
	for _, a := range as {
		maxIndex = max(maxIndex, a.index)
	}
	if maxIndex > uint(4*n+64) {
		slices.SortFunc(as, compareCanonical)
		return
	}
	starts := make([]int32, maxIndex+2)
	for _, a := range as {
		starts[a.index+1]++
	}
	for i := 1; i < len(starts); i++ {
		starts[i] += starts[i-1]
	}
	out := make([]*allocInfo, n)
	next := slices.Clone(starts[:len(starts)-1])
	for _, a := range as {
		out[next[a.index]] = a
		next[a.index]++
	}
	copy(as, out)
	for i := 0; i+1 < len(starts); i++ {
		if lo, hi := starts[i], starts[i+1]; hi-lo > 1 {
			slices.SortFunc(as[lo:hi], compareCanonical)
		}
	}
}

// allocSet is a set of allocs of one group: a bitmap over the positions of
// the group's allocs in canonical order. Set algebra costs n/64 word
// operations and iteration yields canonical order, so results never depend
// on map order. Every set of a group has the group's word length.
type allocSet []uint64

// has reports whether position p is in the set.
func (s allocSet) has(p int) bool {
	w := p >> 6
	return w < len(s) && s[w]&(1<<(uint(p)&63)) != 0
}

// add puts position p into the set.
func (s allocSet) add(p int) { s[p>>6] |= 1 << (uint(p) & 63) }

// remove takes position p out of the set.
func (s allocSet) remove(p int) { s[p>>6] &^= 1 << (uint(p) & 63) }

// len returns the number of allocs in the set.
func (s allocSet) len() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// empty reports whether the set has no alloc.
func (s allocSet) empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

// clone returns a copy of the set.
func (s allocSet) clone() allocSet { return slices.Clone(s) }

// minus returns a new set: s without the members of others.
func (s allocSet) minus(others ...allocSet) allocSet {
	out := s.clone()
	for _, o := range others {
		for i := range min(len(out), len(o)) {
			out[i] &^= o[i]
		}
	}
	return out
}

// plus returns a new set: s with the members of others.
func (s allocSet) plus(others ...allocSet) allocSet {
	out := s.clone()
	for _, o := range others {
		for i := range min(len(out), len(o)) {
			out[i] |= o[i]
		}
	}
	return out
}

// ascending yields the positions in the set, lowest (canonical first)
// first. Removing the current position while iterating is allowed.
func (s allocSet) ascending() iter.Seq[int] {
	return func(yield func(int) bool) {
		for w := range s {
			word := s[w]
			for word != 0 {
				b := bits.TrailingZeros64(word)
				word &^= 1 << uint(b)
				if !yield(w<<6 | b) {
					return
				}
			}
		}
	}
}

// descending yields the positions in the set, highest first. Removing the
// current position while iterating is allowed.
func (s allocSet) descending() iter.Seq[int] {
	return func(yield func(int) bool) {
		for w := len(s) - 1; w >= 0; w-- {
			word := s[w]
			for word != 0 {
				b := 63 - bits.LeadingZeros64(word)
				word &^= 1 << uint(b)
				if !yield(w<<6 | b) {
					return
				}
			}
		}
	}
}
