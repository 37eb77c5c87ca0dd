package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/structs"
)

// Launcher launches the children of periodic and parameterized jobs
// (controlplane.Service).
type Launcher interface {
	ForcePeriodic(ctx context.Context, namespace, jobID string) (*controlplane.ForcePeriodicResponse, error)
	DispatchJob(ctx context.Context, req *controlplane.DispatchRequest) (*controlplane.DispatchResponse, error)
}

// PeriodicForceResponse is Nomad's answer to PUT
// /v1/job/:id/periodic/force.
type PeriodicForceResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	Index           uint64
	LastIndex       uint64
	RequestTime     int64
}

// JobDispatchRequest is Nomad's body of PUT /v1/job/:id/dispatch; Payload
// is base64 in JSON.
type JobDispatchRequest struct {
	JobID            string
	Payload          []byte
	Meta             map[string]string
	IdPrefixTemplate string //nolint:revive // Nomad's field name
	Priority         int
	// WriteRequest's fields, as Nomad's client sends them.
	Region, Namespace, SecretID, IdempotencyToken string
}

// JobDispatchResponse is Nomad's answer to PUT /v1/job/:id/dispatch.
type JobDispatchResponse struct {
	DispatchedJobID string
	EvalID          string
	EvalCreateIndex uint64
	JobCreateIndex  uint64
	Index           uint64
	LastIndex       uint64
	RequestTime     int64
}

// maxDispatchBody bounds a dispatch body: the 16 KiB payload in base64
// plus meta.
const maxDispatchBody = 64 << 10

func (s *Server) launcherRoutes() {
	m := s.mux
	if s.cfg.Launcher == nil {
		return
	}
	for _, method := range []string{"PUT", "POST"} {
		m.HandleFunc(method+" /v1/job/{id}/periodic/force", s.forcePeriodic)
		m.HandleFunc(method+" /v1/job/{id}/dispatch", s.dispatchJob)
	}
}

// forcePeriodic answers PUT /v1/job/:id/periodic/force: the periodic job
// launches a child now; the answer is the child's evaluation.
func (s *Server) forcePeriodic(w http.ResponseWriter, r *http.Request) {
	resp, err := s.cfg.Launcher.ForcePeriodic(r.Context(), namespaceOf(r), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, resp.Index)
	writeJSON(w, r, http.StatusOK, &PeriodicForceResponse{EvalID: resp.EvalID, EvalCreateIndex: resp.EvalCreateIndex,
		Index: resp.Index, LastIndex: resp.Index})
}

// dispatchJob answers PUT /v1/job/:id/dispatch: a child of the
// parameterized job with the request's payload and meta, checked as Nomad
// checks them (400 naming Payload or Meta). The idempotency token comes
// from ?idempotency_token= (as Nomad's client sends it) or the body.
func (s *Server) dispatchJob(w http.ResponseWriter, r *http.Request) {
	var req JobDispatchRequest
	r.Body = http.MaxBytesReader(w, r.Body, maxDispatchBody)
	if err := decodeStrictBody(w, r, &req); err != nil && !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) || len(req.Payload) > structs.DispatchPayloadSizeLimit {
			s.fail(w, r, badRequestf("Payload: exceeds maximum size of %d bytes", structs.DispatchPayloadSizeLimit))
			return
		}
		s.fail(w, r, err)
		return
	}
	if req.JobID != "" && req.JobID != r.PathValue("id") {
		s.fail(w, r, badRequestf("JobID: %q does not match the job ID in the path %q", req.JobID, r.PathValue("id")))
		return
	}
	ns := namespaceOf(r)
	if req.Namespace != "" && r.URL.Query().Get("namespace") == "" {
		ns = req.Namespace
	}
	token := r.URL.Query().Get("idempotency_token")
	if token == "" {
		token = req.IdempotencyToken
	}
	resp, err := s.cfg.Launcher.DispatchJob(r.Context(), &controlplane.DispatchRequest{
		Namespace: ns, JobID: r.PathValue("id"), Payload: req.Payload, Meta: req.Meta,
		IDPrefixTemplate: req.IdPrefixTemplate, Priority: req.Priority, IdempotencyToken: token,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, resp.Index)
	writeJSON(w, r, http.StatusOK, &JobDispatchResponse{DispatchedJobID: resp.DispatchedJobID, EvalID: resp.EvalID,
		EvalCreateIndex: resp.EvalCreateIndex, JobCreateIndex: resp.JobCreateIndex, Index: resp.Index, LastIndex: resp.Index})
}

// childrenSummary counts a parent job's children by status, Nomad's
// JobChildrenSummary.
func (s *Server) childrenSummary(ctx context.Context, parent *structs.Job) (*JobChildrenSummary, error) {
	out := &JobChildrenSummary{}
	if !parent.IsParent() {
		return out, nil
	}
	kids, err := s.cfg.State.Jobs(ctx, parent.Namespace, parent.ID+"/")
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		if k.ParentID != parent.ID {
			continue
		}
		switch k.Status {
		case structs.JobStatusRunning:
			out.Running++
		case structs.JobStatusDead:
			out.Dead++
		default:
			out.Pending++
		}
	}
	return out, nil
}

// parentStatus is the status Nomad reports for a periodic or
// parameterized parent: running until it is stopped, then dead (it has no
// allocations of its own to go by).
func parentStatus(j *structs.Job) *structs.Job {
	if !j.IsParent() {
		return j
	}
	c := *j
	c.Status = structs.JobStatusRunning
	if j.Stop {
		c.Status = structs.JobStatusDead
	}
	return &c
}
