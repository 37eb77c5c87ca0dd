package placement

import (
	"math"

	"github.com/drover-sched/drover/structs"
)

// maxScoreMetaData is how many of the best node scores a placement keeps in
// its metrics (Nomad keeps the top 5).
const maxScoreMetaData = 5

// score is one node's rank for one placement, kept as plain numbers: the
// metrics' NodeScoreMeta (with its map) is built only for the few best.
type score struct {
	node         *nodeState
	binpack      float64
	antiAffinity float64 // 0 when the node holds none of the group's allocs
	penalized    bool
	affinity     float64 // node-affinity; 0 without a match (preferences.go)
	spread       float64 // allocation-spread; 0 when neutral
	norm         float64
}

// score ranks a feasible node with room: Nomad's bin-packing fit (fuller
// is better) averaged with its job anti-affinity penalty (spread a group's
// allocs) and the reschedule penalty.
func (g *groupPlan) score(s *score, ns *nodeState, penalized bool) {
	*s = score{node: ns, binpack: binPackScore(ns.capacity, ns.used.Add(g.ask)), penalized: penalized}
	if g.spread {
		s.binpack = 1 - s.binpack // Nomad's ScoreFitSpread mirrors the bin-packing fit
	}
	total, n := s.binpack, 1.0
	if g.index >= 0 && g.tg.Count > 0 {
		if c := ns.groupAllocs[g.index]; c > 0 {
			s.antiAffinity = -float64(c+1) / float64(g.tg.Count)
			total += s.antiAffinity
			n++
		}
	}
	if penalized {
		total--
		n++
	}
	s.norm = total / n
}

// scorePreferences adds the node-affinity and allocation-spread scores of
// g's preferences to s, each joining the average when not 0 (Nomad's
// ScoreNormalizationIterator averages the scores its rankers append).
func (p *Placer) scorePreferences(g *groupPlan, ns *nodeState, s *score) {
	total, n := s.binpack, 1.0
	if s.antiAffinity != 0 {
		total += s.antiAffinity
		n++
	}
	if s.penalized {
		total--
		n++
	}
	if len(g.affinities) > 0 {
		if s.affinity = p.affinityScore(g, ns); s.affinity != 0 {
			total += s.affinity
			n++
		}
	}
	if len(g.spreads) > 0 {
		if s.spread = p.spreadScore(g, ns); s.spread != 0 {
			total += s.spread
			n++
		}
	}
	s.norm = total / n
}

// ln10 turns 10^x into e^(x ln 10), cheaper than math.Pow.
var ln10 = math.Log(10)

// binPackScore is Nomad's ScoreFitBinPack normalized to [0, 1]: 20 minus
// 10^(free CPU share) + 10^(free memory share), over 18.
func binPackScore(capacity, used structs.ComparableResources) float64 {
	freeShare := func(used, total int64) float64 {
		if total <= 0 {
			return 0
		}
		return 1 - float64(used)/float64(total)
	}
	total := math.Exp(freeShare(used.CPU, capacity.CPU)*ln10) + math.Exp(freeShare(used.MemoryMB, capacity.MemoryMB)*ln10)
	score := 20 - total
	switch {
	case score > 18:
		score = 18
	case score < 0:
		score = 0
	}
	return score / 18
}

// topScores keeps the best maxScoreMetaData scores of one placement,
// highest first, earlier ones first among equals.
type topScores struct {
	best [maxScoreMetaData]score
	n    int
}

func (t *topScores) add(s *score) {
	i := t.n
	for i > 0 && t.best[i-1].norm < s.norm {
		i--
	}
	if i == maxScoreMetaData {
		return
	}
	t.n = min(t.n+1, maxScoreMetaData)
	copy(t.best[i+1:t.n], t.best[i:t.n-1])
	t.best[i] = *s
}

// meta returns the kept scores as the metrics' NodeScoreMeta, with
// Nomad's scorer names.
func (t *topScores) meta() []*structs.NodeScoreMeta {
	if t.n == 0 {
		return nil
	}
	metas := make([]structs.NodeScoreMeta, t.n)
	out := make([]*structs.NodeScoreMeta, t.n)
	for i, s := range t.best[:t.n] {
		scores := make(map[string]float64, 3)
		scores["binpack"] = s.binpack
		if s.antiAffinity != 0 {
			scores["job-anti-affinity"] = s.antiAffinity
		}
		if s.penalized {
			scores["node-reschedule-penalty"] = -1
		}
		if s.affinity != 0 {
			scores["node-affinity"] = s.affinity
		}
		if s.spread != 0 {
			scores["allocation-spread"] = s.spread
		}
		metas[i] = structs.NodeScoreMeta{NodeID: s.node.node.ID, Scores: scores, NormScore: s.norm}
		out[i] = &metas[i]
	}
	return out
}
