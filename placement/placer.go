package placement

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/drover-sched/drover/structs"
)

// NodeCandidate is a node with what its allocations already hold (CPU MHz,
// memory and disk MiB, and host ports, sorted).
type NodeCandidate struct {
	Node  *structs.Node
	Used  structs.ComparableResources
	Ports []int
}

// Option is a placement made: the node, and for a group with a network
// block the network and ports the alloc holds there (its
// AllocatedResources.Shared.Networks and Ports).
type Option struct {
	Node     *structs.Node
	Networks []*structs.NetworkResource
	Ports    []structs.AllocatedPortMapping
}

// Options tune a Placer.
type Options struct {
	// EvalID seeds the order in which nodes are visited, as Nomad seeds
	// its node shuffle from the eval: the same eval over the same nodes
	// visits them in the same order, so a replay chooses the same nodes.
	EvalID string
	// Exhaustive scores every feasible node for every placement, in node
	// ID order, instead of a sample (the scoring drover did before it
	// sampled). It costs placements × nodes; it exists to measure the
	// sample's quality against.
	Exhaustive bool
	// Spread scores the emptiest fitting node best (Nomad's spread
	// scheduler algorithm) instead of the fullest (binpack, the default).
	Spread bool
}

// Placer chooses nodes for one job's placements. It remembers what it has
// placed and released so far, so that one plan never over-commits a node
// on its own (the commit re-checks against concurrent plans). Like
// Nomad's generic scheduler it scores a bounded sample of the candidates
// (ready nodes of the job's pool and datacenters) per placement, not every
// node: see select.go.
type Placer struct {
	job     *structs.Job
	opts    Options
	nodes   []*nodeState // every node, sorted by ID
	byID    map[string]*nodeState
	cc      *constraintChecker
	classes *nodeClasses

	// order holds the candidates in visit order; offset is where the
	// next placement's walk starts.
	order  []*nodeState
	offset int
	// limit is how many feasible nodes with room a placement's walk
	// scores. recent are the nodes the last placements chose (at most
	// limit), scored again with every sample; nextRecent is the one a new
	// recent node replaces.
	limit      int
	recent     []*nodeState
	nextRecent int
	samples    int // placements sampled so far

	// nodesInPool and available (ready nodes per datacenter) are the same
	// for every placement; available is shared, read-only, by every
	// placement's metrics.
	nodesInPool int
	available   map[string]int

	// groupIndex numbers the job's task groups; groups holds what each
	// placed group needs, prepared once.
	groupIndex map[string]int
	groups     map[*structs.TaskGroup]*groupPlan
	// properties count live allocs per value of each distinct_property
	// target.
	properties []*propertyCount
	// spreadCounts count live allocs per value of each group's spread
	// attributes (by group index, then the group's spreads in order);
	// lowestSpreadBoost is the lowest targeted spread boost seen, the
	// score of a 0% target (preferences.go).
	spreadCounts      [][]*spreadCount
	lowestSpreadBoost float64
	// rng draws dynamic ports (network.go); nil until first used.
	rng *rand.Rand
}

type nodeState struct {
	node      *structs.Node
	capacity  structs.ComparableResources
	used      structs.ComparableResources
	candidate bool // in the job's pool and datacenters, and ready
	class     int  // its class ID (class.go); -1 until first looked at
	recent    bool // in Placer.recent
	sampled   int  // the last sample that looked at it as a recent node
	// groupAllocs counts the job's live allocs per task group (by group
	// index) on the node, existing and placed by this plan, for
	// anti-affinity and distinct_hosts; jobAllocs counts all of them.
	groupAllocs []int32
	jobAllocs   int
	// heldPorts are the host ports the node's allocs held when the plan
	// began; ports is the node's port book (network.go), nil until a
	// group with a network looks at the node.
	heldPorts []int
	ports     *nodePorts
}

// Eligible reports whether node n may take placements of job: ready
// (status ready, eligible, not draining), in the job's node pool and one
// of its datacenters. The system scheduler asks it of every node.
func Eligible(job *structs.Job, n *structs.Node) bool {
	return n.Ready() && inNodePool(n, job.NodePool) && inDatacenters(n.Datacenter, job.Datacenters)
}

// NewPlacer prepares placement of job's groups over nodes. live are the
// job's non-terminal allocations, those the plan stops included (Release
// them); they count for anti-affinity and distinct_hosts /
// distinct_property.
func NewPlacer(job *structs.Job, nodes []NodeCandidate, live []*structs.Allocation, opts Options) *Placer {
	p := &Placer{
		job: job, opts: opts, byID: make(map[string]*nodeState, len(nodes)), cc: newConstraintChecker(), classes: newNodeClasses(),
		available: map[string]int{}, groupIndex: make(map[string]int, len(job.TaskGroups)),
		groups: map[*structs.TaskGroup]*groupPlan{}, lowestSpreadBoost: -1,
	}
	for i, tg := range job.TaskGroups {
		p.groupIndex[tg.Name] = i
	}
	states := make([]nodeState, len(nodes))
	counts := make([]int32, len(nodes)*len(job.TaskGroups))
	p.nodes = make([]*nodeState, len(nodes))
	for i, c := range nodes {
		ns := &states[i]
		*ns = nodeState{node: c.Node, capacity: c.Node.Capacity(), used: c.Used, class: -1, heldPorts: c.Ports,
			groupAllocs: counts[i*len(job.TaskGroups) : (i+1)*len(job.TaskGroups)]}
		p.nodes[i] = ns
		p.byID[c.Node.ID] = ns
	}
	slices.SortFunc(p.nodes, func(a, b *nodeState) int { return strings.Compare(a.node.ID, b.node.ID) })
	for _, ns := range p.nodes {
		n := ns.node
		if !inNodePool(n, job.NodePool) {
			continue
		}
		p.nodesInPool++
		if !inDatacenters(n.Datacenter, job.Datacenters) || !n.Ready() {
			continue
		}
		p.available[n.Datacenter]++
		ns.candidate = true
		p.order = append(p.order, ns)
	}
	p.properties = newPropertyCounts(job, p.groupIndex)
	p.spreadCounts = newSpreadCounts(job)
	for _, a := range live {
		if ns, ok := p.byID[a.NodeID]; ok && !a.TerminalStatus() {
			p.count(ns, a.TaskGroup, 1)
		}
	}
	if !opts.Exhaustive {
		shuffle(p.order, opts.EvalID)
		p.limit = sampleLimit(len(p.order), job.Type == structs.JobTypeBatch)
	}
	return p
}

// count adds delta allocs of group to node ns's tallies and to the
// distinct_property counts.
func (p *Placer) count(ns *nodeState, group string, delta int) {
	gi, known := p.groupIndex[group]
	if known {
		ns.groupAllocs[gi] += int32(delta)
	}
	ns.jobAllocs += delta
	for _, pc := range p.properties {
		pc.add(ns.node, gi, known, delta)
	}
	if known && p.spreadCounts != nil {
		for _, sc := range p.spreadCounts[gi] {
			sc.add(ns.node, delta)
		}
	}
}

// Release returns what a stopped alloc (one of NewPlacer's live allocs)
// held on its node to the pool, so a replacement in the same plan can use
// the room (Nomad's plan applier removes a plan's stops before it fits its
// placements); it no longer counts for anti-affinity, distinct_hosts or
// distinct_property.
func (p *Placer) Release(a *structs.Allocation) {
	ns, ok := p.byID[a.NodeID]
	if !ok || a.TerminalStatus() {
		return
	}
	ns.used = ns.used.Sub(a.AllocatedResources.Comparable())
	p.releasePorts(ns, a)
	p.count(ns, a.TaskGroup, -1)
}

// Reserve takes back the room Release returned for a (a stop that was
// dropped from the plan after all), and counts it again.
func (p *Placer) Reserve(a *structs.Allocation) {
	ns, ok := p.byID[a.NodeID]
	if !ok || a.TerminalStatus() {
		return
	}
	ns.used = ns.used.Add(a.AllocatedResources.Comparable())
	p.reservePorts(ns, a)
	p.count(ns, a.TaskGroup, 1)
}

// Place chooses the best feasible node for one alloc of tg and reserves
// the resources there. preferNode, when set and feasible with room, wins
// (sticky ephemeral disk keeps a replacement on its node; Nomad tries its
// preferred nodes before the others). Nodes in penalize score lower (a
// rescheduled alloc avoids the nodes it failed on, as Nomad's
// node-reschedule-penalty). It returns nil and the metrics explaining why
// when no node fits.
func (p *Placer) Place(tg *structs.TaskGroup, preferNode string, penalize map[string]bool) (*structs.Node, *structs.AllocMetric) {
	opt, m := p.PlaceAlloc(tg, preferNode, penalize)
	if opt == nil {
		return nil, m
	}
	return opt.Node, m
}

// PlaceAlloc is Place returning the whole option: the node and, for a
// group with a network block, the ports taken there.
func (p *Placer) PlaceAlloc(tg *structs.TaskGroup, preferNode string, penalize map[string]bool) (*Option, *structs.AllocMetric) {
	g := p.group(tg)
	m := p.newMetric()
	var top topScores
	var pick *nodeState
	if ns := p.byID[preferNode]; preferNode != "" && ns != nil && ns.candidate {
		var s score
		if p.consider(g, ns, penalize, m, &s) {
			top.add(&s)
			pick = ns
		} else {
			m = p.newMetric()
		}
	}
	switch {
	case pick != nil:
	case p.opts.Exhaustive:
		pick = p.exhaustive(g, penalize, m, &top)
	default:
		pick = p.sample(g, penalize, m, &top)
	}
	m.ScoreMetaData = top.meta()
	if pick == nil {
		return nil, m
	}
	return p.take(g, pick), m
}

// Resources is what an alloc of tg placed by this option holds: the
// group's resources, with the option's network and ports.
func (o *Option) Resources(tg *structs.TaskGroup) *structs.AllocatedResources {
	ar := structs.AllocatedResourcesFor(tg)
	ar.Shared.Networks, ar.Shared.Ports = o.Networks, o.Ports
	return ar
}

// PlaceOn tries one alloc of tg on the node nodeID alone, as Nomad's
// system scheduler places on each node: feasibility, room and ports there,
// nothing else. It returns nil and the metrics (NodesFiltered: the node is
// infeasible; NodesExhausted: it lacks room or ports) when the alloc does
// not go there; a node that is not a candidate (not ready, or outside the
// job's pool and datacenters) counts as filtered.
func (p *Placer) PlaceOn(tg *structs.TaskGroup, nodeID string) (*Option, *structs.AllocMetric) {
	g := p.group(tg)
	m := p.newMetric()
	ns := p.byID[nodeID]
	if ns == nil || !ns.candidate {
		m.NodesEvaluated++
		m.NodesFiltered++
		return nil, m
	}
	var top topScores
	var s score
	if !p.consider(g, ns, nil, m, &s) {
		return nil, m
	}
	top.add(&s)
	m.ScoreMetaData = top.meta()
	return p.take(g, ns), m
}

// take reserves an alloc of g on ns: its resources, its ports, its counts.
func (p *Placer) take(g *groupPlan, ns *nodeState) *Option {
	ns.used = ns.used.Add(g.ask)
	p.count(ns, g.tg.Name, 1)
	opt := &Option{Node: ns.node}
	if g.ports != nil {
		opt.Networks, opt.Ports = p.portsOf(ns).assign(g.ports, ns.node, p.portRNG())
	}
	return opt
}

func (p *Placer) newMetric() *structs.AllocMetric {
	return &structs.AllocMetric{NodePool: p.job.NodePool, NodesInPool: p.nodesInPool, NodesAvailable: p.available}
}

// consider checks one candidate for an alloc of g: feasibility, then room,
// then its score, written to s. It counts the node in m.
func (p *Placer) consider(g *groupPlan, ns *nodeState, penalize map[string]bool, m *structs.AllocMetric, s *score) bool {
	m.NodesEvaluated++
	if reason := p.infeasible(g, ns); reason != "" {
		m.NodesFiltered++
		if m.ConstraintFiltered == nil {
			m.ConstraintFiltered = map[string]int{}
		}
		m.ConstraintFiltered[reason]++
		return false
	}
	free := ns.capacity.Sub(ns.used)
	if ok, dim := free.Superset(g.ask); !ok {
		m.NodesExhausted++
		if m.DimensionExhausted == nil {
			m.DimensionExhausted = map[string]int{}
		}
		m.DimensionExhausted[dim]++
		return false
	}
	if g.ports != nil {
		if ok, dim := p.portsOf(ns).fits(g.ports); !ok {
			m.NodesExhausted++
			if m.DimensionExhausted == nil {
				m.DimensionExhausted = map[string]int{}
			}
			m.DimensionExhausted[dim]++
			return false
		}
	}
	g.score(s, ns, penalize[ns.node.ID])
	if g.prefers {
		p.scorePreferences(g, ns, s)
	}
	return true
}

// groupPlan is what placing an alloc of one task group needs, prepared
// once per Placer.
type groupPlan struct {
	tg          *structs.TaskGroup
	index       int // in the job's groups; -1 if not one of them
	ask         structs.ComparableResources
	constraints []*structs.Constraint // the job's, the group's, its tasks'
	labels      []string              // constraints[i].String(), Nomad's filter reason
	escapes     []bool                // constraints[i] reads a unique node value
	anyEscapes  bool
	byClass     []int32 // the group's verdict per node class (classCheck)
	distinct    bool    // distinct_hosts applies
	jobLevel    bool    // ... across all the job's groups
	limits      []propertyLimit
	spread      bool                     // score by Nomad's spread fit, not binpack
	ports       *groupPorts              // the group's network ask; nil without one
	volumes     []*structs.VolumeRequest // the group's host volumes, by name
	// limit is how many feasible nodes with room a placement of the
	// group scores: the placer's, or wider for a group with affinities
	// or spreads (preferences.go).
	limit int
	// prefers: the group has affinities or spreads.
	prefers bool
	// affinities apply to the group (job, group, tasks), with their
	// comparisons as constraints and the sum of their absolute weights;
	// affinityEscapes: one reads a value unique to a node, so the score
	// is not cached per class in affinityByClass (NaN: not computed).
	affinities          []*structs.Affinity
	affinityConstraints []*structs.Constraint
	affinityWeights     float64
	affinityEscapes     bool
	affinityByClass     []float64
	spreads             []*spreadPlan
}

func (p *Placer) group(tg *structs.TaskGroup) *groupPlan {
	if g, ok := p.groups[tg]; ok {
		return g
	}
	g := &groupPlan{tg: tg, index: -1, ask: tg.CombinedResources(), constraints: groupConstraints(p.job, tg), spread: p.opts.Spread,
		ports: newGroupPorts(tg)}
	if i, ok := p.groupIndex[tg.Name]; ok {
		g.index = i
	}
	for _, c := range g.constraints {
		escapes := escapesClass(c.LTarget) || escapesClass(c.RTarget)
		g.labels = append(g.labels, c.String())
		g.escapes = append(g.escapes, escapes)
		g.anyEscapes = g.anyEscapes || escapes
	}
	g.distinct, g.jobLevel = distinctHostsScope(p.job, tg)
	g.limits = distinctPropertyLimits(p.job, tg, p.properties)
	g.volumes = hostVolumeRequests(tg)
	g.limit = p.limit
	p.preparePreferences(g)
	p.groups[tg] = g
	return g
}

// infeasible returns why node ns cannot take an alloc of g, in the words
// Nomad puts in ConstraintFiltered, or "": the first check that fails, in
// order (drivers, the constraints, distinct_hosts, distinct_property).
// What depends on the node's class alone comes from the class's verdict.
func (p *Placer) infeasible(g *groupPlan, ns *nodeState) string {
	failsAt := len(g.constraints) // -1: drivers
	switch v := p.classCheck(g, ns); {
	case v == classNoDriver:
		failsAt = -1
	case v >= classFailsAt:
		failsAt = int(v - classFailsAt)
	}
	if g.anyEscapes {
		for i := 0; i < failsAt; i++ {
			if g.escapes[i] && !p.cc.meets(g.constraints[i], ns.node) {
				return g.labels[i]
			}
		}
	}
	switch {
	case failsAt == -1:
		return "missing drivers"
	case failsAt < len(g.constraints):
		return g.labels[failsAt]
	}
	if g.distinct {
		if (g.jobLevel && ns.jobAllocs > 0) || (!g.jobLevel && g.index >= 0 && ns.groupAllocs[g.index] > 0) {
			return structs.ConstraintDistinctHosts
		}
	}
	for _, pl := range g.limits {
		if pl.count.of(ns.node) >= pl.limit {
			return pl.label
		}
	}
	if g.ports != nil && ns.node.HostNetwork() == nil {
		return reasonMissingNetwork
	}
	if len(g.volumes) > 0 && !hasHostVolumes(ns.node, g.volumes) {
		return reasonMissingHostVolumes
	}
	return ""
}
