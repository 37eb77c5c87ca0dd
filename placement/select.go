package placement

import (
	"hash/fnv"
	"math/bits"
	"math/rand/v2"

	"github.com/drover-sched/drover/structs"
)

// How a placement samples the candidates, as Nomad's generic stack: the
// candidates are shuffled once per eval from its ID, and each placement
// walks on from where the last one stopped until limit nodes that are
// feasible and have room were scored; infeasible and full nodes do not
// count, so the sample widens until it finds room. Up to maxSkip nodes
// scoring at or below skipScoreThreshold (they hold one of the group's
// allocs, or carry a reschedule penalty) are set aside and compete only
// when the walk runs out of nodes before limit others were scored. The
// best score wins.
//
// Where drover goes further than Nomad: the nodes its last placements
// chose (up to limit of them, the "recent" nodes) are scored again with
// every sample while they stay feasible and have room. Bin-packing wants
// the next alloc where the last ones went; a random sample of log2(n)
// nodes alone opens up to 15% more nodes than scoring every node does
// (TestSampledBinPackingFillsNodes keeps it within 10%).
const (
	skipScoreThreshold = 0.0
	maxSkip            = 3
)

// sampleLimit is how many feasible nodes with room a placement scores,
// as Nomad's generic stack: 2 for batch jobs (the power of two choices),
// ceil(log2(candidates)) and at least 2 for service jobs.
func sampleLimit(candidates int, batch bool) int {
	limit := 2
	if !batch && candidates > 1 {
		limit = max(limit, bits.Len(uint(candidates-1)))
	}
	return limit
}

// shuffle puts nodes (sorted by ID) in an order drawn from evalID: a
// Fisher-Yates shuffle from a generator seeded with the ID's hash.
func shuffle(nodes []*nodeState, evalID string) {
	h := fnv.New64a()
	h.Write([]byte(evalID))
	seed := h.Sum64()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := len(nodes) - 1; i > 0; i-- {
		j := rng.IntN(i + 1)
		nodes[i], nodes[j] = nodes[j], nodes[i]
	}
}

// sample chooses the node for one alloc of g: the recent nodes, then the
// walk. It returns nil when no node is feasible with room.
func (p *Placer) sample(g *groupPlan, penalize map[string]bool, m *structs.AllocMetric, top *topScores) *nodeState {
	var best *nodeState
	var bestNorm float64
	var s score
	consider := func(s *score) {
		top.add(s)
		if best == nil || s.norm > bestNorm {
			best, bestNorm = s.node, s.norm
		}
	}
	p.samples++
	kept := p.recent[:0]
	for _, ns := range p.recent {
		ns.sampled = p.samples
		if p.consider(g, ns, penalize, m, &s) {
			kept = append(kept, ns)
			consider(&s)
		} else {
			ns.recent = false
		}
	}
	clear(p.recent[len(kept):])
	p.recent = kept

	var skipped [maxSkip]score
	nskipped, scored, visited := 0, 0, 0
	for visited < len(p.order) && scored < g.limit {
		ns := p.order[(p.offset+visited)%len(p.order)]
		visited++
		if ns.sampled == p.samples {
			continue // a recent node, looked at above
		}
		if !p.consider(g, ns, penalize, m, &s) {
			continue
		}
		if s.norm <= skipScoreThreshold && nskipped < maxSkip {
			top.add(&s)
			skipped[nskipped] = s
			nskipped++
			continue
		}
		scored++
		consider(&s)
	}
	if len(p.order) > 0 {
		p.offset = (p.offset + visited) % len(p.order)
	}
	// The walk ran out of nodes: the poor ones compete too.
	for i := range skipped[:min(nskipped, g.limit-scored)] {
		if best == nil || skipped[i].norm > bestNorm {
			best, bestNorm = skipped[i].node, skipped[i].norm
		}
	}
	if best != nil {
		p.remember(best)
	}
	return best
}

// remember makes ns one of the recent nodes, replacing the oldest when
// there are limit of them already.
func (p *Placer) remember(ns *nodeState) {
	if ns.recent {
		return
	}
	ns.recent = true
	if len(p.recent) < p.limit {
		p.recent = append(p.recent, ns)
		return
	}
	p.nextRecent %= len(p.recent)
	p.recent[p.nextRecent].recent = false
	p.recent[p.nextRecent] = ns
	p.nextRecent++
}

// exhaustive scores every candidate, in node ID order, and returns the
// best (the first of equals), or nil.
func (p *Placer) exhaustive(g *groupPlan, penalize map[string]bool, m *structs.AllocMetric, top *topScores) *nodeState {
	var best *nodeState
	var bestNorm float64
	var s score
	for _, ns := range p.order {
		if !p.consider(g, ns, penalize, m, &s) {
			continue
		}
		top.add(&s)
		if best == nil || s.norm > bestNorm {
			best, bestNorm = ns, s.norm
		}
	}
	return best
}
