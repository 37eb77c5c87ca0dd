package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

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

// masterItem is the master item of a (job partition): the alloc without
// its job, and what conditions and gsi1 need.
func masterItem(a *structs.Allocation) item {
	c := *a
	c.Job = nil
	master := key(jobPK(a.Namespace, a.JobID), allocSK(a.ID))
	master["v"], master["mi"], master["nid"] = avB(encodeAlloc(&c)), avU(a.ModifyIndex), avS(a.NodeID)
	master["g1pk"], master["g1sk"] = avS("ALLOC#"+idShard(a.ID)), avS(a.ID)
	return master
}

// allocItems returns the master item (job partition) and the assignment
// item (node partition) of a. The assignment is what the node agent reads:
// the alloc without its placement metrics and without its job, which the
// agent finds in the node's copy of the job version (jobCopyItem), written
// once per node per version rather than once per alloc.
func allocItems(a *structs.Allocation) (master, assign item) {
	master = masterItem(a)
	c := *a
	c.Job, c.Metrics = nil, nil
	assign = key(nodePK(a.NodeID), allocSK(a.ID))
	assign["v"], assign["mi"], assign["ns"], assign["jid"] = avB(encodeAlloc(&c)), avU(a.ModifyIndex), avS(a.Namespace), avS(a.JobID)
	assign["ami"] = avU(a.AllocModifyIndex)
	return master, assign
}

// jobCopySK is the sort key, in a node's partition, of the node's copy of
// one task group of a job version. Namespaces hold no '#'; the job ID is
// length-prefixed, so that no two (job, version, group) share a key.
func jobCopySK(ns, jobID string, version uint64, group string) string {
	return fmt.Sprintf("JOBV#%s#%020d#%d:%s#%s", ns, version, len(jobID), jobID, group)
}

// jobCopyItem is node's copy of job (the version an alloc runs) cut to
// group: what the node agent needs to run the allocs of that group and
// version, in the node's own partition so that the agent's policy
// (dynamodb:LeadingKeys) lets it read it. A plan chunk that writes an
// assignment writes the copy it refers to with it; mi is that plan's
// index.
func jobCopyItem(nodeID string, job *structs.Job, group string, idx uint64) item {
	it := key(nodePK(nodeID), jobCopySK(job.Namespace, job.ID, job.Version, group))
	it["v"], it["mi"] = avB(encode(AssignmentJob(job, group))), avU(idx)
	it["ns"], it["jid"], it["ver"], it["tg"] = avS(job.Namespace), avS(job.ID), avU(job.Version), avS(group)
	return it
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
	// eventual reads versions eventually consistent (half a read unit):
	// for readers that do not need the stable flag's latest value.
	eventual bool
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
	items, err := c.s.batchGetWith(ctx, keys, !c.eventual)
	if err != nil {
		return err
	}
	if c.eventual { // a version written a moment ago may not be everywhere yet
		var missing []item
		for _, k := range keys {
			if items[keyString(k)] == nil {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			again, err := c.s.batchGet(ctx, missing)
			if err != nil {
				return err
			}
			for k, it := range again {
				items[k] = it
			}
		}
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

// AllocsByEval implements storage.Store: the eval's pointer names its job,
// whose allocs are read with one strongly consistent Query of its
// partition and kept to those the eval placed. (An index by eval would
// cost a write unit per placement; this read is an API call's, rare.)
func (s *Store) AllocsByEval(ctx context.Context, evalID string) ([]*structs.Allocation, error) {
	ptr, err := s.get(ctx, evalPtrPK(evalID), skEvalPtr, true)
	if err != nil || ptr == nil {
		return nil, err
	}
	items, err := s.queryPrefix(ctx, jobPK(getS(ptr, "ns"), getS(ptr, "jid")), "ALLOC#", true)
	if err != nil {
		return nil, err
	}
	var mine []item
	for _, it := range items {
		r, err := decodeAlloc(it)
		if err != nil {
			return nil, err
		}
		if r.alloc.EvalID == evalID {
			mine = append(mine, it)
		}
	}
	return s.allocsFromItems(ctx, mine)
}

// UpdateAllocsFromClient implements storage.Store. Each alloc's change is
// guarded by the modify index read. A change the node agent does not read
// back (client status and task states while the alloc keeps running, the
// first report above all) is one UpdateItem of the master alone, outside a
// transaction: 1 write unit for a master under 1 KB. One that the agent
// reads from its assignment (a terminal client status, a health verdict)
// rewrites master and assignment in one transaction; a terminal transition
// also releases the alloc's resources on its node and lowers its job's
// live count there, exactly once.
func (s *Store) UpdateAllocsFromClient(ctx context.Context, nodeID string, updates []*structs.Allocation) ([]*storage.ClientAllocChange, error) {
	// Writes that landed before a conflict stay landed: their changes are
	// kept across the retry, which finds them applied and skips them.
	var done []*storage.ClientAllocChange
	_, err := withConflictRetry(ctx, s, func() (struct{}, error) {
		return struct{}{}, s.updateAllocsFromClient(ctx, nodeID, updates, &done)
	})
	if err != nil {
		return nil, fmt.Errorf("update allocs from node %s: %w", nodeID, err)
	}
	s.dropServicesOf(ctx, stoppedByReport(done))
	return done, nil
}

// assignmentsOf reads the node's assignments of ids: eventually consistent
// (their namespace and job never change; half a read unit each), then
// strongly consistent for those the first read did not find (one placed
// a moment ago may not have reached every replica yet).
func (s *Store) assignmentsOf(ctx context.Context, nodeID string, ids []string) (map[string]item, error) {
	keys := make([]item, len(ids))
	for i, id := range ids {
		keys[i] = key(nodePK(nodeID), allocSK(id))
	}
	found, err := s.batchGetWith(ctx, keys, false)
	if err != nil {
		return nil, err
	}
	var missing []item
	for _, k := range keys {
		if found[keyString(k)] == nil {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		again, err := s.batchGet(ctx, missing)
		if err != nil {
			return nil, err
		}
		for k, it := range again {
			found[k] = it
		}
	}
	out := make(map[string]item, len(ids))
	for _, id := range ids {
		if it := found[keyString(key(nodePK(nodeID), allocSK(id)))]; it != nil && !s.valueless(nodeID, it) {
			out[id] = it
		}
	}
	return out, nil
}

// agentVisible reports whether a client update changed what the node agent
// reads back from its assignment: whether the alloc is client-terminal,
// and its deployment health.
func agentVisible(before, after *structs.Allocation) bool {
	return before.ClientTerminalStatus() != after.ClientTerminalStatus() ||
		!sameDeploymentStatus(before.DeploymentStatus, after.DeploymentStatus)
}

func sameDeploymentStatus(a, b *structs.AllocDeploymentStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.IsHealthy() == b.IsHealthy() && a.IsUnhealthy() == b.IsUnhealthy() && a.Timestamp.Equal(b.Timestamp) &&
		a.Canary == b.Canary && a.ModifyIndex == b.ModifyIndex
}

func (s *Store) updateAllocsFromClient(ctx context.Context, nodeID string, updates []*structs.Allocation, done *[]*storage.ClientAllocChange) error {
	ids := make([]string, len(updates))
	for i, u := range updates {
		ids[i] = u.ID
	}
	assigns, err := s.assignmentsOf(ctx, nodeID, ids)
	if err != nil {
		return err
	}
	masterKeys := map[string]item{} // alloc ID →
	var keys []item
	for _, u := range updates {
		it := assigns[u.ID]
		if it == nil {
			// Not assigned to this node: another node's alloc is refused,
			// an unknown one skipped (garbage collected meanwhile).
			other, err := s.Alloc(ctx, u.ID)
			if err == nil && other.NodeID != nodeID {
				return fmt.Errorf("alloc %s is on node %s, not %s: %w", u.ID, other.NodeID, nodeID, storage.ErrWrongNode)
			}
			continue
		}
		mk := key(jobPK(getS(it, "ns"), getS(it, "jid")), allocSK(u.ID))
		masterKeys[u.ID] = mk
		keys = append(keys, mk)
	}
	if len(masterKeys) == 0 {
		return nil
	}
	masters, err := s.batchGet(ctx, keys)
	if err != nil {
		return err
	}
	idx := s.nextIndex()
	// The node item is read only when an alloc releases what it held.
	var nodeRead, nodeFound bool
	nodeExists := func() (bool, error) {
		if !nodeRead {
			it, err := s.get(ctx, nodePK(nodeID), skMeta, true)
			if err != nil {
				return false, err
			}
			nodeRead, nodeFound = true, it != nil
		}
		return nodeFound, nil
	}
	now := time.Now().UnixNano()
	// Job versions never change but for their stable flag, which no
	// reaction reads: eventually consistent (half a read unit).
	vc := s.newVersionCache()
	vc.eventual = true
	var units []*unit
	var unitChanges [][]*storage.ClientAllocChange
	type single struct {
		act    action
		change *storage.ClientAllocChange
	}
	var singles []single
	var deps map[string]*readDeployment
	tables := []string{storage.TableAllocs}
	for _, u := range updates {
		mk, ok := masterKeys[u.ID]
		if !ok {
			continue
		}
		it := masters[keyString(mk)]
		if it == nil {
			continue
		}
		rec, err := decodeAlloc(it)
		if err != nil {
			return err
		}
		a := rec.alloc
		if a.NodeID != nodeID {
			return fmt.Errorf("alloc %s is on node %s, not %s: %w", u.ID, a.NodeID, nodeID, storage.ErrWrongNode)
		}
		before := a.Copy()
		change := &storage.ClientAllocChange{PrevClientStatus: a.ClientStatus, PrevDeploymentInfo: a.DeploymentStatus}
		held := a.HoldsResources()
		if !storage.ApplyClientUpdate(a, u) {
			continue
		}
		a.ModifyIndex, a.ModifyTime = idx, now
		if err := vc.load(ctx, []*structs.Allocation{a}); err != nil {
			return err
		}
		job := vc.get(a.Namespace, a.JobID, a.JobVersion)
		guard, guardVals, guardDesc := "mi = :pmi", item{":pmi": avU(rec.mi)}, fmt.Sprintf("alloc %s changed since it was read", a.ID)
		var hl, ul int
		if a.DeploymentID != "" {
			hl, ul = storage.HealthDecided(change.PrevDeploymentInfo, a.DeploymentStatus)
		}
		released := held && !a.HoldsResources()
		a.Job = job
		change.Alloc = a
		if !released && hl+ul == 0 && !agentVisible(before, a) {
			// The master alone.
			c := *a
			c.Job = nil
			act := s.update(mk, "SET v = :v, mi = :mi", guard, nil, item{":v": avB(encodeAlloc(&c)), ":mi": avU(idx), ":pmi": avU(rec.mi)}, guardDesc)
			singles = append(singles, single{act: act, change: change})
			continue
		}
		un := newUnit()
		ca := *a
		ca.Job = nil
		master, assign := allocItems(&ca)
		un.acts = append(un.acts, s.put(master, guard, guardVals, guardDesc), s.put(assign, "", nil, "assignment "+a.ID))
		if released {
			r := a.AllocatedResources.Comparable()
			exists, err := nodeExists()
			if err != nil {
				return err
			}
			if exists {
				d := un.node(nodeID)
				d.cpu, d.mem, d.disk, d.allocs = -r.CPU, -r.MemoryMB, -r.DiskMB, -1
				d.give = a.AllocatedResources.HostPorts()
			}
			un.head(a.Namespace, a.JobID).live--
			tables = append(tables, storage.TableJobs)
		}
		if hl+ul > 0 {
			if deps == nil {
				deps = map[string]*readDeployment{}
			}
			if err := s.countHealth(ctx, un, a, hl, ul, idx, deps); err != nil {
				return err
			}
			tables = append(tables, storage.TableDeployments)
		}
		units = append(units, un)
		unitChanges = append(unitChanges, []*storage.ClientAllocChange{change})
	}
	if len(units) == 0 && len(singles) == 0 {
		return nil
	}
	// The transactions, then the single updates (several at a time). A
	// conflict anywhere is returned once everything else was tried.
	var conflict error
	var mu sync.Mutex
	record := func(cs ...*storage.ClientAllocChange) {
		mu.Lock()
		*done = append(*done, cs...)
		mu.Unlock()
	}
	for _, c := range packWithChanges(units, unitChanges, s.cfg.ChunkActions) {
		err := s.transact(ctx, s.render(c.unit))
		switch {
		case err == nil:
			record(c.changes...)
		case errors.Is(err, storage.ErrConflict):
			conflict = err
		default:
			return err
		}
	}
	errs := make([]error, len(singles))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, one := range singles {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if errs[i] = s.updateOne(ctx, one.act); errs[i] == nil {
				record(one.change)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, storage.ErrConflict):
			conflict = err
		default:
			return err
		}
	}
	if err := s.bumpTables(ctx, idx, tables...); err != nil {
		return err
	}
	if conflict != nil {
		return raceOnConflict(conflict)
	}
	return nil
}

// updateOne runs one update action as a single UpdateItem (1 write unit
// per KB of the item, half a transaction's).
func (s *Store) updateOne(ctx context.Context, a action) error {
	u := a.item.Update
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression,
		ConditionExpression: u.ConditionExpression, ExpressionAttributeNames: u.ExpressionAttributeNames,
		ExpressionAttributeValues: u.ExpressionAttributeValues})
	if kind, _ := classify(err); kind == failCondition {
		return storage.Conflictf("%s", a.desc)
	}
	return wrapErr(err, a.desc)
}

// changedChunk is one transaction of client updates and the changes it
// carries.
type changedChunk struct {
	unit    *unit
	changes []*storage.ClientAllocChange
}

// packWithChanges packs units as pack does, keeping each chunk's changes.
func packWithChanges(units []*unit, changes [][]*storage.ClientAllocChange, maxActions int) []changedChunk {
	var out []changedChunk
	cur := changedChunk{unit: newUnit()}
	for i, u := range units {
		trial := newUnit()
		trial.merge(cur.unit)
		trial.merge(u)
		if len(cur.changes) > 0 && (trial.count() > maxActions || trial.size() > chunkBytes || trial.portChanges() > maxPortChanges) {
			out = append(out, cur)
			cur = changedChunk{unit: newUnit()}
			cur.unit.merge(u)
			cur.changes = append(cur.changes, changes[i]...)
			continue
		}
		cur.unit = trial
		cur.changes = append(cur.changes, changes[i]...)
	}
	if len(cur.changes) > 0 {
		out = append(out, cur)
	}
	return out
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
		now := time.Now().UnixNano()
		for _, id := range ids {
			tr, rec := transitions[id], recs[id]
			if tr == nil || rec == nil {
				continue
			}
			a := rec.alloc
			a.DesiredTransition = *tr
			a.ModifyIndex, a.ModifyTime = idx, now
			// The node agent does not read desired transitions: the
			// master alone.
			u := newUnit()
			u.acts = append(u.acts, s.put(masterItem(a), "mi = :pmi", item{":pmi": avU(rec.mi)}, fmt.Sprintf("alloc %s changed since it was read", id)))
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
