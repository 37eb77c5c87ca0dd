package dynamodb

import (
	"context"
	"sort"
	"strings"

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
