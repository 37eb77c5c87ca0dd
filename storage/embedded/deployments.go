package embedded

import (
	"context"
	"sort"
	"strings"
	"sync"
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
	if err := indexActive(w.tx, d); err != nil {
		return err
	}
	return putJSON(b, []byte(d.ID), d)
}

// indexActive keeps d's entry in deployments_active (value: its
// ModifyIndex) in step with its status.
func indexActive(tx *bolt.Tx, d *structs.Deployment) error {
	if d.Active() {
		return tx.Bucket(bDeploysActive).Put([]byte(d.ID), putUint(d.ModifyIndex))
	}
	return tx.Bucket(bDeploysActive).Delete([]byte(d.ID))
}

// buildActiveDeploymentIndex fills deployments_active: once, when a state
// file written before it existed is opened.
func buildActiveDeploymentIndex(tx *bolt.Tx) error {
	c := tx.Bucket(bDeployments).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		d, err := decodeInto[structs.Deployment](v)
		if err != nil {
			return err
		}
		if err := indexActive(tx, d); err != nil {
			return err
		}
	}
	return tx.Bucket(bMeta).Put(keyActiveBuilt, putUint(1))
}

// activeCache keeps the active deployments decoded, each with the
// ModifyIndex it was decoded at: the watcher lists them every tick, and
// only the ones that changed since are decoded again.
type activeCache struct {
	mu sync.Mutex
	m  map[string]cachedDeployment
}

type cachedDeployment struct {
	modifyIndex uint64
	d           *structs.Deployment
}

// ActiveDeployments implements storage.Store through deployments_active
// and the active cache; it returns copies.
func (s *Store) ActiveDeployments(ctx context.Context) ([]*structs.Deployment, error) {
	var out []*structs.Deployment
	c := &s.activeCache
	err := s.read(ctx, func(tx *bolt.Tx) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		next := make(map[string]cachedDeployment, len(c.m))
		b := tx.Bucket(bDeployments)
		cur := tx.Bucket(bDeploysActive).Cursor()
		for k, v := cur.First(); k != nil; k, v = cur.Next() {
			mi := getUint(v)
			cd, ok := c.m[string(k)]
			if !ok || mi == 0 || cd.modifyIndex != mi {
				d, err := getJSON[structs.Deployment](b, k)
				if err != nil {
					return err
				}
				if d == nil {
					continue
				}
				cd = cachedDeployment{modifyIndex: d.ModifyIndex, d: d}
			}
			next[string(k)] = cd
			if cd.d.Active() {
				out = append(out, cd.d.Copy())
			}
		}
		c.m = next
		return nil
	})
	sortNewestFirst(out)
	return out, err
}

func sortNewestFirst(ds []*structs.Deployment) {
	sort.Slice(ds, func(i, j int) bool {
		if ds[i].CreateIndex != ds[j].CreateIndex {
			return ds[i].CreateIndex > ds[j].CreateIndex
		}
		return ds[i].ID > ds[j].ID
	})
}

// upsertPlanDeployment writes a plan's deployment. Over an existing one it
// keeps what the store counts and what may have changed since the plan's
// snapshot (placed, healthy and unhealthy allocs, promotion, canaries
// already placed), and takes the rest from the plan.
func (w *wtx) upsertPlanDeployment(d *structs.Deployment) error {
	stored, err := getJSON[structs.Deployment](w.tx.Bucket(bDeployments), []byte(d.ID))
	if err != nil {
		return err
	}
	storage.MergePlanDeployment(stored, d)
	return w.upsertDeployment(d)
}

// countDeploymentAlloc keeps a deployment's per-group counters in step
// with its allocs, as Nomad's state store does: a newly placed alloc of
// the deployment, or one updated in place into it, counts as placed, and a
// health decided for the first time
// (prev had none) counts as healthy or unhealthy. When the alloc turns
// healthy, the group's progress deadline moves forward.
func (w *wtx) countDeploymentAlloc(a *structs.Allocation, placed bool, prev *structs.AllocDeploymentStatus) error {
	return w.countDeploymentAllocs([]deploymentCount{{a: a, placed: placed, prev: prev}})
}

// deploymentCount is one alloc countDeploymentAllocs counts.
type deploymentCount struct {
	a      *structs.Allocation
	placed bool
	prev   *structs.AllocDeploymentStatus
}

// countDeploymentAllocs counts many allocs (a plan's placements) as
// countDeploymentAlloc does one, reading and writing each deployment once.
func (w *wtx) countDeploymentAllocs(counts []deploymentCount) error {
	byDeployment := map[string][]deploymentCount{}
	var order []string
	for _, c := range counts {
		id := c.a.DeploymentID
		if id == "" {
			continue
		}
		if _, ok := byDeployment[id]; !ok {
			order = append(order, id)
		}
		byDeployment[id] = append(byDeployment[id], c)
	}
	b := w.tx.Bucket(bDeployments)
	for _, id := range order {
		d, err := getJSON[structs.Deployment](b, []byte(id))
		if err != nil {
			return err
		}
		if d == nil {
			continue
		}
		changed := false
		for _, c := range byDeployment[id] {
			if countOne(d, c) {
				changed = true
			}
		}
		if changed {
			if err := w.upsertDeployment(d); err != nil {
				return err
			}
		}
	}
	return nil
}

// countOne applies one alloc's count to its deployment d and reports
// whether d changed.
func countOne(d *structs.Deployment, c deploymentCount) bool {
	g, ok := d.TaskGroups[c.a.TaskGroup]
	if !ok {
		return false
	}
	changed := false
	if c.placed {
		g.PlacedAllocs++
		if g.RequireProgressBy.IsZero() && g.ProgressDeadline > 0 {
			g.RequireProgressBy = time.Now().UTC().Add(g.ProgressDeadline)
		}
		changed = true
	}
	if !c.prev.HasHealth() && c.a.DeploymentStatus.HasHealth() {
		if c.a.DeploymentStatus.IsHealthy() {
			g.HealthyAllocs++
			if g.ProgressDeadline > 0 {
				g.RequireProgressBy = c.a.DeploymentStatus.Timestamp.Add(g.ProgressDeadline)
			}
		} else {
			g.UnhealthyAllocs++
		}
		changed = true
	}
	return changed
}

func (w *wtx) updateDeploymentStatus(u *structs.DeploymentStatusUpdate) error {
	b := w.tx.Bucket(bDeployments)
	d, err := getRequired[structs.Deployment](b, []byte(u.DeploymentID), func() error { return storage.NotFoundf("deployment %q", u.DeploymentID) })
	if err != nil {
		return err
	}
	d.Status = u.Status
	d.StatusDescription = u.StatusDescription
	if u.Status == structs.DeploymentStatusSuccessful {
		if err := w.markJobVersionStable(d.Namespace, d.JobID, d.JobVersion); err != nil {
			return err
		}
	}
	return w.upsertDeployment(d)
}

// Deployment implements storage.Store.
func (s *Store) Deployment(ctx context.Context, id string) (*structs.Deployment, error) {
	var out *structs.Deployment
	err := s.read(ctx, func(tx *bolt.Tx) error {
		d, err := getRequired[structs.Deployment](tx.Bucket(bDeployments), []byte(id), func() error { return storage.NotFoundf("deployment %q", id) })
		if err != nil {
			return err
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

// Deployments implements storage.Store.
func (s *Store) Deployments(ctx context.Context, ns, prefix string) ([]*structs.Deployment, error) {
	var out []*structs.Deployment
	err := s.read(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bDeployments).Cursor()
		p := []byte(prefix)
		for k, v := c.Seek(p); k != nil && strings.HasPrefix(string(k), prefix); k, v = c.Next() {
			d, err := decodeInto[structs.Deployment](v)
			if err != nil {
				return err
			}
			if ns != "" && ns != "*" && d.Namespace != ns {
				continue
			}
			out = append(out, d)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreateIndex != out[j].CreateIndex {
			return out[i].CreateIndex > out[j].CreateIndex
		}
		return out[i].ID > out[j].ID
	})
	return out, err
}

// UpdateDeploymentStatus implements storage.Store.
func (s *Store) UpdateDeploymentStatus(ctx context.Context, u *structs.DeploymentStatusUpdate, evals ...*structs.Evaluation) (uint64, error) {
	return s.write(ctx, func(w *wtx) error {
		if err := w.updateDeploymentStatus(u); err != nil {
			return err
		}
		for _, e := range evals {
			if err := w.upsertEval(e.Copy()); err != nil {
				return err
			}
		}
		return nil
	})
}

// PromoteDeployment implements storage.Store.
func (s *Store) PromoteDeployment(ctx context.Context, id string, groups []string, evals ...*structs.Evaluation) (uint64, error) {
	return s.write(ctx, func(w *wtx) error {
		d, err := getRequired[structs.Deployment](w.tx.Bucket(bDeployments), []byte(id), func() error { return storage.NotFoundf("deployment %q", id) })
		if err != nil {
			return err
		}
		want := map[string]bool{}
		for _, g := range groups {
			want[g] = true
		}
		for name, g := range d.TaskGroups {
			if g.DesiredCanaries > 0 && (len(groups) == 0 || want[name]) {
				g.Promoted = true
			}
		}
		if d.Status == structs.DeploymentStatusRunning {
			d.StatusDescription = structs.DeploymentStatusDescriptionRunning
		}
		if err := w.upsertDeployment(d); err != nil {
			return err
		}
		for _, e := range evals {
			if err := w.upsertEval(e.Copy()); err != nil {
				return err
			}
		}
		return nil
	})
}

// markJobVersionStable records that a version of a job deployed
// successfully (the current job's head too, when it is that version).
func (w *wtx) markJobVersionStable(ns, jobID string, version uint64) error {
	vb := w.tx.Bucket(bJobVersions)
	v, err := getJSON[structs.Job](vb, versionKey(ns, jobID, version))
	if err != nil || v == nil {
		return err
	}
	if !v.Stable {
		v.Stable = true
		if err := putJSON(vb, versionKey(ns, jobID, version), v); err != nil {
			return err
		}
	}
	jb := w.tx.Bucket(bJobs)
	head, err := getJSON[structs.Job](jb, key(ns, jobID))
	if err != nil || head == nil || head.Version != version || head.Stable {
		return err
	}
	head.Stable = true
	head.ModifyIndex = w.index
	w.touch(storage.TableJobs)
	return putJSON(jb, key(ns, jobID), head)
}
