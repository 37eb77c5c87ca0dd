package dynamodb

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// jobHead is a decoded job head item. exists is false for a job that was
// never registered or is purged (the item may still hold counters).
type jobHead struct {
	found   bool // the item exists
	exists  bool
	ver     uint64
	jmi     uint64
	ci, mi  uint64
	pIdx    uint64
	stop    bool
	live    int64
	open    int64
	seen    bool
	purged  bool
	hasMI   bool
	lastVer bool // ver is set (a version was ever written)
}

func decodeHead(it item) *jobHead {
	if it == nil {
		return &jobHead{}
	}
	return &jobHead{found: true, exists: has(it, "jmi") && !getBool(it, "purged"), ver: getU(it, "ver"), jmi: getU(it, "jmi"),
		ci: getU(it, "ci"), mi: getU(it, "mi"), pIdx: getU(it, "pIdx"), stop: getBool(it, "stp"), live: getN(it, "nLive"),
		open: getN(it, "nOpen"), seen: getBool(it, "seen"), purged: getBool(it, "purged"), hasMI: has(it, "mi"), lastVer: has(it, "ver")}
}

// status is Nomad's job status from the head's counts: running while any
// alloc is non-terminal; else pending while any eval is; else dead once it
// had allocs or evals; else pending.
func (h *jobHead) status() string {
	switch {
	case h.live > 0:
		return structs.JobStatusRunning
	case h.open > 0:
		return structs.JobStatusPending
	case h.seen:
		return structs.JobStatusDead
	}
	return structs.JobStatusPending
}

// overlay sets the fields the head owns on a job version read from its
// item.
func (h *jobHead) overlay(j *structs.Job) {
	j.Status = h.status()
	j.ModifyIndex = max(h.mi, h.pIdx)
	j.Stop = h.stop
	j.JobModifyIndex = h.jmi
}

func (s *Store) readHead(ctx context.Context, ns, id string) (*jobHead, error) {
	it, err := s.get(ctx, jobPK(ns, id), skMeta, true)
	if err != nil {
		return nil, err
	}
	return decodeHead(it), nil
}

func (s *Store) readVersion(ctx context.Context, ns, id string, v uint64) (*structs.Job, error) {
	it, err := s.get(ctx, jobPK(ns, id), versionSK(v), true)
	if err != nil {
		return nil, err
	}
	if it == nil {
		return nil, nil
	}
	return decodeVersion(it)
}

// decodeVersion reads a job version item: the spec, and the stable flag a
// successful deployment set on it.
func decodeVersion(it item) (*structs.Job, error) {
	j, err := decode[structs.Job](getB(it, "v"))
	if err != nil {
		return nil, err
	}
	j.Stable = j.Stable || getBool(it, "stable")
	return j, nil
}

func (s *Store) versionItem(j *structs.Job) item {
	it := key(jobPK(j.Namespace, j.ID), versionSK(j.Version))
	it["v"] = avB(encode(j))
	return it
}

// newEvalActions returns the put of a new or changed eval (guarded by its
// previous modify index) and, for a new one, its pointer.
func (s *Store) evalActions(e *structs.Evaluation, prev *structs.Evaluation) []action {
	it := key(jobPK(e.Namespace, e.JobID), evalSK(e.ID))
	it["v"] = avB(encode(e))
	it["mi"] = avU(e.ModifyIndex)
	it["trm"] = avBool(e.TerminalStatus())
	it["g1pk"], it["g1sk"] = avS("EVAL#"+idShard(e.ID)), avS(e.ID)
	if e.Status == structs.EvalStatusPending || e.Status == structs.EvalStatusBlocked {
		it["g2pk"] = avS("EVALS#" + e.Status + "#" + evalShard(e.ID))
		it["g2sk"] = avS(padNanos(e.CreateTime))
	}
	if prev == nil {
		ptr := key(evalPtrPK(e.ID), skEvalPtr)
		ptr["ns"], ptr["jid"] = avS(e.Namespace), avS(e.JobID)
		return []action{
			s.put(it, "attribute_not_exists(PK)", nil, fmt.Sprintf("eval %s already exists", e.ID)),
			s.put(ptr, "", nil, "eval pointer "+e.ID),
		}
	}
	return []action{s.put(it, "mi = :pmi", item{":pmi": avU(prev.ModifyIndex)}, fmt.Sprintf("eval %s changed since it was read", e.ID))}
}

// stampNewEval sets the indexes and times of an eval written at idx.
func stampEval(e, prev *structs.Evaluation, idx uint64, now int64) {
	if prev != nil {
		e.CreateIndex = prev.CreateIndex
		if e.CreateTime == 0 {
			e.CreateTime = prev.CreateTime
		}
	} else {
		e.CreateIndex = idx
	}
	e.ModifyIndex = idx
	if e.CreateTime == 0 {
		e.CreateTime = now
	}
	e.ModifyTime = now
	e.RelatedEvals = nil
}

// openDelta is how a write changes a job's count of non-terminal evals.
func openDelta(prev, e *structs.Evaluation) int64 {
	var d int64
	if prev != nil && !prev.TerminalStatus() {
		d--
	}
	if !e.TerminalStatus() {
		d++
	}
	return d
}

// RegisterJob implements storage.Store.
func (s *Store) RegisterJob(ctx context.Context, req *storage.RegisterJobRequest) (*storage.RegisterJobResult, error) {
	job := req.Job
	res, err := withConflictRetry(ctx, s, func() (*storage.RegisterJobResult, error) {
		head, err := s.readHead(ctx, job.Namespace, job.ID)
		if err != nil {
			return nil, err
		}
		if req.EnforceIndex {
			var cur uint64
			if head.exists {
				cur = head.jmi
			}
			if cur != req.JobModifyIndex {
				if !head.exists {
					return nil, storage.Conflictf("enforcing job modify index %d: job %q does not exist", req.JobModifyIndex, job.ID)
				}
				return nil, storage.Conflictf("enforcing job modify index %d: job %q exists with conflicting job modify index %d", req.JobModifyIndex, job.ID, cur)
			}
		}
		j := job.Copy()
		j.SubmitTime = req.SubmitTime
		return s.writeJob(ctx, head, j, req.Eval)
	})
	if err != nil {
		return nil, fmt.Errorf("register job %s/%s: %w", job.Namespace, job.ID, err)
	}
	if req.Submission != nil {
		if err := s.putSubmission(ctx, res.Job, req.Submission); err != nil {
			return nil, fmt.Errorf("register job %s/%s: %w", job.Namespace, job.ID, err)
		}
	}
	return res, nil
}

// writeJob writes job as the current version (a new version when the
// specification or stop flag changed, as Nomad) with its pending eval, in
// one transaction guarded by the head's modify index.
func (s *Store) writeJob(ctx context.Context, head *jobHead, job *structs.Job, ev *structs.Evaluation) (*storage.RegisterJobResult, error) {
	var existing *structs.Job
	if head.exists {
		var err error
		existing, err = s.readVersion(ctx, job.Namespace, job.ID, head.ver)
		if err != nil {
			return nil, err
		}
		if existing != nil {
			head.overlay(existing)
		}
	}
	idx := s.nextIndex()
	newVersion := true
	job.ModifyIndex = idx
	switch {
	case existing != nil && existing.Stop == job.Stop && !structs.SpecChanged(existing, job):
		job.CreateIndex, job.Version, job.JobModifyIndex = existing.CreateIndex, existing.Version, existing.JobModifyIndex
		job.SubmitTime, job.Stable = existing.SubmitTime, existing.Stable
		newVersion = false
	case existing != nil:
		job.CreateIndex, job.Version, job.JobModifyIndex, job.Stable = existing.CreateIndex, existing.Version+1, idx, false
	default:
		// A new job, or a purged one registered again: versions continue
		// after those still kept for allocs of the earlier incarnation.
		job.CreateIndex, job.JobModifyIndex, job.Stable, job.Version = idx, idx, false, 0
		if head.lastVer {
			job.Version = head.ver + 1
		}
	}
	now := time.Now().UnixNano()
	e := ev.Copy()
	e.JobModifyIndex = job.JobModifyIndex
	stampEval(e, nil, idx, now)

	u := newUnit()
	if newVersion {
		u.acts = append(u.acts, s.put(s.versionItem(job), "", nil, "job version"))
	}
	u.acts = append(u.acts, s.evalActions(e, nil)...)
	u.acts = append(u.acts, s.typeMarkerActions(existing, job)...)
	vals := item{":ver": avU(job.Version), ":jmi": avU(job.JobModifyIndex), ":ci": avU(job.CreateIndex), ":i": avU(idx),
		":stp": avBool(job.Stop), ":t": avBool(true), ":g1pk": avS("JOB"), ":g1sk": avS(job.Namespace + "#" + job.ID),
		":o": avN(openDelta(nil, e))}
	cond := "attribute_not_exists(mi)"
	if head.hasMI {
		cond = "mi = :pmi"
		vals[":pmi"] = avU(head.mi)
	}
	u.acts = append(u.acts, s.update(key(jobPK(job.Namespace, job.ID), skMeta),
		"SET ver = :ver, jmi = :jmi, ci = :ci, mi = :i, stp = :stp, seen = :t, g1pk = :g1pk, g1sk = :g1sk, pIdx = if_not_exists(pIdx, :i) REMOVE purged ADD nOpen :o",
		cond, nil, vals, fmt.Sprintf("job %s/%s changed concurrently", job.Namespace, job.ID)))
	if err := s.transact(ctx, u.acts); err != nil {
		return nil, raceOnConflict(err)
	}
	if err := s.bumpTables(ctx, idx, storage.TableJobs, storage.TableEvals); err != nil {
		return nil, err
	}
	head.open += openDelta(nil, e)
	head.seen, head.mi, head.jmi, head.stop = true, idx, job.JobModifyIndex, job.Stop
	job.Status = head.status()
	return &storage.RegisterJobResult{Job: job, Eval: e, Index: idx}, nil
}

// DeregisterJob implements storage.Store.
func (s *Store) DeregisterJob(ctx context.Context, req *storage.DeregisterJobRequest) (*storage.RegisterJobResult, error) {
	res, err := withConflictRetry(ctx, s, func() (*storage.RegisterJobResult, error) {
		head, err := s.readHead(ctx, req.Namespace, req.JobID)
		if err != nil {
			return nil, err
		}
		if !head.exists {
			return nil, storage.NotFoundf("job %q in namespace %q", req.JobID, req.Namespace)
		}
		existing, err := s.readVersion(ctx, req.Namespace, req.JobID, head.ver)
		if err != nil {
			return nil, err
		}
		if existing == nil {
			return nil, fmt.Errorf("job %s/%s: version %d missing", req.Namespace, req.JobID, head.ver)
		}
		head.overlay(existing)
		if !req.Purge {
			stopped := existing.Copy()
			stopped.Stop = true
			return s.writeJob(ctx, head, stopped, req.Eval)
		}
		idx := s.nextIndex()
		now := time.Now().UnixNano()
		e := req.Eval.Copy()
		e.JobModifyIndex = idx
		stampEval(e, nil, idx, now)
		acts := s.evalActions(e, nil)
		if isSystemType(existing.Type) {
			acts = append(acts, s.del(key(jobTypePK(existing.Type), req.Namespace+"#"+req.JobID), "", "job type marker"))
		}
		acts = append(acts, s.update(key(jobPK(req.Namespace, req.JobID), skMeta),
			"SET purged = :t, mi = :i, seen = :t REMOVE jmi, g1pk, g1sk ADD nOpen :o", "mi = :pmi", nil,
			item{":t": avBool(true), ":i": avU(idx), ":o": avN(openDelta(nil, e)), ":pmi": avU(head.mi)},
			fmt.Sprintf("job %s/%s changed concurrently", req.Namespace, req.JobID)))
		if err := s.transact(ctx, acts); err != nil {
			return nil, raceOnConflict(err)
		}
		if err := s.bumpTables(ctx, idx, storage.TableJobs, storage.TableEvals); err != nil {
			return nil, err
		}
		existing.Stop, existing.Status, existing.ModifyIndex = true, structs.JobStatusDead, idx
		return &storage.RegisterJobResult{Job: existing, Eval: e, Index: idx}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("deregister job %s/%s: %w", req.Namespace, req.JobID, err)
	}
	return res, nil
}

// Job implements storage.Store.
func (s *Store) Job(ctx context.Context, ns, id string) (*structs.Job, error) {
	head, err := s.readHead(ctx, ns, id)
	if err != nil {
		return nil, err
	}
	if !head.exists {
		return nil, storage.NotFoundf("job %q in namespace %q", id, ns)
	}
	j, err := s.readVersion(ctx, ns, id, head.ver)
	if err != nil {
		return nil, err
	}
	if j == nil {
		return nil, fmt.Errorf("job %s/%s: version %d missing", ns, id, head.ver)
	}
	head.overlay(j)
	return j, nil
}

// JobVersion implements storage.Store.
func (s *Store) JobVersion(ctx context.Context, ns, id string, version uint64) (*structs.Job, error) {
	j, err := s.readVersion(ctx, ns, id, version)
	if err != nil {
		return nil, err
	}
	if j == nil {
		return nil, storage.NotFoundf("job %q version %d in namespace %q", id, version, ns)
	}
	return j, nil
}

// JobVersions implements storage.Store.
func (s *Store) JobVersions(ctx context.Context, ns, id string) ([]*structs.Job, error) {
	items, err := s.queryPrefix(ctx, jobPK(ns, id), "VER#", false)
	if err != nil {
		return nil, err
	}
	out := make([]*structs.Job, 0, len(items))
	for _, it := range items {
		j, err := decodeVersion(it)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version > out[j].Version })
	return out, nil
}

// Jobs implements storage.Store.
func (s *Store) Jobs(ctx context.Context, ns, prefix string) ([]*structs.Job, error) {
	skPrefix := ""
	if ns != "" && ns != "*" {
		skPrefix = ns + "#" + prefix
	}
	keys, err := s.queryIndex(ctx, GSI1, "g1pk", "g1sk", "JOB", skPrefix)
	if err != nil {
		return nil, err
	}
	var hk []item
	for _, k := range keys {
		hk = append(hk, key(getS(k, "PK"), getS(k, "SK")))
	}
	return s.currentJobs(ctx, hk, prefix)
}

// currentJobs reads the current versions of the jobs whose head keys are
// hk (those that exist and whose ID starts with prefix), sorted by
// namespace then ID.
func (s *Store) currentJobs(ctx context.Context, hk []item, prefix string) ([]*structs.Job, error) {
	heads, err := s.batchGet(ctx, hk)
	if err != nil {
		return nil, err
	}
	var vk []item
	hs := map[string]*jobHead{}
	for pk, it := range heads {
		h := decodeHead(it)
		if !h.exists {
			continue
		}
		id := strings.SplitN(strings.TrimPrefix(getS(it, "PK"), "JOB#"), "#", 2)
		if len(id) != 2 || !strings.HasPrefix(id[1], prefix) {
			continue
		}
		hs[pk] = h
		vk = append(vk, key(getS(it, "PK"), versionSK(h.ver)))
	}
	versions, err := s.batchGet(ctx, vk)
	if err != nil {
		return nil, err
	}
	var out []*structs.Job
	for pk, h := range hs {
		it := versions[getS(heads[pk], "PK")+"\x00"+versionSK(h.ver)]
		if it == nil {
			continue
		}
		j, err := decodeVersion(it)
		if err != nil {
			return nil, err
		}
		h.overlay(j)
		out = append(out, j)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Namespace != out[b].Namespace {
			return out[a].Namespace < out[b].Namespace
		}
		return out[a].ID < out[b].ID
	})
	return out, nil
}

// System and sysbatch jobs are listed by a marker item per job, written
// with its head (see README.md, "System jobs"): PK JOBTYPE#<type>, SK
// <namespace>#<job ID>. SystemJobs reads the two markers' partitions, then
// the jobs, so finding the system jobs of a node that registers costs
// what there are of them, not what there are of all jobs.

// jobTypePK is the partition of the markers of a job type's jobs.
func jobTypePK(jobType string) string { return "JOBTYPE#" + jobType }

// isSystemType reports whether jobs of type t run on every eligible node.
func isSystemType(t string) bool { return t == structs.JobTypeSystem || t == structs.JobTypeSysBatch }

// typeMarkerActions keeps job's type marker in step with a write of it:
// put when it is a system job, and the marker of its former type removed
// when the type changed (prev nil: a new job).
func (s *Store) typeMarkerActions(prev, job *structs.Job) []action {
	var acts []action
	sk := job.Namespace + "#" + job.ID
	if prev != nil && prev.Type != job.Type && isSystemType(prev.Type) {
		acts = append(acts, s.del(key(jobTypePK(prev.Type), sk), "", "job type marker"))
	}
	if isSystemType(job.Type) {
		m := key(jobTypePK(job.Type), sk)
		m["ns"], m["jid"] = avS(job.Namespace), avS(job.ID)
		acts = append(acts, s.put(m, "", nil, "job type marker"))
	}
	return acts
}

// SystemJobs implements storage.Store.
func (s *Store) SystemJobs(ctx context.Context) ([]*structs.Job, error) {
	var hk []item
	for _, t := range []string{structs.JobTypeSystem, structs.JobTypeSysBatch} {
		items, err := s.query(ctx, &dynamodb.QueryInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
			KeyConditionExpression: aws.String("PK = :pk"), ExpressionAttributeValues: item{":pk": avS(jobTypePK(t))}})
		if err != nil {
			return nil, fmt.Errorf("list %s jobs: %w", t, err)
		}
		for _, it := range items {
			hk = append(hk, key(jobPK(getS(it, "ns"), getS(it, "jid")), skMeta))
		}
	}
	jobs, err := s.currentJobs(ctx, hk, "")
	if err != nil {
		return nil, err
	}
	// A marker outlives nothing for long, but a job re-registered with
	// another type between the reads above is not a system job.
	out := jobs[:0]
	for _, j := range jobs {
		if isSystemType(j.Type) {
			out = append(out, j)
		}
	}
	return out, nil
}
