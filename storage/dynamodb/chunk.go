package dynamodb

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/drover-sched/drover/structs"
)

// A write is built from units: each unit is atomic (it never spans two
// transactions) and holds whole-item puts plus additive changes to shared
// counter items (a node's usage, a job head's counts, a deployment's
// counters). Units are packed in order into chunks of at most
// ChunkActions actions and chunkBytes; the counter changes of the units in
// one chunk are merged, so every item appears at most once per
// transaction, as DynamoDB requires.

// nodeDelta is a change to a node's usage counters (CPU MHz, memory and
// disk MiB, alloc count) and its host port map. place requires the node to
// be ready and the positive part of the change to fit its free capacity.
// take are host ports placements take (each must be free), give ports
// released allocs give back; a port in both is handed from one alloc to
// the other in the same transaction and left as it is. setIdx > 0 moves
// the node's assignment index.
type nodeDelta struct {
	cpu, mem, disk, allocs int64
	place                  bool
	take, give             []int
	setIdx                 uint64
}

// maxPortChanges bounds the host port entries one node's update changes in
// a transaction, so that its update and condition expressions stay well
// within DynamoDB's 4 KB per expression (about 30 bytes per port).
const maxPortChanges = 64

// netPorts returns the ports d takes that it does not also give, and those
// it gives that it does not also take.
func (d *nodeDelta) netPorts() (take, give []int) {
	given := map[int]int{}
	for _, p := range d.give {
		given[p]++
	}
	for _, p := range d.take {
		if given[p] > 0 {
			given[p]--
			continue
		}
		take = append(take, p)
	}
	for _, p := range d.give {
		if given[p] > 0 {
			given[p]--
			give = append(give, p)
		}
	}
	sort.Ints(take)
	sort.Ints(give)
	return take, give
}

// headDelta is a change to a job head: counts of live allocs and open
// evals, the seen flag, and (plans) planIdx with its guards.
type headDelta struct {
	live, open int64
	seen       bool
	planIdx    uint64 // > 0: SET pIdx
	// Guards (plans only).
	guardJMI     bool
	jmi          uint64 // 0: the job must not exist
	guardPlanIdx uint64 // > 0: pIdx must equal it
}

// deployDelta is a change to a deployment: its blob (set) and its
// counters (added), per task group.
type deployDelta struct {
	blob      []byte // nil: counters only
	active    bool   // with blob: the deployment is not terminal (listed in gsi2)
	mi, ci    uint64
	prevMI    uint64 // guard when blob is set and the deployment existed
	isNew     bool
	placed    map[string]int64
	healthy   map[string]int64
	unhealthy map[string]int64
}

type unit struct {
	acts    []action
	nodes   map[string]*nodeDelta    // node ID →
	heads   map[[2]string]*headDelta // ns, job →
	deploys map[[3]string]*deployDelta
	// copies are the nodes' job copies the unit's assignments refer to
	// (keyString →), put once per chunk whatever the units that need them.
	copies map[string]action
}

func newUnit() *unit {
	return &unit{nodes: map[string]*nodeDelta{}, heads: map[[2]string]*headDelta{}, deploys: map[[3]string]*deployDelta{},
		copies: map[string]action{}}
}

// addCopy adds the put of a node's job copy (once per unit).
func (u *unit) addCopy(s *Store, it item) {
	k := keyString(it)
	if _, ok := u.copies[k]; !ok {
		u.copies[k] = s.put(it, "", nil, "job copy "+getS(it, "SK"))
	}
}

func (u *unit) node(id string) *nodeDelta {
	d, ok := u.nodes[id]
	if !ok {
		d = &nodeDelta{}
		u.nodes[id] = d
	}
	return d
}

func (u *unit) head(ns, job string) *headDelta {
	k := [2]string{ns, job}
	d, ok := u.heads[k]
	if !ok {
		d = &headDelta{}
		u.heads[k] = d
	}
	return d
}

func (u *unit) deploy(ns, job, id string) *deployDelta {
	k := [3]string{ns, job, id}
	d, ok := u.deploys[k]
	if !ok {
		d = &deployDelta{placed: map[string]int64{}, healthy: map[string]int64{}, unhealthy: map[string]int64{}}
		u.deploys[k] = d
	}
	return d
}

func (u *unit) size() int {
	n := 0
	for _, a := range u.acts {
		n += a.size
	}
	for _, a := range u.copies {
		n += a.size
	}
	return n + 200*(len(u.nodes)+len(u.heads)+len(u.deploys))
}

// portChanges is the most host port entries the unit changes on one node.
func (u *unit) portChanges() int {
	n := 0
	for _, d := range u.nodes {
		n = max(n, len(d.take)+len(d.give))
	}
	return n
}

// count is the number of actions the unit needs on its own.
func (u *unit) count() int {
	n := len(u.acts) + len(u.heads) + len(u.deploys) + len(u.copies)
	for _, d := range u.nodes {
		n++
		if d.setIdx > 0 {
			n++
		}
	}
	return n
}

// merge adds o into u.
func (u *unit) merge(o *unit) {
	u.acts = append(u.acts, o.acts...)
	for k, a := range o.copies {
		u.copies[k] = a
	}
	for k, d := range o.nodes {
		m := u.node(k)
		m.cpu += d.cpu
		m.mem += d.mem
		m.disk += d.disk
		m.allocs += d.allocs
		m.place = m.place || d.place
		m.take = append(m.take, d.take...)
		m.give = append(m.give, d.give...)
		m.setIdx = max(m.setIdx, d.setIdx)
	}
	for k, d := range o.heads {
		m := u.head(k[0], k[1])
		m.live += d.live
		m.open += d.open
		m.seen = m.seen || d.seen
		m.planIdx = max(m.planIdx, d.planIdx)
		if d.guardJMI {
			m.guardJMI, m.jmi = true, d.jmi
		}
		m.guardPlanIdx = max(m.guardPlanIdx, d.guardPlanIdx)
	}
	for k, d := range o.deploys {
		m := u.deploy(k[0], k[1], k[2])
		if d.blob != nil {
			m.blob, m.active, m.mi, m.ci, m.prevMI, m.isNew = d.blob, d.active, d.mi, d.ci, d.prevMI, d.isNew
		}
		for g, n := range d.placed {
			m.placed[g] += n
		}
		for g, n := range d.healthy {
			m.healthy[g] += n
		}
		for g, n := range d.unhealthy {
			m.unhealthy[g] += n
		}
	}
}

// updateSize is what an UpdateItem action counts toward a chunk's bytes:
// the counter items updates touch (node, node index, job head) are under
// 1 KB (TestItemSizes); a deployment's update adds its blob.
const updateSize = 1024

// unitBytes bounds the items of one unit (bytes as DynamoDB counts them),
// leaving room in its chunk for the counter items and the job head.
const unitBytes = chunkBytes - 100_000

// allocWrite is what the change of one alloc writes: its master and its
// assignment, the put of the node's copy of the job version the assignment
// refers to (copyKey "": none), and how many host ports it takes or gives.
type allocWrite struct {
	master, assign action
	copyAct        action
	copyKey        string
	ports          int
}

// newAllocWrite builds the writes of a (master guarded by cond and vals)
// with the node's copy of job (nil: the version is gone) at idx.
func (s *Store) newAllocWrite(a *structs.Allocation, job *structs.Job, idx uint64, cond string, vals item, desc string) allocWrite {
	master, assign := allocItems(a)
	w := allocWrite{master: s.put(master, cond, vals, desc), assign: s.put(assign, "", nil, "assignment "+a.ID)}
	if job != nil {
		c := jobCopyItem(a.NodeID, job, a.TaskGroup, idx)
		w.copyAct, w.copyKey = s.put(c, "", nil, "job copy "+getS(c, "SK")), keyString(c)
	}
	return w
}

// add puts w's actions into u.
func (u *unit) add(w allocWrite) {
	u.acts = append(u.acts, w.master, w.assign)
	if w.copyKey != "" {
		u.copies[w.copyKey] = w.copyAct
	}
}

// splitRuns groups allocs' writes, in order, into runs [start, end) whose
// actions (two per alloc, one per distinct job copy) number at most
// maxActions, whose items add up to at most maxBytes and whose allocs
// change at most maxPortChanges host ports: a large job fills a
// transaction's 4 MB long before its 100 actions. A write larger than
// maxBytes has a run of its own.
func splitRuns(ws []allocWrite, maxActions, maxBytes int) [][2]int {
	var runs [][2]int
	start, acts, bytes, nports := 0, 0, 0, 0
	copies := map[string]bool{}
	cost := func(w allocWrite) (int, int) {
		a, n := 2, w.master.size+w.assign.size
		if w.copyKey != "" && !copies[w.copyKey] {
			a, n = a+1, n+w.copyAct.size
		}
		return a, n
	}
	for i, w := range ws {
		a, n := cost(w)
		if i > start && (acts+a > maxActions || bytes+n > maxBytes || nports+w.ports > maxPortChanges) {
			runs = append(runs, [2]int{start, i})
			start, acts, bytes, nports = i, 0, 0, 0
			clear(copies)
			a, n = cost(w)
		}
		if w.copyKey != "" {
			copies[w.copyKey] = true
		}
		acts, bytes, nports = acts+a, bytes+n, nports+w.ports
	}
	if start < len(ws) {
		runs = append(runs, [2]int{start, len(ws)})
	}
	return runs
}

// pack merges units into chunks in order. fixed is the number of actions
// every chunk carries besides its units (the plan's head).
func pack(units []*unit, maxActions int) []*unit {
	var chunks []*unit
	cur := newUnit()
	for _, u := range units {
		trial := newUnit()
		trial.merge(cur)
		trial.merge(u)
		if len(cur.acts) > 0 || len(cur.nodes) > 0 || len(cur.deploys) > 0 || len(cur.heads) > 0 || len(cur.copies) > 0 {
			if trial.count() > maxActions || trial.size() > chunkBytes || trial.portChanges() > maxPortChanges {
				chunks = append(chunks, cur)
				cur = newUnit()
				cur.merge(u)
				continue
			}
		}
		cur = trial
	}
	if cur.count() > 0 {
		chunks = append(chunks, cur)
	}
	return chunks
}

// render turns a chunk into its actions.
func (s *Store) render(c *unit) []action {
	acts := append([]action(nil), c.acts...)
	copies := make([]string, 0, len(c.copies))
	for k := range c.copies {
		copies = append(copies, k)
	}
	sort.Strings(copies)
	for _, k := range copies {
		acts = append(acts, c.copies[k])
	}
	nodes := make([]string, 0, len(c.nodes))
	for n := range c.nodes {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		acts = append(acts, s.renderNode(n, c.nodes[n])...)
	}
	heads := make([][2]string, 0, len(c.heads))
	for k := range c.heads {
		heads = append(heads, k)
	}
	sort.Slice(heads, func(i, j int) bool { return heads[i][0]+"#"+heads[i][1] < heads[j][0]+"#"+heads[j][1] })
	for _, k := range heads {
		if a, ok := s.renderHead(k[0], k[1], c.heads[k]); ok {
			acts = append(acts, a)
		}
	}
	deps := make([][3]string, 0, len(c.deploys))
	for k := range c.deploys {
		deps = append(deps, k)
	}
	sort.Slice(deps, func(i, j int) bool { return deps[i][2] < deps[j][2] })
	for _, k := range deps {
		if a, ok := s.renderDeploy(k, c.deploys[k]); ok {
			acts = append(acts, a)
		}
	}
	return acts
}

func (s *Store) update(k item, expr, cond string, names map[string]string, vals item, desc string) action {
	u := &types.Update{TableName: &s.table, Key: k, UpdateExpression: aws.String(expr), ExpressionAttributeValues: vals}
	if cond != "" {
		u.ConditionExpression = aws.String(cond)
	}
	if len(names) > 0 {
		u.ExpressionAttributeNames = names
	}
	if len(vals) == 0 {
		u.ExpressionAttributeValues = nil
	}
	return action{item: types.TransactWriteItem{Update: u}, desc: desc, size: updateSize}
}

func (s *Store) put(it item, cond string, vals item, desc string) action {
	p := &types.Put{TableName: &s.table, Item: it}
	if cond != "" {
		p.ConditionExpression = aws.String(cond)
	}
	if len(vals) > 0 {
		p.ExpressionAttributeValues = vals
	}
	return action{item: types.TransactWriteItem{Put: p}, desc: desc, size: itemSize(it)}
}

func (s *Store) renderNode(id string, d *nodeDelta) []action {
	var out []action
	take, give := d.netPorts()
	if d.cpu != 0 || d.mem != 0 || d.disk != 0 || d.allocs != 0 || d.place || len(take) > 0 || len(give) > 0 {
		vals := item{":c": avN(d.cpu), ":m": avN(d.mem), ":d": avN(d.disk), ":n": avN(d.allocs),
			":nc": avN(-d.cpu), ":nm": avN(-d.mem), ":nd": avN(-d.disk)}
		cond := []string{"attribute_exists(PK)"}
		desc := fmt.Sprintf("node %s: node does not exist", id)
		if d.place {
			cond = append(cond, "rdy = :t")
			vals[":t"] = avBool(true)
			desc = fmt.Sprintf("node %s: node missing, not ready for placements, or over-committed (needs %d MHz, %d MiB memory, %d MiB disk more)", id, d.cpu, d.mem, d.disk)
			for _, dim := range []struct {
				attr, v string
				n       int64
			}{{"freeCpu", ":c", d.cpu}, {"freeMem", ":m", d.mem}, {"freeDisk", ":d", d.disk}} {
				if !brokenCapacityCheck && dim.n > 0 {
					cond = append(cond, dim.attr+" >= "+dim.v)
				}
			}
		}
		expr := "ADD useCpu :c, useMem :m, useDisk :d, nAllocs :n, freeCpu :nc, freeMem :nm, freeDisk :nd"
		// One attribute per held host port: a take sets it on the
		// condition that it is absent, a give removes it. Placeholders end
		// in "_" so that none is a prefix of another.
		names := map[string]string{}
		var set, remove []string
		for i, p := range take {
			n := fmt.Sprintf("#t%d_", i)
			names[n] = hostPortAttr(p)
			set = append(set, n+" = :one")
			cond = append(cond, "attribute_not_exists("+n+")")
			vals[":one"] = avN(1)
		}
		for i, p := range give {
			n := fmt.Sprintf("#g%d_", i)
			names[n] = hostPortAttr(p)
			remove = append(remove, n)
		}
		if len(take) > 0 {
			desc += fmt.Sprintf(", or one of the host ports %v is held by another alloc", take)
		}
		if len(set) > 0 {
			expr += " SET " + strings.Join(set, ", ")
		}
		if len(remove) > 0 {
			expr += " REMOVE " + strings.Join(remove, ", ")
		}
		out = append(out, s.update(key(nodePK(id), skMeta), expr, strings.Join(cond, " AND "), names, vals, desc))
	}
	if d.setIdx > 0 {
		// Unconditional: concurrent plans on one node may land out of index
		// order, and the agent acts on any change, never on the order.
		// chg counts the writes: two writers may issue the same index
		// (clock.go), and the chunks of one plan share it, so the agent
		// watches both (AgentAssignmentIndex).
		out = append(out, s.update(key(nodePK(id), skIdx), "SET idx = :i ADD chg :one", "", nil, item{":i": avU(d.setIdx), ":one": avN(1)},
			fmt.Sprintf("node %s: assignment index", id)))
	}
	return out
}

func (s *Store) renderHead(ns, job string, d *headDelta) (action, bool) {
	var set, add, cond []string
	vals := item{}
	if d.planIdx > 0 {
		set = append(set, "pIdx = :pi")
		vals[":pi"] = avU(d.planIdx)
	}
	if d.seen {
		set = append(set, "seen = :t")
		vals[":t"] = avBool(true)
	}
	if d.live != 0 {
		add = append(add, "nLive :l")
		vals[":l"] = avN(d.live)
	}
	if d.open != 0 {
		add = append(add, "nOpen :o")
		vals[":o"] = avN(d.open)
	}
	desc := fmt.Sprintf("job %s/%s", ns, job)
	if d.guardJMI {
		if d.jmi == 0 {
			cond = append(cond, "attribute_not_exists(jmi)")
			desc += " exists again (the plan was computed for no job)"
		} else {
			cond = append(cond, "jmi = :jmi")
			vals[":jmi"] = avU(d.jmi)
			desc += fmt.Sprintf(" changed: the plan was computed at job modify index %d", d.jmi)
		}
	}
	if d.guardPlanIdx > 0 {
		cond = append(cond, "pIdx = :gpi")
		vals[":gpi"] = avU(d.guardPlanIdx)
		desc += fmt.Sprintf(", or another plan landed since its snapshot (plan index %d)", d.guardPlanIdx)
	}
	if len(set) == 0 && len(add) == 0 {
		if len(cond) == 0 {
			return action{}, false
		}
		return action{item: types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: &s.table,
			Key: key(jobPK(ns, job), skMeta), ConditionExpression: aws.String(strings.Join(cond, " AND ")),
			ExpressionAttributeValues: vals}}, desc: desc, size: 100}, true
	}
	expr := ""
	if len(set) > 0 {
		expr = "SET " + strings.Join(set, ", ")
	}
	if len(add) > 0 {
		expr += " ADD " + strings.Join(add, ", ")
	}
	return s.update(key(jobPK(ns, job), skMeta), strings.TrimSpace(expr), strings.Join(cond, " AND "), nil, vals, desc), true
}

func (s *Store) renderDeploy(k [3]string, d *deployDelta) (action, bool) {
	var set, add, remove []string
	vals := item{}
	names := map[string]string{}
	cond := ""
	if d.blob != nil {
		set = append(set, "v = :v", "mi = :mi", "ci = if_not_exists(ci, :ci)", "g1pk = :g1pk", "g1sk = :g1sk")
		vals[":v"], vals[":mi"], vals[":ci"] = avB(d.blob), avU(d.mi), avU(d.ci)
		vals[":g1pk"], vals[":g1sk"] = avS("DEPLOY#"+idShard(k[2])), avS(k[2])
		// gsi2 lists the active ones (sparse), for the watcher.
		if d.active {
			set = append(set, "g2pk = :g2pk", "g2sk = :g2sk")
			vals[":g2pk"], vals[":g2sk"] = avS(activeDeploymentsPK), avS(k[2])
		} else {
			remove = append(remove, "g2pk", "g2sk")
		}
		if d.isNew {
			cond = "attribute_not_exists(mi)"
		} else {
			cond = "mi = :pmi"
			vals[":pmi"] = avU(d.prevMI)
		}
	}
	i := 0
	for _, c := range []struct {
		prefix string
		m      map[string]int64
	}{{"pl_", d.placed}, {"hl_", d.healthy}, {"ul_", d.unhealthy}} {
		groups := make([]string, 0, len(c.m))
		for g := range c.m {
			groups = append(groups, g)
		}
		sort.Strings(groups)
		for _, g := range groups {
			if c.m[g] == 0 {
				continue
			}
			n, v := fmt.Sprintf("#c%d", i), fmt.Sprintf(":c%d", i)
			names[n] = c.prefix + g
			vals[v] = avN(c.m[g])
			add = append(add, n+" "+v)
			i++
		}
	}
	if len(set) == 0 && len(add) == 0 {
		return action{}, false
	}
	expr := ""
	if len(set) > 0 {
		expr = "SET " + strings.Join(set, ", ")
	}
	if len(add) > 0 {
		expr += " ADD " + strings.Join(add, ", ")
	}
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	a := s.update(key(jobPK(k[0], k[1]), deploySK(k[2])), strings.TrimSpace(expr), cond, names, vals,
		fmt.Sprintf("deployment %s changed since it was read", k[2]))
	a.size += len(d.blob)
	return a, true
}
