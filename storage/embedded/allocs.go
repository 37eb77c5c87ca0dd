package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

func decodeInto[T any](data []byte) (*T, error) {
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("decode %T: %w", out, err)
	}
	return out, nil
}

// jobCache fills allocations' Job from the stored job versions, reading
// each version once per transaction.
type jobCache struct {
	tx   *bolt.Tx
	jobs map[string]*structs.Job
}

func newJobCache(tx *bolt.Tx) *jobCache {
	return &jobCache{tx: tx, jobs: map[string]*structs.Job{}}
}

func (c *jobCache) fill(a *structs.Allocation) error {
	k := string(versionKey(a.Namespace, a.JobID, a.JobVersion))
	j, ok := c.jobs[k]
	if !ok {
		var err error
		j, err = getJSON[structs.Job](c.tx.Bucket(bJobVersions), []byte(k))
		if err != nil {
			return err
		}
		c.jobs[k] = j
	}
	a.Job = j
	return nil
}

// getAlloc reads one alloc (without Job), or nil.
func getAlloc(tx *bolt.Tx, id string) (*structs.Allocation, error) {
	data := tx.Bucket(bAllocs).Get([]byte(id))
	if data == nil {
		return nil, nil
	}
	a, err := decodeAlloc(data)
	if err != nil {
		return nil, fmt.Errorf("alloc %s: %w", id, err)
	}
	return a, nil
}

// allocsByIndex reads the allocs listed under prefix in an index bucket,
// with their Jobs, sorted by ID.
func allocsByIndex(tx *bolt.Tx, bucket, prefix []byte) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	jc := newJobCache(tx)
	err := scanIndex(tx.Bucket(bucket), prefix, func(id string) error {
		a, err := getAlloc(tx, id)
		if err != nil || a == nil {
			return err
		}
		if err := jc.fill(a); err != nil {
			return err
		}
		out = append(out, a)
		return nil
	})
	return out, err
}

// Alloc implements storage.Store.
func (s *Store) Alloc(ctx context.Context, id string) (*structs.Allocation, error) {
	var out *structs.Allocation
	err := s.read(ctx, func(tx *bolt.Tx) error {
		a, err := getAlloc(tx, id)
		if err != nil {
			return err
		}
		if a == nil {
			return storage.NotFoundf("alloc %q", id)
		}
		out = a
		return newJobCache(tx).fill(a)
	})
	return out, err
}

// AllocsByPrefix implements storage.Store.
func (s *Store) AllocsByPrefix(ctx context.Context, ns, prefix string) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	err := s.read(ctx, func(tx *bolt.Tx) error {
		jc := newJobCache(tx)
		c := tx.Bucket(bAllocs).Cursor()
		p := []byte(prefix)
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			a, err := decodeAlloc(v)
			if err != nil {
				return err
			}
			if ns != "" && ns != "*" && a.Namespace != ns {
				continue
			}
			if err := jc.fill(a); err != nil {
				return err
			}
			out = append(out, a)
		}
		return nil
	})
	return out, err
}

// AllocsByJob implements storage.Store.
func (s *Store) AllocsByJob(ctx context.Context, ns, jobID string) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	err := s.read(ctx, func(tx *bolt.Tx) (err error) {
		out, err = allocsByIndex(tx, bAllocsByJob, prefixKey(ns, jobID))
		return err
	})
	return out, err
}

// AllocsByNode implements storage.Store.
func (s *Store) AllocsByNode(ctx context.Context, nodeID string) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	err := s.read(ctx, func(tx *bolt.Tx) (err error) {
		out, err = allocsByIndex(tx, bAllocsByNode, prefixKey(nodeID))
		return err
	})
	return out, err
}

// AllocsByEval implements storage.Store.
func (s *Store) AllocsByEval(ctx context.Context, evalID string) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	err := s.read(ctx, func(tx *bolt.Tx) (err error) {
		out, err = allocsByIndex(tx, bAllocsByEval, prefixKey(evalID))
		return err
	})
	return out, err
}

// UpdateAllocsFromClient implements storage.Store.
func (s *Store) UpdateAllocsFromClient(ctx context.Context, nodeID string, updates []*structs.Allocation) ([]*storage.ClientAllocChange, error) {
	var changes []*storage.ClientAllocChange
	_, err := s.write(ctx, func(w *wtx) error {
		changes = changes[:0]
		jc := newJobCache(w.tx)
		now := time.Now().UnixNano()
		for _, u := range updates {
			a, err := getAlloc(w.tx, u.ID)
			if err != nil {
				return err
			}
			if a == nil {
				continue // garbage collected meanwhile
			}
			if a.NodeID != nodeID {
				return fmt.Errorf("alloc %s is on node %s, not %s: %w", u.ID, a.NodeID, nodeID, storage.ErrWrongNode)
			}
			change := &storage.ClientAllocChange{PrevClientStatus: a.ClientStatus, PrevDeploymentInfo: a.DeploymentStatus}
			was := holdingOf(a)
			if !storage.ApplyClientUpdate(a, u) {
				continue
			}
			a.ModifyIndex = w.index
			a.ModifyTime = now
			if err := w.saveAlloc(was, a); err != nil {
				return err
			}
			if err := w.countDeploymentAlloc(a, false, change.PrevDeploymentInfo); err != nil {
				return err
			}
			if err := jc.fill(a); err != nil {
				return err
			}
			change.Alloc = a
			changes = append(changes, change)
			w.touch(storage.TableAllocs)
			w.touchJob(a.Namespace, a.JobID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("update allocs from node %s: %w", nodeID, err)
	}
	return changes, nil
}

// UpdateAllocDesiredTransitions implements storage.Store.
func (s *Store) UpdateAllocDesiredTransitions(ctx context.Context, transitions map[string]*structs.DesiredTransition, evals ...*structs.Evaluation) (uint64, error) {
	return s.write(ctx, func(w *wtx) error {
		now := time.Now().UnixNano()
		for id, tr := range transitions {
			a, err := getAlloc(w.tx, id)
			if err != nil {
				return err
			}
			if a == nil || tr == nil {
				continue
			}
			was := holdingOf(a)
			a.DesiredTransition = *tr
			a.ModifyIndex = w.index
			a.ModifyTime = now
			w.touch(storage.TableAllocs)
			w.touchJob(a.Namespace, a.JobID)
			if err := w.saveAlloc(was, a); err != nil {
				return err
			}
		}
		for _, e := range evals {
			if err := w.upsertEval(e.Copy()); err != nil {
				return err
			}
		}
		return nil
	})
}
