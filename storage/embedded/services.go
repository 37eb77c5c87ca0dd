package embedded

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Service registrations (Nomad's native service discovery). The write that
// makes an alloc terminal or unknown removes its registrations
// (saveAllocData), as does garbage collection of the alloc and a node
// going down, each in its own transaction: a registration exists only
// while its alloc is live.

func serviceKey(r *structs.ServiceRegistration) []byte {
	return key(r.Namespace, r.ServiceName, r.ID)
}

// UpsertServiceRegistrations implements storage.Store.
func (s *Store) UpsertServiceRegistrations(ctx context.Context, nodeID string, regs []*structs.ServiceRegistration) (uint64, error) {
	idx, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bServices)
		for _, in := range regs {
			a, err := getAlloc(w.tx, in.AllocID)
			if err != nil {
				return err
			}
			if a == nil || !structs.ServiceRegistrationLive(a) {
				continue
			}
			if a.NodeID != nodeID || in.NodeID != nodeID {
				return fmt.Errorf("registration %s: alloc %s is on node %s, not %s: %w", in.ID, a.ID, a.NodeID, nodeID, storage.ErrWrongNode)
			}
			r := in.Copy()
			r.Namespace, r.JobID = a.Namespace, a.JobID
			k := serviceKey(r)
			old, err := getJSON[structs.ServiceRegistration](b, k)
			if err != nil {
				return err
			}
			if old != nil && old.SameInstance(r) {
				continue
			}
			r.CreateIndex, r.ModifyIndex = w.index, w.index
			if old != nil {
				r.CreateIndex = old.CreateIndex
			}
			if err := putJSON(b, k, r); err != nil {
				return err
			}
			if err := w.tx.Bucket(bServicesByAlloc).Put(key(r.AllocID, r.ID), k); err != nil {
				return err
			}
			if err := w.tx.Bucket(bServicesByNode).Put(key(r.NodeID, r.ID), k); err != nil {
				return err
			}
			w.touch(storage.TableServiceRegistrations)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("upsert service registrations of node %s: %w", nodeID, err)
	}
	return idx, nil
}

// DeleteServiceRegistrations implements storage.Store.
func (s *Store) DeleteServiceRegistrations(ctx context.Context, nodeID string, ids []string) (uint64, error) {
	idx, err := s.write(ctx, func(w *wtx) error {
		for _, id := range ids {
			k := w.tx.Bucket(bServicesByNode).Get(key(nodeID, id))
			if k == nil {
				continue // gone already, or another node's
			}
			if err := w.deleteService(bytes.Clone(k)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete service registrations of node %s: %w", nodeID, err)
	}
	return idx, nil
}

// DeleteServiceRegistration implements storage.Store.
func (s *Store) DeleteServiceRegistration(ctx context.Context, ns, name, id string) (uint64, error) {
	idx, err := s.write(ctx, func(w *wtx) error {
		k := key(ns, name, id)
		if w.tx.Bucket(bServices).Get(k) == nil {
			return storage.NotFoundf("service registration %q of service %q in namespace %q", id, name, ns)
		}
		return w.deleteService(k)
	})
	if err != nil {
		return 0, fmt.Errorf("delete service registration %s: %w", id, err)
	}
	return idx, nil
}

// deleteService removes the registration stored at k and its index keys.
func (w *wtx) deleteService(k []byte) error {
	b := w.tx.Bucket(bServices)
	r, err := getJSON[structs.ServiceRegistration](b, k)
	if err != nil || r == nil {
		return err
	}
	for _, del := range []struct{ b, k []byte }{
		{bServices, k},
		{bServicesByAlloc, key(r.AllocID, r.ID)},
		{bServicesByNode, key(r.NodeID, r.ID)},
	} {
		if err := w.tx.Bucket(del.b).Delete(del.k); err != nil {
			return err
		}
	}
	w.touch(storage.TableServiceRegistrations)
	return nil
}

// deleteAllocServices removes every registration of an alloc.
func (w *wtx) deleteAllocServices(allocID string) error {
	return w.deleteIndexed(bServicesByAlloc, allocID)
}

// deleteNodeServices removes every registration of a node's allocs.
func (w *wtx) deleteNodeServices(nodeID string) error {
	return w.deleteIndexed(bServicesByNode, nodeID)
}

func (w *wtx) deleteIndexed(index []byte, owner string) error {
	prefix := prefixKey(owner)
	var keys [][]byte
	c := w.tx.Bucket(index).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		keys = append(keys, bytes.Clone(v))
	}
	for _, k := range keys {
		if err := w.deleteService(k); err != nil {
			return err
		}
	}
	return nil
}

// ServiceRegistrations implements storage.Store.
func (s *Store) ServiceRegistrations(ctx context.Context, ns string) ([]*structs.ServiceRegistration, error) {
	var prefix []byte
	if ns != "" && ns != "*" {
		prefix = prefixKey(ns)
	}
	return s.scanServices(ctx, prefix)
}

// ServiceRegistrationsByName implements storage.Store.
func (s *Store) ServiceRegistrationsByName(ctx context.Context, ns, name string) ([]*structs.ServiceRegistration, error) {
	return s.scanServices(ctx, prefixKey(ns, name))
}

func (s *Store) scanServices(ctx context.Context, prefix []byte) ([]*structs.ServiceRegistration, error) {
	out := []*structs.ServiceRegistration{}
	err := s.read(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bServices).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			r, err := decodeInto[structs.ServiceRegistration](v)
			if err != nil {
				return fmt.Errorf("service registration %q: %w", k, err)
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list service registrations: %w", err)
	}
	return out, nil
}
