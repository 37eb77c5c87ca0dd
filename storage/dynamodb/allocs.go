package dynamodb

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// allocRecord is a decoded master alloc item.
type allocRecord struct {
	alloc *structs.Allocation
	mi    uint64
}

func decodeAlloc(it item) (*allocRecord, error) {
	a, err := decode[structs.Allocation](getB(it, "v"))
	if err != nil {
		return nil, err
	}
	return &allocRecord{alloc: a, mi: getU(it, "mi")}, nil
}

// allocItems returns the master item (job partition) and the assignment
// item (node partition) of a, with job as the version a runs (cut to a's
// task group in the assignment: what the node agent needs).
func allocItems(a *structs.Allocation, job *structs.Job) (master, assign item) {
	c := *a
	c.Job = nil
	blob := encode(&c)
	master = key(jobPK(a.Namespace, a.JobID), allocSK(a.ID))
	master["v"], master["mi"], master["nid"] = avB(blob), avU(a.ModifyIndex), avS(a.NodeID)
	master["g1pk"], master["g1sk"] = avS("ALLOC#"+idShard(a.ID)), avS(a.ID)
	master["g3pk"], master["g3sk"] = avS("EVAL#"+a.EvalID), avS(a.ID)
	// The agent does not need the placement metrics.
	c.Metrics = nil
	assign = key(nodePK(a.NodeID), allocSK(a.ID))
	assign["v"], assign["mi"], assign["ns"], assign["jid"] = avB(encode(&c)), avU(a.ModifyIndex), avS(a.Namespace), avS(a.JobID)
	assign["ami"] = avU(a.AllocModifyIndex)
	if job != nil {
		assign["j"] = avB(encode(AssignmentJob(job, a.TaskGroup)))
	}
	return master, assign
}

// AssignmentJob is job cut to what a node agent needs to run one alloc of
// group: the job's fields and that task group only.
func AssignmentJob(job *structs.Job, group string) *structs.Job {
	c := *job
	c.TaskGroups = nil
	if tg := job.LookupTaskGroup(group); tg != nil {
		c.TaskGroups = []*structs.TaskGroup{tg}
	}
	return &c
}

// versionCache fills allocs' Job from the stored job versions, reading each
// version once.
type versionCache struct {
	s    *Store
	jobs map[string]*structs.Job
}

func (s *Store) newVersionCache() *versionCache {
	return &versionCache{s: s, jobs: map[string]*structs.Job{}}
}

func vkey(ns, job string, v uint64) string { return jobPK(ns, job) + "\x00" + versionSK(v) }

// load reads the versions allocs run that are not cached yet.
func (c *versionCache) load(ctx context.Context, allocs []*structs.Allocation) error {
	var keys []item
	for _, a := range allocs {
		if _, ok := c.jobs[vkey(a.Namespace, a.JobID, a.JobVersion)]; !ok {
			keys = append(keys, key(jobPK(a.Namespace, a.JobID), versionSK(a.JobVersion)))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	items, err := c.s.batchGet(ctx, keys)
	if err != nil {
		return err
	}
	for _, k := range keys {
		ks := keyString(k)
		var j *structs.Job
		if it := items[ks]; it != nil {
			if j, err = decodeVersion(it); err != nil {
				return err
			}
		}
		c.jobs[ks] = j
	}
	return nil
}

func (c *versionCache) fill(ctx context.Context, allocs []*structs.Allocation) error {
	if err := c.load(ctx, allocs); err != nil {
		return err
	}
	for _, a := range allocs {
		a.Job = c.jobs[vkey(a.Namespace, a.JobID, a.JobVersion)]
	}
	return nil
}

func (c *versionCache) get(ns, job string, v uint64) *structs.Job {
	return c.jobs[vkey(ns, job, v)]
}

// allocsFromItems decodes master items and fills their jobs.
func (s *Store) allocsFromItems(ctx context.Context, items []item) ([]*structs.Allocation, error) {
	out := make([]*structs.Allocation, 0, len(items))
	for _, it := range items {
		r, err := decodeAlloc(it)
		if err != nil {
			return nil, err
		}
		out = append(out, r.alloc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, s.newVersionCache().fill(ctx, out)
}

// Alloc implements storage.Store.
func (s *Store) Alloc(ctx context.Context, id string) (*structs.Allocation, error) {
	as, err := s.allocsByIDPrefix(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, a := range as {
		if a.ID == id {
			return a, nil
		}
	}
	return nil, storage.NotFoundf("alloc %q", id)
}

func (s *Store) allocsByIDPrefix(ctx context.Context, prefix string) ([]*structs.Allocation, error) {
	var keys []item
	for _, shard := range shardsFor(prefix) {
		ks, err := s.queryIndex(ctx, GSI1, "g1pk", "g1sk", "ALLOC#"+shard, prefix)
		if err != nil {
			return nil, err
		}
		keys = append(keys, ks...)
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	list := make([]item, 0, len(items))
	for _, it := range items {
		list = append(list, it)
	}
	return s.allocsFromItems(ctx, list)
}

// AllocsByPrefix implements storage.Store.
func (s *Store) AllocsByPrefix(ctx context.Context, ns, prefix string) ([]*structs.Allocation, error) {
	as, err := s.allocsByIDPrefix(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := as[:0]
	for _, a := range as {
		if ns == "" || ns == "*" || a.Namespace == ns {
			out = append(out, a)
		}
	}
	return out, nil
}

// AllocsByJob implements storage.Store: one strongly consistent query.
func (s *Store) AllocsByJob(ctx context.Context, ns, jobID string) ([]*structs.Allocation, error) {
	items, err := s.queryPrefix(ctx, jobPK(ns, jobID), "ALLOC#", true)
	if err != nil {
		return nil, err
	}
	return s.allocsFromItems(ctx, items)
}

// AllocsByNode implements storage.Store: the node's assignment items name
// the masters, which are read strongly consistent.
func (s *Store) AllocsByNode(ctx context.Context, nodeID string) ([]*structs.Allocation, error) {
	assigns, err := s.queryPrefix(ctx, nodePK(nodeID), "ALLOC#", true)
	if err != nil {
		return nil, err
	}
	keys := make([]item, 0, len(assigns))
	for _, it := range assigns {
		if s.valueless(nodeID, it) {
			continue
		}
		keys = append(keys, key(jobPK(getS(it, "ns"), getS(it, "jid")), getS(it, "SK")))
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	list := make([]item, 0, len(items))
	for _, it := range items {
		list = append(list, it)
	}
	return s.allocsFromItems(ctx, list)
}

// AllocsByEval implements storage.Store (gsi3).
func (s *Store) AllocsByEval(ctx context.Context, evalID string) ([]*structs.Allocation, error) {
	keys, err := s.queryIndex(ctx, GSI3, "g3pk", "g3sk", "EVAL#"+evalID, "")
	if err != nil {
		return nil, err
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	list := make([]item, 0, len(items))
	for _, it := range items {
		list = append(list, it)
	}
	return s.allocsFromItems(ctx, list)
}

// UpdateAllocsFromClient implements storage.Store. Each alloc's master and
// assignment are written together, guarded by the modify index read; a
// terminal transition releases the alloc's resources on its node and
// lowers its job's live count in the same transaction, exactly once.
func (s *Store) UpdateAllocsFromClient(ctx context.Context, nodeID string, updates []*structs.Allocation) ([]*storage.ClientAllocChange, error) {
	changes, err := withConflictRetry(ctx, s, func() ([]*storage.ClientAllocChange, error) {
		return s.updateAllocsFromClient(ctx, nodeID, updates)
	})
	if err != nil {
		return nil, fmt.Errorf("update allocs from node %s: %w", nodeID, err)
	}
	return changes, nil
}

func (s *Store) updateAllocsFromClient(ctx context.Context, nodeID string, updates []*structs.Allocation) ([]*storage.ClientAllocChange, error) {
	keys := make([]item, 0, len(updates))
	for _, u := range updates {
		keys = append(keys, key(nodePK(nodeID), allocSK(u.ID)))
	}
	assigns, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	var masterKeys []item
	for _, u := range updates {
		it := assigns[keyString(key(nodePK(nodeID), allocSK(u.ID)))]
		if it != nil && s.valueless(nodeID, it) {
			it = nil
		}
		if it == nil {
			// Not assigned to this node: another node's alloc is refused,
			// an unknown one skipped (garbage collected meanwhile).
			other, err := s.Alloc(ctx, u.ID)
			if err == nil && other.NodeID != nodeID {
				return nil, fmt.Errorf("alloc %s is on node %s, not %s: %w", u.ID, other.NodeID, nodeID, storage.ErrWrongNode)
			}
			continue
		}
		masterKeys = append(masterKeys, key(jobPK(getS(it, "ns"), getS(it, "jid")), allocSK(u.ID)))
	}
	if len(masterKeys) == 0 {
		return nil, nil
	}
	masters, err := s.batchGet(ctx, append(masterKeys, key(nodePK(nodeID), skMeta)))
	if err != nil {
		return nil, err
	}
	idx := s.nextIndex()
	nodeExists := masters[keyString(key(nodePK(nodeID), skMeta))] != nil
	now := time.Now().UnixNano()
	vc := s.newVersionCache()
	var units []*unit
	var changes []*storage.ClientAllocChange
	var deps map[string]*readDeployment
	tables := []string{storage.TableAllocs}
	for _, u := range updates {
		var mk item
		for _, k := range masterKeys {
			if strings.HasSuffix(getS(k, "SK"), u.ID) {
				mk = k
				break
			}
		}
		it := masters[keyString(mk)]
		if mk == nil || it == nil {
			continue
		}
		rec, err := decodeAlloc(it)
		if err != nil {
			return nil, err
		}
		a := rec.alloc
		if a.NodeID != nodeID {
			return nil, fmt.Errorf("alloc %s is on node %s, not %s: %w", u.ID, a.NodeID, nodeID, storage.ErrWrongNode)
		}
		change := &storage.ClientAllocChange{PrevClientStatus: a.ClientStatus, PrevDeploymentInfo: a.DeploymentStatus}
		held := a.HoldsResources()
		if !storage.ApplyClientUpdate(a, u) {
			continue
		}
		a.ModifyIndex, a.ModifyTime = idx, now
		if err := vc.load(ctx, []*structs.Allocation{a}); err != nil {
			return nil, err
		}
		job := vc.get(a.Namespace, a.JobID, a.JobVersion)
		un := newUnit()
		master, assign := allocItems(a, job)
		un.acts = append(un.acts,
			s.put(master, "mi = :pmi", item{":pmi": avU(rec.mi)}, fmt.Sprintf("alloc %s changed since it was read", a.ID)),
			s.put(assign, "", nil, "assignment "+a.ID))
		if held && !a.HoldsResources() {
			r := a.AllocatedResources.Comparable()
			if nodeExists {
				d := un.node(nodeID)
				d.cpu, d.mem, d.disk, d.allocs = -r.CPU, -r.MemoryMB, -r.DiskMB, -1
				d.give = a.AllocatedResources.HostPorts()
			}
			un.head(a.Namespace, a.JobID).live--
			tables = append(tables, storage.TableJobs)
		}
		if a.DeploymentID != "" {
			hl, ul := storage.HealthDecided(change.PrevDeploymentInfo, a.DeploymentStatus)
			if hl+ul > 0 {
				if deps == nil {
					deps = map[string]*readDeployment{}
				}
				if err := s.countHealth(ctx, un, a, hl, ul, idx, deps); err != nil {
					return nil, err
				}
				tables = append(tables, storage.TableDeployments)
			}
		}
		a.Job = job
		change.Alloc = a
		changes = append(changes, change)
		units = append(units, un)
	}
	if len(units) == 0 {
		return nil, nil
	}
	for _, c := range pack(units, s.cfg.ChunkActions) {
		if err := s.transact(ctx, s.render(c)); err != nil {
			return nil, raceOnConflict(err)
		}
	}
	if err := s.bumpTables(ctx, idx, tables...); err != nil {
		return nil, err
	}
	return changes, nil
}

// countHealth adds a first health decision to the alloc's deployment; a
// healthy alloc also moves the group's progress deadline (blob
// read-modify-write guarded by the deployment's modify index).
func (s *Store) countHealth(ctx context.Context, un *unit, a *structs.Allocation, healthy, unhealthy int, idx uint64, deps map[string]*readDeployment) error {
	rd, ok := deps[a.DeploymentID]
	if !ok {
		it, err := s.get(ctx, jobPK(a.Namespace, a.JobID), deploySK(a.DeploymentID), true)
		if err != nil {
			return err
		}
		if it == nil || !has(it, "v") {
			return nil
		}
		d, err := decodeDeployment(it)
		if err != nil {
			return err
		}
		rd = &readDeployment{d: d, prevMI: getU(it, "mi")}
		if err := readAfterIndex(idx, rd.prevMI, "deployment "+d.ID); err != nil {
			return err
		}
		deps[a.DeploymentID] = rd
	}
	g, ok := rd.d.TaskGroups[a.TaskGroup]
	if !ok {
		return nil
	}
	dd := un.deploy(a.Namespace, a.JobID, a.DeploymentID)
	dd.healthy[a.TaskGroup] += int64(healthy)
	dd.unhealthy[a.TaskGroup] += int64(unhealthy)
	if healthy > 0 && g.ProgressDeadline > 0 {
		g.RequireProgressBy = a.DeploymentStatus.Timestamp.Add(g.ProgressDeadline)
		dd.blob, dd.active, dd.mi, dd.ci, dd.prevMI = encode(stripCounters(rd.d)), rd.d.Active(), idx, rd.d.CreateIndex, rd.prevMI
	}
	return nil
}

// UpdateAllocDesiredTransitions implements storage.Store.
func (s *Store) UpdateAllocDesiredTransitions(ctx context.Context, transitions map[string]*structs.DesiredTransition, evals ...*structs.Evaluation) (uint64, error) {
	idx, err := withConflictRetry(ctx, s, func() (uint64, error) {
		ids := make([]string, 0, len(transitions))
		for id := range transitions {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		recs := make(map[string]*allocRecord, len(ids))
		for _, id := range ids {
			if transitions[id] == nil {
				continue
			}
			rec, err := s.allocRecordByID(ctx, id)
			if err != nil {
				return 0, err
			}
			recs[id] = rec
		}
		idx := s.nextIndex()
		var units []*unit
		vc := s.newVersionCache()
		now := time.Now().UnixNano()
		for _, id := range ids {
			tr, rec := transitions[id], recs[id]
			if tr == nil || rec == nil {
				continue
			}
			a := rec.alloc
			a.DesiredTransition = *tr
			a.ModifyIndex, a.ModifyTime = idx, now
			if err := vc.load(ctx, []*structs.Allocation{a}); err != nil {
				return 0, err
			}
			master, assign := allocItems(a, vc.get(a.Namespace, a.JobID, a.JobVersion))
			u := newUnit()
			u.acts = append(u.acts, s.put(master, "mi = :pmi", item{":pmi": avU(rec.mi)}, fmt.Sprintf("alloc %s changed since it was read", id)),
				s.put(assign, "", nil, "assignment "+id))
			units = append(units, u)
		}
		last := newUnit()
		if err := s.addEvals(ctx, last, idx, evals); err != nil {
			return 0, err
		}
		units = append(units, last)
		for _, c := range pack(units, s.cfg.ChunkActions) {
			if err := s.transact(ctx, s.render(c)); err != nil {
				return 0, raceOnConflict(err)
			}
		}
		return idx, s.bumpTables(ctx, idx, storage.TableAllocs, storage.TableEvals, storage.TableJobs)
	})
	if err != nil {
		return 0, fmt.Errorf("update desired transitions: %w", err)
	}
	return idx, nil
}

// allocRecordByID finds a master alloc by ID (gsi1) and reads it strongly
// consistent; nil when unknown.
func (s *Store) allocRecordByID(ctx context.Context, id string) (*allocRecord, error) {
	keys, err := s.queryIndex(ctx, GSI1, "g1pk", "g1sk", "ALLOC#"+idShard(id), id)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if getS(k, "g1sk") != id {
			continue
		}
		it, err := s.get(ctx, getS(k, "PK"), getS(k, "SK"), true)
		if err != nil || it == nil {
			return nil, err
		}
		return decodeAlloc(it)
	}
	return nil, nil
}
