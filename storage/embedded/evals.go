package embedded

import (
	"context"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// upsertEval writes an eval, keeping CreateIndex of an existing one.
func (w *wtx) upsertEval(e *structs.Evaluation) error {
	b := w.tx.Bucket(bEvals)
	existing, err := getJSON[structs.Evaluation](b, []byte(e.ID))
	if err != nil {
		return err
	}
	byStatus := w.tx.Bucket(bEvalsByStatus)
	if existing != nil {
		e.CreateIndex = existing.CreateIndex
		if e.CreateTime == 0 {
			e.CreateTime = existing.CreateTime
		}
		if existing.Status != e.Status {
			if err := byStatus.Delete(key(existing.Status, e.ID)); err != nil {
				return err
			}
		}
	} else {
		e.CreateIndex = w.index
		if err := w.tx.Bucket(bEvalsByJob).Put(key(e.Namespace, e.JobID, e.ID), nil); err != nil {
			return err
		}
	}
	e.ModifyIndex = w.index
	now := time.Now().UnixNano()
	if e.CreateTime == 0 {
		e.CreateTime = now
	}
	e.ModifyTime = now
	e.RelatedEvals = nil
	if err := byStatus.Put(key(e.Status, e.ID), nil); err != nil {
		return err
	}
	w.touch(storage.TableEvals)
	w.touchJob(e.Namespace, e.JobID)
	return putJSON(b, []byte(e.ID), e)
}

// UpsertEvals implements storage.Store.
func (s *Store) UpsertEvals(ctx context.Context, evals ...*structs.Evaluation) (uint64, error) {
	return s.write(ctx, func(w *wtx) error {
		for _, e := range evals {
			if err := w.upsertEval(e.Copy()); err != nil {
				return err
			}
		}
		return nil
	})
}

// Eval implements storage.Store.
func (s *Store) Eval(ctx context.Context, id string) (*structs.Evaluation, error) {
	var out *structs.Evaluation
	err := s.read(ctx, func(tx *bolt.Tx) error {
		e, err := getRequired[structs.Evaluation](tx.Bucket(bEvals), []byte(id), func() error { return storage.NotFoundf("evaluation %q", id) })
		if err != nil {
			return err
		}
		out = e
		return nil
	})
	return out, err
}

// Evals implements storage.Store. A filter on status reads that status's
// evals through evals_by_status (unblocking and the pending sweep ask for
// the few blocked or pending ones among many finished).
func (s *Store) Evals(ctx context.Context, f storage.EvalFilter) ([]*structs.Evaluation, error) {
	var out []*structs.Evaluation
	keep := func(e *structs.Evaluation) bool {
		return strings.HasPrefix(e.ID, f.Prefix) && (f.Namespace == "" || f.Namespace == "*" || e.Namespace == f.Namespace) &&
			(f.JobID == "" || e.JobID == f.JobID) && (f.Status == "" || e.Status == f.Status)
	}
	if f.Status != "" {
		err := s.read(ctx, func(tx *bolt.Tx) error {
			b := tx.Bucket(bEvals)
			return scanIndex(tx.Bucket(bEvalsByStatus), prefixKey(f.Status), func(id string) error {
				e, err := getJSON[structs.Evaluation](b, []byte(id))
				if err != nil || e == nil {
					return err
				}
				if keep(e) {
					out = append(out, e)
				}
				return nil
			})
		})
		sortEvals(out)
		return out, err
	}
	err := s.read(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bEvals).Cursor()
		for k, v := c.Seek([]byte(f.Prefix)); k != nil && strings.HasPrefix(string(k), f.Prefix); k, v = c.Next() {
			e, err := decodeInto[structs.Evaluation](v)
			if err != nil {
				return err
			}
			if f.Namespace != "" && f.Namespace != "*" && e.Namespace != f.Namespace {
				continue
			}
			if f.JobID != "" && e.JobID != f.JobID {
				continue
			}
			if f.Status != "" && e.Status != f.Status {
				continue
			}
			out = append(out, e)
		}
		return nil
	})
	sortEvals(out)
	return out, err
}

// EvalsByJob implements storage.Store.
func (s *Store) EvalsByJob(ctx context.Context, ns, jobID string) ([]*structs.Evaluation, error) {
	var out []*structs.Evaluation
	err := s.read(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bEvals)
		return scanIndex(tx.Bucket(bEvalsByJob), prefixKey(ns, jobID), func(id string) error {
			e, err := getJSON[structs.Evaluation](b, []byte(id))
			if err != nil || e == nil {
				return err
			}
			out = append(out, e)
			return nil
		})
	})
	sortEvals(out)
	return out, err
}

func sortEvals(es []*structs.Evaluation) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].CreateIndex != es[j].CreateIndex {
			return es[i].CreateIndex < es[j].CreateIndex
		}
		return es[i].ID < es[j].ID
	})
}

// buildEvalStatusIndex fills evals_by_status from the evals: once, when a
// state file written before the index existed is opened.
func buildEvalStatusIndex(tx *bolt.Tx) error {
	byStatus := tx.Bucket(bEvalsByStatus)
	c := tx.Bucket(bEvals).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		e, err := decodeInto[structs.Evaluation](v)
		if err != nil {
			return err
		}
		if err := byStatus.Put(key(e.Status, e.ID), nil); err != nil {
			return err
		}
	}
	return tx.Bucket(bMeta).Put(keyEvalStatusBuilt, putUint(1))
}
