package embedded

import (
	"bytes"
	"context"
	"sort"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// RegisterJob implements storage.Store.
func (s *Store) RegisterJob(ctx context.Context, req *storage.RegisterJobRequest) (*storage.RegisterJobResult, error) {
	var res storage.RegisterJobResult
	idx, err := s.write(ctx, func(w *wtx) error {
		job := req.Job.Copy()
		existing, err := getJSON[structs.Job](w.tx.Bucket(bJobs), key(job.Namespace, job.ID))
		if err != nil {
			return err
		}
		if req.EnforceIndex {
			var cur uint64
			if existing != nil {
				cur = existing.JobModifyIndex
			}
			if cur != req.JobModifyIndex {
				if existing == nil {
					return storage.Conflictf("enforcing job modify index %d: job %q does not exist", req.JobModifyIndex, job.ID)
				}
				return storage.Conflictf("enforcing job modify index %d: job %q exists with conflicting job modify index %d", req.JobModifyIndex, job.ID, cur)
			}
		}
		job.SubmitTime = req.SubmitTime
		written, err := w.upsertJobVersion(existing, job)
		if err != nil {
			return err
		}
		if req.Submission != nil {
			sub := *req.Submission
			sub.Namespace, sub.JobID, sub.Version, sub.JobModifyIndex = written.Namespace, written.ID, written.Version, written.JobModifyIndex
			if err := putJSON(w.tx.Bucket(bSubmissions), versionKey(written.Namespace, written.ID, written.Version), &sub); err != nil {
				return err
			}
		}
		eval := req.Eval.Copy()
		eval.JobModifyIndex = written.JobModifyIndex
		if err := w.upsertEval(eval); err != nil {
			return err
		}
		res.Job, res.Eval = written, eval
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Index = idx
	return &res, nil
}

// upsertJobVersion writes job as the current version: a new version when
// the specification or the stop flag changed, else the same version with
// the new modify index (Nomad's rule).
func (w *wtx) upsertJobVersion(existing, job *structs.Job) (*structs.Job, error) {
	jobs := w.tx.Bucket(bJobs)
	job.ModifyIndex = w.index
	switch {
	case existing != nil && existing.Stop == job.Stop && !structs.SpecChanged(existing, job):
		job.CreateIndex = existing.CreateIndex
		job.Version = existing.Version
		job.JobModifyIndex = existing.JobModifyIndex
		job.SubmitTime = existing.SubmitTime
		job.Stable = existing.Stable
	case existing != nil:
		job.CreateIndex = existing.CreateIndex
		job.Version = existing.Version + 1
		job.JobModifyIndex = w.index
		job.Stable = false
	default:
		// A new job, or a purged job registered again: its versions
		// continue after any still kept for allocs of the earlier
		// incarnation, so that each alloc's version stays unambiguous.
		job.CreateIndex = w.index
		job.JobModifyIndex = w.index
		job.Stable = false
		job.Version = 0
		if last := w.lastVersion(job.Namespace, job.ID); last != nil {
			job.Version = last.Version + 1
		}
	}
	job.Status = structs.JobStatusPending
	if existing != nil {
		job.Status = existing.Status
	}
	if err := putJSON(jobs, key(job.Namespace, job.ID), job); err != nil {
		return nil, err
	}
	if err := indexJobType(w.tx, existing, job); err != nil {
		return nil, err
	}
	if err := putJSON(w.tx.Bucket(bJobVersions), versionKey(job.Namespace, job.ID, job.Version), job); err != nil {
		return nil, err
	}
	if err := w.pruneVersions(job.Namespace, job.ID); err != nil {
		return nil, err
	}
	w.touch(storage.TableJobs)
	w.touchJob(job.Namespace, job.ID)
	return job, nil
}

func (w *wtx) lastVersion(ns, id string) *structs.Job {
	c := w.tx.Bucket(bJobVersions).Cursor()
	prefix := prefixKey(ns, id)
	var last []byte
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		last = v
	}
	if last == nil {
		return nil
	}
	j, err := decodeJob(last)
	if err != nil {
		return nil
	}
	return j
}

// pruneVersions deletes versions beyond the newest maxTrackedVersions that
// no allocation of the job runs.
func (w *wtx) pruneVersions(ns, id string) error {
	vb := w.tx.Bucket(bJobVersions)
	prefix := prefixKey(ns, id)
	var keys [][]byte
	c := vb.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	if len(keys) <= maxTrackedVersions {
		return nil
	}
	inUse := map[uint64]bool{}
	err := scanIndex(w.tx.Bucket(bAllocsByJob), prefixKey(ns, id), func(aid string) error {
		a, err := getAlloc(w.tx, aid)
		if err != nil || a == nil {
			return err
		}
		inUse[a.JobVersion] = true
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys[:len(keys)-maxTrackedVersions] {
		v, err := getJSON[structs.Job](vb, k)
		if err != nil {
			return err
		}
		if v != nil && inUse[v.Version] {
			continue
		}
		if err := vb.Delete(k); err != nil {
			return err
		}
		if err := w.tx.Bucket(bSubmissions).Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// DeregisterJob implements storage.Store.
func (s *Store) DeregisterJob(ctx context.Context, req *storage.DeregisterJobRequest) (*storage.RegisterJobResult, error) {
	var res storage.RegisterJobResult
	idx, err := s.write(ctx, func(w *wtx) error {
		jobs := w.tx.Bucket(bJobs)
		existing, err := getRequired[structs.Job](jobs, key(req.Namespace, req.JobID), func() error { return storage.NotFoundf("job %q in namespace %q", req.JobID, req.Namespace) })
		if err != nil {
			return err
		}
		eval := req.Eval.Copy()
		if req.Purge {
			if err := jobs.Delete(key(req.Namespace, req.JobID)); err != nil {
				return err
			}
			if err := w.tx.Bucket(bJobsByType).Delete(key(existing.Type, req.Namespace, req.JobID)); err != nil {
				return err
			}
			w.touch(storage.TableJobs)
			existing.Stop = true
			existing.Status = structs.JobStatusDead
			existing.ModifyIndex = w.index
			res.Job = existing
			eval.JobModifyIndex = w.index
		} else {
			stopped := existing.Copy()
			stopped.Stop = true
			written, err := w.upsertJobVersion(existing, stopped)
			if err != nil {
				return err
			}
			res.Job = written
			eval.JobModifyIndex = written.JobModifyIndex
		}
		if err := w.upsertEval(eval); err != nil {
			return err
		}
		res.Eval = eval
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Index = idx
	return &res, nil
}

// Job implements storage.Store.
func (s *Store) Job(ctx context.Context, ns, id string) (*structs.Job, error) {
	var out *structs.Job
	err := s.read(ctx, func(tx *bolt.Tx) error {
		j, err := getRequired[structs.Job](tx.Bucket(bJobs), key(ns, id), func() error { return storage.NotFoundf("job %q in namespace %q", id, ns) })
		if err != nil {
			return err
		}
		out = j
		return nil
	})
	return out, err
}

// JobVersion implements storage.Store.
func (s *Store) JobVersion(ctx context.Context, ns, id string, version uint64) (*structs.Job, error) {
	var out *structs.Job
	err := s.read(ctx, func(tx *bolt.Tx) error {
		j, err := getRequired[structs.Job](tx.Bucket(bJobVersions), versionKey(ns, id, version), func() error { return storage.NotFoundf("job %q version %d in namespace %q", id, version, ns) })
		if err != nil {
			return err
		}
		out = j
		return nil
	})
	return out, err
}

// JobVersions implements storage.Store.
func (s *Store) JobVersions(ctx context.Context, ns, id string) ([]*structs.Job, error) {
	var out []*structs.Job
	err := s.read(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bJobVersions).Cursor()
		prefix := prefixKey(ns, id)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			j, err := decodeJob(v)
			if err != nil {
				return err
			}
			out = append(out, j)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Version > out[j].Version })
	return out, err
}

// Jobs implements storage.Store.
func (s *Store) Jobs(ctx context.Context, ns, prefix string) ([]*structs.Job, error) {
	var out []*structs.Job
	err := s.read(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bJobs).Cursor()
		var seek []byte
		if ns != "" && ns != "*" {
			seek = append(prefixKey(ns), prefix...)
		}
		for k, v := c.Seek(seek); k != nil && bytes.HasPrefix(k, seek); k, v = c.Next() {
			if !strings.HasPrefix(lastPart(k), prefix) {
				continue
			}
			j, err := decodeJob(v)
			if err != nil {
				return err
			}
			out = append(out, j)
		}
		return nil
	})
	return out, err
}

// refreshJobStatus recomputes a job's Status from its allocs and evals, as
// Nomad does: running while any alloc is non-terminal; else pending while
// any eval is; else dead once it had allocs or evals; else pending.
func (w *wtx) refreshJobStatus(ns, id string) error {
	jobs := w.tx.Bucket(bJobs)
	job, err := getJSON[structs.Job](jobs, key(ns, id))
	if err != nil || job == nil {
		return err
	}
	status := structs.JobStatusPending
	hasAny := false
	errDone := errStop
	err = scanIndex(w.tx.Bucket(bAllocsByJob), prefixKey(ns, id), func(aid string) error {
		a, err := getAlloc(w.tx, aid)
		if err != nil || a == nil {
			return err
		}
		hasAny = true
		if !a.TerminalStatus() {
			status = structs.JobStatusRunning
			return errDone
		}
		return nil
	})
	if err != nil && err != errDone {
		return err
	}
	if status != structs.JobStatusRunning {
		evals := w.tx.Bucket(bEvals)
		pending := false
		err = scanIndex(w.tx.Bucket(bEvalsByJob), prefixKey(ns, id), func(eid string) error {
			e, err := getJSON[structs.Evaluation](evals, []byte(eid))
			if err != nil || e == nil {
				return err
			}
			hasAny = true
			if !e.TerminalStatus() {
				pending = true
				return errDone
			}
			return nil
		})
		if err != nil && err != errDone {
			return err
		}
		switch {
		case pending:
			status = structs.JobStatusPending
		case hasAny:
			status = structs.JobStatusDead
		}
	}
	if job.Status == status {
		return nil
	}
	job.Status = status
	job.ModifyIndex = w.index
	w.touch(storage.TableJobs)
	if err := putJSON(jobs, key(ns, id), job); err != nil {
		return err
	}
	// Keep the version record's status in step for version listings.
	vb := w.tx.Bucket(bJobVersions)
	if v, err := getJSON[structs.Job](vb, versionKey(ns, id, job.Version)); err == nil && v != nil {
		v.Status = status
		return putJSON(vb, versionKey(ns, id, job.Version), v)
	}
	return nil
}

type stopErr struct{}

func (stopErr) Error() string { return "stop iteration" }

var errStop error = stopErr{}

func decodeJob(data []byte) (*structs.Job, error) {
	return decodeInto[structs.Job](data)
}

// isSystemType reports whether jobs of type t run on every eligible node.
func isSystemType(t string) bool { return t == structs.JobTypeSystem || t == structs.JobTypeSysBatch }

// indexJobType keeps jobs_by_type in step with a write of job (prev: its
// stored head before, nil for a new job).
func indexJobType(tx *bolt.Tx, prev, job *structs.Job) error {
	b := tx.Bucket(bJobsByType)
	if prev != nil && prev.Type != job.Type {
		if err := b.Delete(key(prev.Type, prev.Namespace, prev.ID)); err != nil {
			return err
		}
	}
	if !isSystemType(job.Type) {
		return nil
	}
	return b.Put(key(job.Type, job.Namespace, job.ID), nil)
}

// buildJobTypeIndex fills jobs_by_type: once, when a state file written
// before it existed is opened.
func buildJobTypeIndex(tx *bolt.Tx) error {
	c := tx.Bucket(bJobs).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		j, err := decodeJob(v)
		if err != nil {
			return err
		}
		if err := indexJobType(tx, nil, j); err != nil {
			return err
		}
	}
	return tx.Bucket(bMeta).Put(keyJobTypesBuilt, putUint(1))
}

// SystemJobs implements storage.Store: the jobs jobs_by_type lists.
func (s *Store) SystemJobs(ctx context.Context) ([]*structs.Job, error) {
	var out []*structs.Job
	err := s.read(ctx, func(tx *bolt.Tx) error {
		jobs := tx.Bucket(bJobs)
		for _, t := range []string{structs.JobTypeSystem, structs.JobTypeSysBatch} {
			c := tx.Bucket(bJobsByType).Cursor()
			p := prefixKey(t)
			for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
				v := jobs.Get(k[len(p):])
				if v == nil {
					continue
				}
				j, err := decodeJob(v)
				if err != nil {
					return err
				}
				out = append(out, j)
			}
		}
		return nil
	})
	sort.Slice(out, func(a, b int) bool {
		if out[a].Namespace != out[b].Namespace {
			return out[a].Namespace < out[b].Namespace
		}
		return out[a].ID < out[b].ID
	})
	return out, err
}
