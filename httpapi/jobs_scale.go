package httpapi

import (
	"context"
	"net/http"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/storage"
)

// JobScaler changes a group's count (controlplane.Service).
type JobScaler interface {
	ScaleJob(ctx context.Context, req *controlplane.ScaleRequest) (*controlplane.RegisterResponse, error)
}

// ScalingRequest is Nomad's body of POST /v1/job/:id/scale.
type ScalingRequest struct {
	Count   *int64
	Target  map[string]string
	Message string
	Error   bool
	Meta    map[string]any
	// JobModifyIndex, when not 0, scales only if the job's is still this
	// (Nomad's -check-index).
	JobModifyIndex uint64
	PolicyOverride bool
	// WriteRequest's fields, as Nomad's client sends them.
	Region, Namespace, SecretID, IdempotencyToken string
}

// scaleJob answers POST|PUT /v1/job/:id/scale, as Nomad: Target names the
// group; a count change is a new job version and an evaluation carrying
// the scaling event; a JobModifyIndex that is no longer current is 409.
func (s *Server) scaleJob(w http.ResponseWriter, r *http.Request) {
	var req ScalingRequest
	if err := decodeStrictBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	for k := range req.Target {
		if k != "Group" && k != "Job" && k != "Namespace" {
			s.fail(w, r, badRequestf("Target: unknown key %q (Nomad's targets are Group, Job and Namespace)", k))
			return
		}
	}
	if j := req.Target["Job"]; j != "" && j != r.PathValue("id") {
		s.fail(w, r, badRequestf("Target.Job: %q does not match the job ID in the path %q", j, r.PathValue("id")))
		return
	}
	ns := namespaceOf(r)
	if req.Namespace != "" && r.URL.Query().Get("namespace") == "" {
		ns = req.Namespace
	}
	resp, err := s.cfg.Scaler.ScaleJob(r.Context(), &controlplane.ScaleRequest{
		Namespace: ns, JobID: r.PathValue("id"), Group: req.Target["Group"], Count: req.Count,
		EnforceIndex: req.JobModifyIndex != 0, JobModifyIndex: req.JobModifyIndex,
		Message: req.Message, Error: req.Error, Meta: req.Meta,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, resp.Index)
	writeJSON(w, r, http.StatusOK, &JobRegisterResponse{EvalID: resp.EvalID, EvalCreateIndex: resp.EvalCreateIndex,
		JobModifyIndex: resp.JobModifyIndex, Warnings: resp.Warnings, KnownLeader: true, LastIndex: resp.Index})
}

// jobScaleStatus answers GET /v1/job/:id/scale: Nomad's
// JobScaleStatusResponse.
func (s *Server) jobScaleStatus(w http.ResponseWriter, r *http.Request) {
	s.query(w, r, []string{storage.TableJobs, storage.TableAllocs, storage.TableEvals}, func(ctx context.Context) (any, error) {
		return controlplane.JobScaleStatus(ctx, s.cfg.State, namespaceOf(r), r.PathValue("id"))
	})
}
