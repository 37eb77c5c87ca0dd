package embedded

import (
	"context"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

func (w *wtx) upsertDeployment(d *structs.Deployment) error {
	b := w.tx.Bucket(bDeployments)
	existing, err := getJSON[structs.Deployment](b, []byte(d.ID))
	if err != nil {
		return err
	}
	now := time.Now().UnixNano()
	if existing != nil {
		d.CreateIndex = existing.CreateIndex
		d.CreateTime = existing.CreateTime
	} else {
		d.CreateIndex = w.index
		if d.CreateTime == 0 {
			d.CreateTime = now
		}
		if err := w.tx.Bucket(bDeploysByJob).Put(key(d.Namespace, d.JobID, d.ID), nil); err != nil {
			return err
		}
	}
	d.ModifyIndex = w.index
	d.ModifyTime = now
	w.touch(storage.TableDeployments)
	return putJSON(b, []byte(d.ID), d)
}

func (w *wtx) updateDeploymentStatus(u *structs.DeploymentStatusUpdate) error {
	b := w.tx.Bucket(bDeployments)
	d, err := getJSON[structs.Deployment](b, []byte(u.DeploymentID))
	if err != nil {
		return err
	}
	if d == nil {
		return storage.Conflictf("status update of deployment %s: deployment does not exist", u.DeploymentID)
	}
	d.Status = u.Status
	d.StatusDescription = u.StatusDescription
	return w.upsertDeployment(d)
}

// Deployment implements storage.Store.
func (s *Store) Deployment(ctx context.Context, id string) (*structs.Deployment, error) {
	var out *structs.Deployment
	err := s.read(ctx, func(tx *bolt.Tx) error {
		d, err := getJSON[structs.Deployment](tx.Bucket(bDeployments), []byte(id))
		if err != nil {
			return err
		}
		if d == nil {
			return storage.NotFoundf("deployment %q", id)
		}
		out = d
		return nil
	})
	return out, err
}

// LatestDeployment implements storage.Store.
func (s *Store) LatestDeployment(ctx context.Context, ns, jobID string) (*structs.Deployment, error) {
	var out *structs.Deployment
	err := s.read(ctx, func(tx *bolt.Tx) error {
		d, err := latestDeployment(tx, ns, jobID)
		if err != nil {
			return err
		}
		if d == nil {
			return storage.NotFoundf("deployment of job %q in namespace %q", jobID, ns)
		}
		out = d
		return nil
	})
	return out, err
}

// DeploymentsByJob implements storage.Store.
func (s *Store) DeploymentsByJob(ctx context.Context, ns, jobID string) ([]*structs.Deployment, error) {
	var out []*structs.Deployment
	err := s.read(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bDeployments)
		return scanIndex(tx.Bucket(bDeploysByJob), prefixKey(ns, jobID), func(id string) error {
			d, err := getJSON[structs.Deployment](b, []byte(id))
			if err != nil || d == nil {
				return err
			}
			out = append(out, d)
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreateIndex != out[j].CreateIndex {
			return out[i].CreateIndex > out[j].CreateIndex
		}
		return out[i].ID > out[j].ID
	})
	return out, err
}
