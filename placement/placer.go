package placement

import (
	"math"
	"sort"

	"github.com/drover-sched/drover/structs"
)

// NodeCandidate is a node with what its allocations already hold (CPU MHz,
// memory and disk MiB).
type NodeCandidate struct {
	Node *structs.Node
	Used structs.ComparableResources
}

// maxScoreMetaData is how many of the best node scores a placement keeps in
// its metrics (Nomad keeps the top 5).
const maxScoreMetaData = 5

// Placer chooses nodes for one job's placements. It remembers what it has
// placed and released so far, so that one plan never over-commits a node
// on its own (the commit re-checks against concurrent plans).
type Placer struct {
	job   *structs.Job
	nodes []*nodeState // sorted by node ID
	byID  map[string]*nodeState
	cc    *constraintChecker
	// spread scores the emptiest fitting node best (Nomad's spread
	// scheduler algorithm) instead of the fullest (binpack).
	spread bool
}

type nodeState struct {
	node *structs.Node
	used structs.ComparableResources
	// groupAllocs counts the job's live allocs per task group on the node
	// (existing and placed by this plan), for anti-affinity and
	// distinct_hosts.
	groupAllocs map[string]int
	jobAllocs   int
}

// NewPlacer prepares placement of job's groups over nodes. live are the
// job's allocations that keep running (not stopped by this plan); they
// count for anti-affinity and distinct_hosts / distinct_property.
func NewPlacer(job *structs.Job, nodes []NodeCandidate, live []*structs.Allocation) *Placer {
	p := &Placer{job: job, byID: make(map[string]*nodeState, len(nodes)), cc: newConstraintChecker()}
	for _, c := range nodes {
		ns := &nodeState{node: c.Node, used: c.Used, groupAllocs: map[string]int{}}
		p.nodes = append(p.nodes, ns)
		p.byID[c.Node.ID] = ns
	}
	sort.Slice(p.nodes, func(i, j int) bool { return p.nodes[i].node.ID < p.nodes[j].node.ID })
	for _, a := range live {
		if ns, ok := p.byID[a.NodeID]; ok && !a.TerminalStatus() {
			ns.groupAllocs[a.TaskGroup]++
			ns.jobAllocs++
		}
	}
	return p
}

// Release returns what a stopped alloc held on its node to the pool, so a
// replacement in the same plan can use the room (Nomad's plan applier
// removes a plan's stops before it fits its placements).
func (p *Placer) Release(a *structs.Allocation) {
	ns, ok := p.byID[a.NodeID]
	if !ok || a.TerminalStatus() {
		return
	}
	ns.used = ns.used.Sub(a.AllocatedResources.Comparable())
	if ns.groupAllocs[a.TaskGroup] > 0 {
		ns.groupAllocs[a.TaskGroup]--
		ns.jobAllocs--
	}
}

// Place chooses the best feasible node for one alloc of tg and reserves
// the resources there. preferNode, when set and feasible, wins (sticky
// ephemeral disk keeps a replacement on its node). Nodes in penalize score
// lower (a rescheduled alloc avoids the nodes it failed on, as Nomad's
// node-reschedule-penalty). It returns nil and the metrics explaining why
// when no node fits.
func (p *Placer) Place(tg *structs.TaskGroup, preferNode string, penalize map[string]bool) (*structs.Node, *structs.AllocMetric) {
	m := &structs.AllocMetric{NodePool: p.job.NodePool, NodesAvailable: map[string]int{}}
	ask := tg.CombinedResources()
	distinct, jobLevel := distinctHostsScope(p.job, tg)
	props := distinctPropertyLimits(p.job, tg)
	constraints := groupConstraints(p.job, tg)

	var best *nodeState
	var bestScore float64
	var scores []*structs.NodeScoreMeta
	for _, ns := range p.nodes {
		n := ns.node
		if !inNodePool(n, p.job.NodePool) {
			continue
		}
		m.NodesInPool++
		if !inDatacenters(n.Datacenter, p.job.Datacenters) {
			continue
		}
		if !n.Ready() {
			continue
		}
		m.NodesAvailable[n.Datacenter]++
		m.NodesEvaluated++
		if reason := p.infeasible(tg, n, constraints, distinct, jobLevel, props, ns); reason != "" {
			m.NodesFiltered++
			if m.ConstraintFiltered == nil {
				m.ConstraintFiltered = map[string]int{}
			}
			m.ConstraintFiltered[reason]++
			continue
		}
		free := n.Capacity().Sub(ns.used)
		if ok, dim := free.Superset(ask); !ok {
			m.NodesExhausted++
			if m.DimensionExhausted == nil {
				m.DimensionExhausted = map[string]int{}
			}
			m.DimensionExhausted[dim]++
			continue
		}
		score := p.score(tg, ns, ask, penalize[n.ID])
		scores = append(scores, score)
		if n.ID == preferNode {
			best, bestScore = ns, math.Inf(1)
			continue
		}
		if best == nil || score.NormScore > bestScore {
			best, bestScore = ns, score.NormScore
		}
	}
	sort.SliceStable(scores, func(i, j int) bool { return scores[i].NormScore > scores[j].NormScore })
	if len(scores) > maxScoreMetaData {
		scores = scores[:maxScoreMetaData]
	}
	m.ScoreMetaData = scores
	if best == nil {
		return nil, m
	}
	best.used = best.used.Add(ask)
	best.groupAllocs[tg.Name]++
	best.jobAllocs++
	return best.node, m
}

// infeasible returns why node n cannot take an alloc of tg, in the words
// Nomad puts in ConstraintFiltered, or "".
func (p *Placer) infeasible(tg *structs.TaskGroup, n *structs.Node, constraints []*structs.Constraint,
	distinct, jobLevel bool, props []propertyLimit, ns *nodeState) string {
	if d := missingDriver(tg, n); d != "" {
		return "missing drivers"
	}
	for _, c := range constraints {
		if !p.cc.meets(c, n) {
			return c.String()
		}
	}
	if distinct {
		if (jobLevel && ns.jobAllocs > 0) || (!jobLevel && ns.groupAllocs[tg.Name] > 0) {
			return structs.ConstraintDistinctHosts
		}
	}
	for _, pl := range props {
		if p.propertyCount(pl, tg, n) >= pl.limit {
			return pl.label
		}
	}
	return ""
}

// propertyCount counts the job's (or group's) live allocs on nodes whose
// property pl.target has n's value.
func (p *Placer) propertyCount(pl propertyLimit, tg *structs.TaskGroup, n *structs.Node) int {
	want, ok := resolveTarget(pl.target, n)
	if !ok {
		return math.MaxInt32
	}
	count := 0
	for _, other := range p.nodes {
		if v, ok := resolveTarget(pl.target, other.node); !ok || v != want {
			continue
		}
		if pl.jobLevel {
			count += other.jobAllocs
		} else {
			count += other.groupAllocs[tg.Name]
		}
	}
	return count
}

// score ranks a feasible node: Nomad's bin-packing fit (fuller is better)
// averaged with its job anti-affinity penalty (spread a group's allocs) and
// the reschedule penalty.
func (p *Placer) score(tg *structs.TaskGroup, ns *nodeState, ask structs.ComparableResources, penalized bool) *structs.NodeScoreMeta {
	capacity := ns.node.Capacity()
	after := ns.used.Add(ask)
	binpack := binPackScore(capacity, after)
	if p.spread {
		binpack = 1 - binpack // Nomad's ScoreFitSpread mirrors the bin-packing fit
	}
	scores := map[string]float64{"binpack": binpack}
	total, n := binpack, 1.0
	if c := ns.groupAllocs[tg.Name]; c > 0 && tg.Count > 0 {
		penalty := -float64(c+1) / float64(tg.Count)
		scores["job-anti-affinity"] = penalty
		total += penalty
		n++
	}
	if penalized {
		scores["node-reschedule-penalty"] = -1
		total--
		n++
	}
	return &structs.NodeScoreMeta{NodeID: ns.node.ID, Scores: scores, NormScore: total / n}
}

// binPackScore is Nomad's ScoreFitBinPack normalized to [0, 1]: 20 minus
// 10^(free CPU share) + 10^(free memory share), over 18.
func binPackScore(capacity, used structs.ComparableResources) float64 {
	freeShare := func(used, total int64) float64 {
		if total <= 0 {
			return 0
		}
		return 1 - float64(used)/float64(total)
	}
	total := math.Pow(10, freeShare(used.CPU, capacity.CPU)) + math.Pow(10, freeShare(used.MemoryMB, capacity.MemoryMB))
	score := 20 - total
	switch {
	case score > 18:
		score = 18
	case score < 0:
		score = 0
	}
	return score / 18
}
