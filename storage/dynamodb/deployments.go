package dynamodb

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// decodeDeployment reads a deployment item: the blob plus the counters
// kept as separate attributes (pl_<group>, hl_<group>, ul_<group>).
func decodeDeployment(it item) (*structs.Deployment, error) {
	d, err := decode[structs.Deployment](getB(it, "v"))
	if err != nil {
		return nil, err
	}
	for k := range it {
		var field *int
		if len(k) < 4 || k[2] != '_' {
			continue
		}
		g, ok := d.TaskGroups[k[3:]]
		if !ok {
			continue
		}
		switch k[:3] {
		case "pl_":
			field = &g.PlacedAllocs
		case "hl_":
			field = &g.HealthyAllocs
		case "ul_":
			field = &g.UnhealthyAllocs
		default:
			continue
		}
		*field = int(getN(it, k))
	}
	d.ModifyIndex = getU(it, "mi")
	if ci := getU(it, "ci"); ci != 0 {
		d.CreateIndex = ci
	}
	return d, nil
}

// Deployment implements storage.Store.
func (s *Store) Deployment(ctx context.Context, id string) (*structs.Deployment, error) {
	ptr, err := s.get(ctx, deployPtrPK(id), skDeployPtr, true)
	if err != nil {
		return nil, err
	}
	if ptr == nil {
		return nil, storage.NotFoundf("deployment %q", id)
	}
	it, err := s.get(ctx, jobPK(getS(ptr, "ns"), getS(ptr, "jid")), deploySK(id), true)
	if err != nil {
		return nil, err
	}
	if it == nil || !has(it, "v") {
		return nil, storage.NotFoundf("deployment %q", id)
	}
	return decodeDeployment(it)
}

func (s *Store) deploymentsOf(ctx context.Context, ns, jobID string) ([]*structs.Deployment, error) {
	items, err := s.queryPrefix(ctx, jobPK(ns, jobID), "DEPLOY#", true)
	if err != nil {
		return nil, err
	}
	out := make([]*structs.Deployment, 0, len(items))
	for _, it := range items {
		if !has(it, "v") {
			continue
		}
		d, err := decodeDeployment(it)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreateIndex != out[j].CreateIndex {
			return out[i].CreateIndex > out[j].CreateIndex
		}
		return strings.Compare(out[i].ID, out[j].ID) > 0
	})
	return out, nil
}

// LatestDeployment implements storage.Store.
func (s *Store) LatestDeployment(ctx context.Context, ns, jobID string) (*structs.Deployment, error) {
	ds, err := s.deploymentsOf(ctx, ns, jobID)
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, storage.NotFoundf("deployment of job %q in namespace %q", jobID, ns)
	}
	return ds[0], nil
}

// DeploymentsByJob implements storage.Store.
func (s *Store) DeploymentsByJob(ctx context.Context, ns, jobID string) ([]*structs.Deployment, error) {
	return s.deploymentsOf(ctx, ns, jobID)
}

// readDeploymentByID resolves a deployment through its pointer.
func (s *Store) readDeploymentByID(ctx context.Context, id string) (*readDeployment, error) {
	ptr, err := s.get(ctx, deployPtrPK(id), skDeployPtr, true)
	if err != nil {
		return nil, err
	}
	if ptr == nil {
		return nil, storage.NotFoundf("deployment %q", id)
	}
	it, err := s.get(ctx, jobPK(getS(ptr, "ns"), getS(ptr, "jid")), deploySK(id), true)
	if err != nil {
		return nil, err
	}
	if it == nil || !has(it, "v") {
		return nil, storage.NotFoundf("deployment %q", id)
	}
	d, err := decodeDeployment(it)
	if err != nil {
		return nil, err
	}
	return &readDeployment{d: d, prevMI: getU(it, "mi")}, nil
}

// stableAction marks a job version stable (a top-level attribute over the
// version's blob).
func (s *Store) stableAction(ns, job string, version uint64) action {
	return s.update(key(jobPK(ns, job), versionSK(version)), "SET stable = :t", "attribute_exists(PK)", nil,
		item{":t": avBool(true)}, fmt.Sprintf("job %s/%s version %d does not exist", ns, job, version))
}

// writeDeployment writes a changed deployment (and evals) guarded by its
// modify index.
func (s *Store) writeDeployment(ctx context.Context, rd *readDeployment, extra []action, evals []*structs.Evaluation) (uint64, error) {
	idx := s.nextIndex()
	d := rd.d
	d.ModifyIndex, d.ModifyTime = idx, time.Now().UnixNano()
	u := newUnit()
	dd := u.deploy(d.Namespace, d.JobID, d.ID)
	dd.blob, dd.active, dd.mi, dd.ci, dd.prevMI = encode(stripCounters(d)), d.Active(), idx, d.CreateIndex, rd.prevMI
	u.acts = append(u.acts, extra...)
	if err := s.addEvals(ctx, u, idx, evals); err != nil {
		return 0, err
	}
	for _, c := range pack([]*unit{u}, s.cfg.ChunkActions) {
		if err := s.transact(ctx, s.render(c)); err != nil {
			return 0, raceOnConflict(err)
		}
	}
	return idx, s.bumpTables(ctx, idx, storage.TableDeployments, storage.TableEvals, storage.TableJobs)
}

// UpdateDeploymentStatus implements storage.Store.
func (s *Store) UpdateDeploymentStatus(ctx context.Context, up *structs.DeploymentStatusUpdate, evals ...*structs.Evaluation) (uint64, error) {
	idx, err := withConflictRetry(ctx, s, func() (uint64, error) {
		rd, err := s.readDeploymentByID(ctx, up.DeploymentID)
		if err != nil {
			return 0, err
		}
		rd.d.Status, rd.d.StatusDescription = up.Status, up.StatusDescription
		var extra []action
		if up.Status == structs.DeploymentStatusSuccessful {
			extra = append(extra, s.stableAction(rd.d.Namespace, rd.d.JobID, rd.d.JobVersion))
		}
		return s.writeDeployment(ctx, rd, extra, evals)
	})
	if err != nil {
		return 0, fmt.Errorf("update status of deployment %s: %w", up.DeploymentID, err)
	}
	return idx, nil
}

// PromoteDeployment implements storage.Store.
func (s *Store) PromoteDeployment(ctx context.Context, id string, groups []string, evals ...*structs.Evaluation) (uint64, error) {
	idx, err := withConflictRetry(ctx, s, func() (uint64, error) {
		rd, err := s.readDeploymentByID(ctx, id)
		if err != nil {
			return 0, err
		}
		want := map[string]bool{}
		for _, g := range groups {
			want[g] = true
		}
		for name, g := range rd.d.TaskGroups {
			if g.DesiredCanaries > 0 && (len(groups) == 0 || want[name]) {
				g.Promoted = true
			}
		}
		if rd.d.Status == structs.DeploymentStatusRunning {
			rd.d.StatusDescription = structs.DeploymentStatusDescriptionRunning
		}
		return s.writeDeployment(ctx, rd, nil, evals)
	})
	if err != nil {
		return 0, fmt.Errorf("promote deployment %s: %w", id, err)
	}
	return idx, nil
}

// Deployments implements storage.Store (gsi1, then strongly consistent
// reads).
func (s *Store) Deployments(ctx context.Context, ns, prefix string) ([]*structs.Deployment, error) {
	var keys []item
	for _, shard := range shardsFor(prefix) {
		ks, err := s.queryIndex(ctx, GSI1, "g1pk", "g1sk", "DEPLOY#"+shard, prefix)
		if err != nil {
			return nil, err
		}
		keys = append(keys, ks...)
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	var out []*structs.Deployment
	for _, it := range items {
		if !has(it, "v") {
			continue
		}
		d, err := decodeDeployment(it)
		if err != nil {
			return nil, err
		}
		if ns != "" && ns != "*" && d.Namespace != ns {
			continue
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreateIndex != out[j].CreateIndex {
			return out[i].CreateIndex > out[j].CreateIndex
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// readDeployment is a deployment as read, with the modify index that
// guards writing it back.
type readDeployment struct {
	d      *structs.Deployment
	prevMI uint64
}

// stripCounters returns a copy of d without the counters (they live in
// their own attributes).
func stripCounters(d *structs.Deployment) *structs.Deployment {
	c := d.Copy()
	for _, g := range c.TaskGroups {
		g.PlacedAllocs, g.HealthyAllocs, g.UnhealthyAllocs = 0, 0, 0
	}
	return c
}

// activeDeploymentsPK is gsi2's partition of the deployments not yet
// terminal: every write of a deployment's value sets or removes its entry.
const activeDeploymentsPK = "DEPLOYS#active"

// ActiveDeployments implements storage.Store: gsi2's sparse listing of the
// active deployments (membership, eventually consistent), then their items
// strongly consistent, kept to those still active. Its cost grows with
// the active deployments only: the deployment watcher runs it every
// minute on AWS.
func (s *Store) ActiveDeployments(ctx context.Context) ([]*structs.Deployment, error) {
	keys, err := s.queryIndex(ctx, GSI2, "g2pk", "g2sk", activeDeploymentsPK, "")
	if err != nil {
		return nil, fmt.Errorf("list active deployments: %w", err)
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("read active deployments: %w", err)
	}
	var out []*structs.Deployment
	for _, it := range items {
		if !has(it, "v") {
			continue
		}
		d, err := decodeDeployment(it)
		if err != nil {
			return nil, err
		}
		if d.Active() {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreateIndex != out[j].CreateIndex {
			return out[i].CreateIndex > out[j].CreateIndex
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}
