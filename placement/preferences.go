package placement

import (
	"math"

	"github.com/drover-sched/drover/structs"
)

// Placement preferences, as Nomad's generic stack ranks them after bin
// packing, job anti-affinity and the reschedule penalty:
//
//   - node-affinity: the weights of the group's affinities (job, group and
//     its tasks') that the node matches, summed, over the sum of all their
//     absolute weights: -1..1. It joins the node's average score only when
//     it is not 0, as in Nomad.
//   - allocation-spread: per spread block (the job's and the group's),
//     counted over the group's live allocs (existing, minus the plan's
//     stops, plus its placements so far) per value of the attribute. With
//     targets, a node whose value is below its desired count (percent of
//     the group's count; values not listed share what the percentages
//     leave) gets a boost growing with the gap, weighted by the spread's
//     share of the group's spread weights, and a penalty above it; a value
//     with no share gets -1 (or the lowest boost seen, for a 0% target).
//     Without targets the group spreads evenly over the values seen. A
//     node lacking the attribute gets -1 per spread. The spreads' sum
//     joins the average when not 0.
//
// A group with preferences scores max(count, 100) feasible nodes per
// placement instead of log2(n): the sample must be wide enough to find
// the preferred nodes, as Nomad's stack widens its limit.
const minPreferenceLimit = 100

// spreadCount tallies one group's live allocs per value of one spread's
// attribute. With targets, values that are not a target are counted
// together under implicitTarget.
type spreadCount struct {
	attribute  string
	groupIndex int
	targets    map[string]bool // nil without targets
	byValue    map[string]int
	// min and max of the counts above zero, for even spreading; stale
	// after a change until bounds recomputes them.
	minCount, maxCount int
	stale              bool
}

// implicitTarget is the value every non-target value counts as, when a
// spread has targets.
const implicitTarget = "*"

// key returns the value n counts under, and false when n lacks the
// attribute.
func (sc *spreadCount) key(n *structs.Node) (string, bool) {
	v, ok := resolveTarget(sc.attribute, n)
	if !ok {
		return "", false
	}
	if sc.targets != nil && !sc.targets[v] {
		return implicitTarget, true
	}
	return v, true
}

func (sc *spreadCount) add(n *structs.Node, delta int) {
	if k, ok := sc.key(n); ok {
		sc.byValue[k] += delta
		sc.stale = true
	}
}

// bounds returns the smallest and largest count above zero (0, 0 when no
// value holds an alloc).
func (sc *spreadCount) bounds() (lo, hi int) {
	if sc.stale {
		sc.minCount, sc.maxCount, sc.stale = 0, 0, false
		for _, c := range sc.byValue {
			if c <= 0 {
				continue
			}
			if sc.minCount == 0 || c < sc.minCount {
				sc.minCount = c
			}
			sc.maxCount = max(sc.maxCount, c)
		}
	}
	return sc.minCount, sc.maxCount
}

// evenBoost is the even-spread score of a node whose value counts cur
// allocs: 0 before any alloc is placed; a boost for values below the
// least used ones (1 for an unused value); for the least used ones the
// relative gap to the most used, or -1 when every value is even; a
// penalty for values above the least used.
func (sc *spreadCount) evenBoost(cur int) float64 {
	lo, hi := sc.bounds()
	switch {
	case hi == 0:
		return 0
	case cur != lo:
		return float64(lo-cur) / float64(lo)
	case lo == hi:
		return -1
	}
	return float64(hi-lo) / float64(lo)
}

// spreadPlan is one spread block as it applies to one group.
type spreadPlan struct {
	count   *spreadCount
	share   float64            // the spread's weight over the group's spread weights
	desired map[string]float64 // allocs wanted per target value (and implicitTarget); nil: even
}

// groupSpreads returns the spreads that apply to tg: the group's, then the
// job's.
func groupSpreads(job *structs.Job, tg *structs.TaskGroup) []*structs.Spread {
	if len(job.Spreads) == 0 {
		return tg.Spreads
	}
	return append(append([]*structs.Spread(nil), tg.Spreads...), job.Spreads...)
}

// groupAffinities returns the affinities that apply to tg: the job's, the
// group's and its tasks'.
func groupAffinities(job *structs.Job, tg *structs.TaskGroup) []*structs.Affinity {
	out := append([]*structs.Affinity(nil), job.Affinities...)
	out = append(out, tg.Affinities...)
	for _, t := range tg.Tasks {
		out = append(out, t.Affinities...)
	}
	return out
}

// newSpreadCounts returns one empty tally per spread of each of the job's
// groups.
func newSpreadCounts(job *structs.Job) [][]*spreadCount {
	if len(job.Spreads) == 0 && !anyGroupSpreads(job) {
		return nil
	}
	out := make([][]*spreadCount, len(job.TaskGroups))
	for gi, tg := range job.TaskGroups {
		for _, s := range groupSpreads(job, tg) {
			sc := &spreadCount{attribute: s.Attribute, groupIndex: gi, byValue: map[string]int{}}
			if len(s.SpreadTarget) > 0 {
				sc.targets = make(map[string]bool, len(s.SpreadTarget))
				for _, t := range s.SpreadTarget {
					sc.targets[t.Value] = true
				}
			}
			out[gi] = append(out[gi], sc)
		}
	}
	return out
}

func anyGroupSpreads(job *structs.Job) bool {
	for _, tg := range job.TaskGroups {
		if len(tg.Spreads) > 0 {
			return true
		}
	}
	return false
}

// preparePreferences fills g's affinities and spreads.
func (p *Placer) preparePreferences(g *groupPlan) {
	g.affinities = groupAffinities(p.job, g.tg)
	for _, a := range g.affinities {
		g.affinityWeights += math.Abs(float64(a.Weight))
		c := a.Constraint()
		g.affinityConstraints = append(g.affinityConstraints, c)
		g.affinityEscapes = g.affinityEscapes || escapesClass(c.LTarget) || escapesClass(c.RTarget)
	}
	spreads := groupSpreads(p.job, g.tg)
	if g.index >= 0 && len(spreads) > 0 {
		total := 0.0
		for _, s := range spreads {
			total += float64(s.Weight)
		}
		for i, s := range spreads {
			sp := &spreadPlan{count: p.spreadCounts[g.index][i]}
			if total > 0 {
				sp.share = float64(s.Weight) / total
			}
			if len(s.SpreadTarget) > 0 {
				sp.desired = make(map[string]float64, len(s.SpreadTarget)+1)
				sum := 0.0
				for _, t := range s.SpreadTarget {
					d := float64(t.Percent) / 100 * float64(g.tg.Count)
					sp.desired[t.Value] = d
					sum += d
				}
				if sum > 0 && sum < float64(g.tg.Count) {
					sp.desired[implicitTarget] = float64(g.tg.Count) - sum
				}
			}
			g.spreads = append(g.spreads, sp)
		}
	}
	if len(g.affinities) > 0 || len(g.spreads) > 0 {
		g.prefers = true
		g.limit = max(g.tg.Count, minPreferenceLimit)
	}
}

// affinityScore is node ns's node-affinity score for g, computed once per
// node class unless an affinity reads a value unique to the node.
func (p *Placer) affinityScore(g *groupPlan, ns *nodeState) float64 {
	if g.affinityWeights == 0 {
		return 0
	}
	if !g.affinityEscapes && ns.class >= 0 {
		for len(g.affinityByClass) <= ns.class {
			g.affinityByClass = append(g.affinityByClass, math.NaN())
		}
		if v := g.affinityByClass[ns.class]; !math.IsNaN(v) {
			return v
		}
		v := p.matchAffinities(g, ns.node)
		g.affinityByClass[ns.class] = v
		return v
	}
	return p.matchAffinities(g, ns.node)
}

func (p *Placer) matchAffinities(g *groupPlan, n *structs.Node) float64 {
	matched := 0.0
	for i, c := range g.affinityConstraints {
		if p.cc.meets(c, n) {
			matched += float64(g.affinities[i].Weight)
		}
	}
	return matched / g.affinityWeights
}

// spreadScore is node ns's allocation-spread score for g.
func (p *Placer) spreadScore(g *groupPlan, ns *nodeState) float64 {
	total := 0.0
	for _, sp := range g.spreads {
		k, ok := sp.count.key(ns.node)
		if !ok {
			total--
			continue
		}
		used := sp.count.byValue[k]
		if sp.desired == nil {
			total += sp.count.evenBoost(used)
			continue
		}
		desired, ok := sp.desired[k]
		switch {
		case !ok:
			total--
		case desired == 0:
			total += p.lowestSpreadBoost
		default:
			boost := (desired - float64(used+1)) / desired * sp.share
			total += boost
			p.lowestSpreadBoost = min(p.lowestSpreadBoost, boost)
		}
	}
	return total
}
