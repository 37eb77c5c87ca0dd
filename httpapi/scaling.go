package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Scaling policies are the groups' scaling blocks, served from the jobs
// that hold them (structs.Job.ScalingPolicies): nothing is stored apart.

// listScalingPolicies answers GET /v1/scaling/policies: Nomad's
// ScalingPolicyListStubs of the namespace (?namespace=, "*" for all),
// only the job's with ?job=, only the types starting with ?type=, sorted
// by ID.
func (s *Server) listScalingPolicies(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	jobID, typ := q.Get("job"), q.Get("type")
	s.query(w, r, []string{storage.TableJobs}, func(ctx context.Context) (any, error) {
		jobs, err := s.cfg.State.Jobs(ctx, namespaceOf(r), "")
		if err != nil {
			return nil, err
		}
		out := []*structs.ScalingPolicyListStub{}
		for _, j := range jobs {
			if jobID != "" && j.ID != jobID {
				continue
			}
			for _, p := range j.ScalingPolicies() {
				if strings.HasPrefix(p.Type, typ) {
					out = append(out, p.Stub())
				}
			}
		}
		sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
		return out, nil
	})
}

// getScalingPolicy answers GET /v1/scaling/policy/:id: Nomad's
// ScalingPolicy, found in any namespace (policy IDs are global, as in
// Nomad); 404 "policy not found" when no job holds it.
func (s *Server) getScalingPolicy(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.query(w, r, []string{storage.TableJobs}, func(ctx context.Context) (any, error) {
		jobs, err := s.cfg.State.Jobs(ctx, "*", "")
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			for _, p := range j.ScalingPolicies() {
				if p.ID == id {
					return p, nil
				}
			}
		}
		return nil, fmt.Errorf("policy not found: %w", storage.ErrNotFound)
	})
}
