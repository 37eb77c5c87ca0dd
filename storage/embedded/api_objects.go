package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// The objects of Nomad's API that are not part of the scheduling flow:
// job sources, node events, namespaces and the scheduler configuration.

var keySchedulerConfig = []byte("scheduler")

// JobSubmission implements storage.Store.
func (s *Store) JobSubmission(ctx context.Context, ns, jobID string, version uint64) (*structs.JobSubmission, error) {
	var out *structs.JobSubmission
	err := s.read(ctx, func(tx *bolt.Tx) error {
		sub, err := getRequired[structs.JobSubmission](tx.Bucket(bSubmissions), versionKey(ns, jobID, version), func() error {
			return storage.NotFoundf("job %q version %d in namespace %q has no submission", jobID, version, ns)
		})
		out = sub
		return err
	})
	return out, err
}

// AppendNodeEvents implements storage.Store.
func (s *Store) AppendNodeEvents(ctx context.Context, nodeID string, events ...*structs.NodeEvent) (*structs.Node, error) {
	var out *structs.Node
	_, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bNodes)
		n, err := getRequired[structs.Node](b, []byte(nodeID), func() error { return storage.NotFoundf("node %q", nodeID) })
		if err != nil {
			return err
		}
		n.AppendEvents(w.index, events...)
		n.ModifyIndex = w.index
		w.touch(storage.TableNodes)
		out = n
		return putJSON(b, []byte(n.ID), n)
	})
	if err != nil {
		return nil, fmt.Errorf("append events of node %s: %w", nodeID, err)
	}
	return out, nil
}

// UpsertNamespace implements storage.Store.
func (s *Store) UpsertNamespace(ctx context.Context, ns *structs.Namespace) (*structs.Namespace, error) {
	var out *structs.Namespace
	_, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bNamespaces)
		n := ns.Copy()
		existing, err := getJSON[structs.Namespace](b, []byte(n.Name))
		if err != nil {
			return err
		}
		n.CreateIndex = w.index
		if existing != nil {
			n.CreateIndex = existing.CreateIndex
		}
		n.ModifyIndex = w.index
		w.touch(storage.TableNamespaces)
		out = n
		return putJSON(b, []byte(n.Name), n)
	})
	if err != nil {
		return nil, fmt.Errorf("upsert namespace %s: %w", ns.Name, err)
	}
	return out, nil
}

// Namespace implements storage.Store.
func (s *Store) Namespace(ctx context.Context, name string) (*structs.Namespace, error) {
	var out *structs.Namespace
	err := s.read(ctx, func(tx *bolt.Tx) error {
		n, err := getRequired[structs.Namespace](tx.Bucket(bNamespaces), []byte(name), func() error { return storage.NotFoundf("namespace %q", name) })
		out = n
		return err
	})
	return out, err
}

// Namespaces implements storage.Store.
func (s *Store) Namespaces(ctx context.Context) ([]*structs.Namespace, error) {
	var out []*structs.Namespace
	err := s.read(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bNamespaces).ForEach(func(_, v []byte) error {
			n := new(structs.Namespace)
			if err := json.Unmarshal(v, n); err != nil {
				return fmt.Errorf("decode namespace: %w", err)
			}
			out = append(out, n)
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// DeleteNamespace implements storage.Store.
func (s *Store) DeleteNamespace(ctx context.Context, name string) error {
	_, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bNamespaces)
		if b.Get([]byte(name)) == nil {
			return storage.NotFoundf("namespace %q", name)
		}
		w.touch(storage.TableNamespaces)
		return b.Delete([]byte(name))
	})
	return err
}

// SchedulerConfig implements storage.Store.
func (s *Store) SchedulerConfig(ctx context.Context) (*structs.SchedulerConfiguration, error) {
	var out *structs.SchedulerConfiguration
	err := s.read(ctx, func(tx *bolt.Tx) error {
		c, err := getJSON[structs.SchedulerConfiguration](tx.Bucket(bConfig), keySchedulerConfig)
		out = c
		return err
	})
	if err == nil && out == nil {
		out = structs.DefaultSchedulerConfiguration()
	}
	return out, err
}

// SetSchedulerConfig implements storage.Store.
func (s *Store) SetSchedulerConfig(ctx context.Context, cfg *structs.SchedulerConfiguration, cas *uint64) (bool, uint64, error) {
	written := false
	idx, err := s.write(ctx, func(w *wtx) error {
		b := w.tx.Bucket(bConfig)
		existing, err := getJSON[structs.SchedulerConfiguration](b, keySchedulerConfig)
		if err != nil {
			return err
		}
		var cur uint64
		c := *cfg
		c.CreateIndex = w.index
		if existing != nil {
			cur, c.CreateIndex = existing.ModifyIndex, existing.CreateIndex
		}
		if cas != nil && *cas != cur {
			return nil
		}
		c.ModifyIndex = w.index
		w.touch(storage.TableSchedulerConfig)
		written = true
		return putJSON(b, keySchedulerConfig, &c)
	})
	if err != nil {
		return false, 0, fmt.Errorf("set scheduler configuration: %w", err)
	}
	return written, idx, nil
}
