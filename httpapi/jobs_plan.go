package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/jobspec"
	"github.com/drover-sched/drover/structs"
)

// JobPlanner answers job plans (controlplane.Service).
type JobPlanner interface {
	PlanJob(ctx context.Context, req *controlplane.PlanRequest) (*controlplane.PlanResponse, error)
}

// JobPlanResponse is Nomad's answer to PUT /v1/job/:id/plan.
type JobPlanResponse struct {
	// JobModifyIndex is the current job's, for `job run -check-index`.
	JobModifyIndex uint64
	// CreatedEvals is always empty: a plan writes nothing.
	CreatedEvals []*structs.Evaluation
	Diff         *structs.JobDiff
	Annotations  *structs.PlanAnnotations
	// FailedTGAllocs are the placements that would fail, per group.
	FailedTGAllocs map[string]*structs.AllocMetric
	// NextPeriodicLaunch is when a periodic job, registered now, would
	// launch its next child (zero for other jobs), as Nomad.
	NextPeriodicLaunch time.Time
	Warnings           string
}

// planJob answers PUT /v1/job/:id/plan: Nomad's JobPlanRequest ({"Job":
// {...}, "Diff": true}) validated as a registration; the same reconcile
// and placement as an evaluation, nothing written.
func (s *Server) planJob(w http.ResponseWriter, r *http.Request) {
	body := http.MaxBytesReader(w, r.Body, MaxJobBody)
	req, err := jobspec.DecodePlanRequest(body, jobspec.DecodeOptions{
		Namespace: r.URL.Query().Get("namespace"), Region: r.URL.Query().Get("region"),
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.allowJobNamespace(r, req.Job.Namespace); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Job.ID != r.PathValue("id") {
		s.fail(w, r, badRequestf("Job.ID: %q does not match the job ID in the path %q", req.Job.ID, r.PathValue("id")))
		return
	}
	resp, err := s.cfg.Plans.PlanJob(r.Context(), &controlplane.PlanRequest{Job: req.Job, Diff: req.Diff, Warnings: req.Warnings})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	idx, _ := s.cfg.State.Index(r.Context(), "jobs")
	setMeta(w, idx)
	out := &JobPlanResponse{JobModifyIndex: resp.JobModifyIndex, CreatedEvals: []*structs.Evaluation{},
		Diff: resp.Diff, Annotations: resp.Annotations, FailedTGAllocs: resp.FailedTGAllocs, Warnings: resp.Warnings}
	if req.Job.IsPeriodicActive() {
		out.NextPeriodicLaunch, _ = req.Job.Periodic.Next(time.Now())
	}
	writeJSON(w, r, http.StatusOK, out)
}
