package embedded

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// UpsertNode implements storage.Store.
func (s *Store) UpsertNode(ctx context.Context, node *structs.Node) (*structs.Node, error) {
	var out *structs.Node
	_, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bNodes)
		n := node.Copy()
		existing, err := getJSON[structs.Node](b, []byte(n.ID))
		if err != nil {
			return err
		}
		if existing != nil {
			n.CreateIndex = existing.CreateIndex
			n.SchedulingEligibility = existing.SchedulingEligibility
			n.Drain = existing.Drain
			n.DrainStrategy = existing.DrainStrategy
			n.Events = existing.Events
		} else {
			n.CreateIndex = w.index
			if n.SchedulingEligibility == "" {
				n.SchedulingEligibility = structs.NodeSchedulingEligible
			}
		}
		if n.Status == "" {
			n.Status = structs.NodeStatusReady
		}
		n.ModifyIndex = w.index
		w.touch(storage.TableNodes)
		out = n
		return putJSON(b, []byte(n.ID), n)
	})
	if err != nil {
		return nil, fmt.Errorf("upsert node %s: %w", node.ID, err)
	}
	return out, nil
}

// UpdateNodeStatus implements storage.Store.
func (s *Store) UpdateNodeStatus(ctx context.Context, nodeID, status string, at int64) (*structs.Node, error) {
	var out *structs.Node
	_, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bNodes)
		n, err := getRequired[structs.Node](b, []byte(nodeID), func() error { return storage.NotFoundf("node %q", nodeID) })
		if err != nil {
			return err
		}
		if n.Status == status {
			out = n
			return nil
		}
		n.Status = status
		n.StatusUpdatedAt = at
		n.ModifyIndex = w.index
		w.touch(storage.TableNodes)
		out = n
		return putJSON(b, []byte(n.ID), n)
	})
	return out, err
}

// Node implements storage.Store.
func (s *Store) Node(ctx context.Context, id string) (*structs.Node, error) {
	var out *structs.Node
	err := s.read(ctx, func(tx *bolt.Tx) error {
		n, err := getRequired[structs.Node](tx.Bucket(bNodes), []byte(id), func() error { return storage.NotFoundf("node %q", id) })
		if err != nil {
			return err
		}
		out = n
		return nil
	})
	return out, err
}

// Nodes implements storage.Store.
func (s *Store) Nodes(ctx context.Context, prefix string) ([]*structs.Node, error) {
	var out []*structs.Node
	err := s.read(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bNodes).Cursor()
		p := []byte(prefix)
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			n, err := decodeInto[structs.Node](v)
			if err != nil {
				return err
			}
			out = append(out, n)
		}
		return nil
	})
	return out, err
}

// NodeAssignmentIndex implements storage.Store.
func (s *Store) NodeAssignmentIndex(ctx context.Context, nodeID string) (uint64, error) {
	var idx uint64
	err := s.read(ctx, func(tx *bolt.Tx) error {
		idx = getUint(tx.Bucket(bNodeAssignment).Get([]byte(nodeID)))
		return nil
	})
	return idx, err
}

// UpdateNodeDrain implements storage.Store.
func (s *Store) UpdateNodeDrain(ctx context.Context, nodeID string, strategy *structs.DrainStrategy, markEligible bool, evals ...*structs.Evaluation) (*structs.Node, error) {
	var out *structs.Node
	_, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bNodes)
		n, err := getRequired[structs.Node](b, []byte(nodeID), func() error { return storage.NotFoundf("node %q", nodeID) })
		if err != nil {
			return err
		}
		if strategy != nil {
			d := *strategy
			n.Drain = true
			n.DrainStrategy = &d
			n.SchedulingEligibility = structs.NodeSchedulingIneligible
		} else {
			n.Drain = false
			n.DrainStrategy = nil
			if markEligible {
				n.SchedulingEligibility = structs.NodeSchedulingEligible
			}
		}
		n.ModifyIndex = w.index
		w.touch(storage.TableNodes)
		out = n
		if err := putJSON(b, []byte(n.ID), n); err != nil {
			return err
		}
		for _, e := range evals {
			if err := w.upsertEval(e.Copy()); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// UpdateNodeEligibility implements storage.Store.
func (s *Store) UpdateNodeEligibility(ctx context.Context, nodeID, eligibility string) (*structs.Node, error) {
	var out *structs.Node
	_, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bNodes)
		n, err := getRequired[structs.Node](b, []byte(nodeID), func() error { return storage.NotFoundf("node %q", nodeID) })
		if err != nil {
			return err
		}
		out = n
		if n.SchedulingEligibility == eligibility {
			return nil
		}
		n.SchedulingEligibility = eligibility
		n.ModifyIndex = w.index
		w.touch(storage.TableNodes)
		return putJSON(b, []byte(n.ID), n)
	})
	return out, err
}
