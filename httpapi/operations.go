package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Operator is what the API asks of the control plane for operator actions
// on deployments, jobs and nodes.
type Operator interface {
	PromoteDeployment(ctx context.Context, id string, groups []string) (string, error)
	FailDeployment(ctx context.Context, id string) (string, error)
	PauseDeployment(ctx context.Context, id string, pause bool) (string, error)
	RevertJob(ctx context.Context, namespace, jobID string, version uint64, enforcePrior *uint64) (*controlplane.RegisterResponse, error)
	UpdateDrain(ctx context.Context, nodeID string, spec *controlplane.DrainSpec, markEligible bool) (*structs.Node, error)
	UpdateEligibility(ctx context.Context, nodeID, eligibility string) (*structs.Node, error)
	GarbageCollect(ctx context.Context, threshold time.Duration) (*storage.GCResult, error)
}

// DeploymentUpdateResponse is Nomad's answer to deployment actions.
type DeploymentUpdateResponse struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	RevertedJobVersion    *uint64 `json:",omitempty"`
	LastIndex             uint64
	RequestTime           int64
}

// DeploymentPromoteRequest is Nomad's body of a promotion.
type DeploymentPromoteRequest struct {
	DeploymentID string
	All          bool
	Groups       []string
}

// DeploymentPauseRequest is Nomad's body of a pause or resume.
type DeploymentPauseRequest struct {
	DeploymentID string
	Pause        bool
}

// JobRevertRequest is Nomad's body of a revert.
type JobRevertRequest struct {
	JobID               string
	JobVersion          uint64
	EnforcePriorVersion *uint64
}

// NodeDrainRequest is Nomad's body of a drain update.
type NodeDrainRequest struct {
	NodeID       string
	DrainSpec    *DrainSpec
	MarkEligible bool
	Meta         map[string]string `json:",omitempty"`
}

// DrainSpec is Nomad's drain specification (durations in nanoseconds).
type DrainSpec struct {
	Deadline         time.Duration
	IgnoreSystemJobs bool
}

// NodeEligibilityRequest is Nomad's body of an eligibility update.
type NodeEligibilityRequest struct {
	NodeID      string
	Eligibility string
}

// NodeUpdateResponse is Nomad's answer to drain and eligibility updates.
type NodeUpdateResponse struct {
	NodeModifyIndex uint64
	EvalIDs         []string
	EvalCreateIndex uint64
	LastIndex       uint64
	RequestTime     int64
}

func (s *Server) operatorRoutes() {
	if s.cfg.Operator == nil {
		return
	}
	m := s.mux
	for _, method := range []string{"PUT", "POST"} {
		m.HandleFunc(method+" /v1/deployment/promote/{id}", s.promoteDeployment)
		m.HandleFunc(method+" /v1/deployment/fail/{id}", s.failDeployment)
		m.HandleFunc(method+" /v1/deployment/pause/{id}", s.pauseDeployment)
		m.HandleFunc(method+" /v1/job/{id}/revert", s.revertJob)
		m.HandleFunc(method+" /v1/node/{id}/drain", s.drainNode)
		m.HandleFunc(method+" /v1/node/{id}/eligibility", s.nodeEligibility)
		m.HandleFunc(method+" /v1/system/gc", s.systemGC)
	}
}

func (s *Server) promoteDeployment(w http.ResponseWriter, r *http.Request) {
	var req DeploymentPromoteRequest
	if err := decodeOptionalBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	var groups []string
	if !req.All {
		groups = req.Groups
	}
	evalID, err := s.cfg.Operator.PromoteDeployment(r.Context(), r.PathValue("id"), groups)
	s.answerDeployment(w, r, evalID, err)
}

func (s *Server) failDeployment(w http.ResponseWriter, r *http.Request) {
	evalID, err := s.cfg.Operator.FailDeployment(r.Context(), r.PathValue("id"))
	s.answerDeployment(w, r, evalID, err)
}

func (s *Server) pauseDeployment(w http.ResponseWriter, r *http.Request) {
	var req DeploymentPauseRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	evalID, err := s.cfg.Operator.PauseDeployment(r.Context(), r.PathValue("id"), req.Pause)
	s.answerDeployment(w, r, evalID, err)
}

func (s *Server) answerDeployment(w http.ResponseWriter, r *http.Request, evalID string, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	idx, _ := s.cfg.State.Index(r.Context(), storage.TableDeployments)
	setMeta(w, idx)
	writeJSON(w, r, http.StatusOK, &DeploymentUpdateResponse{EvalID: evalID, DeploymentModifyIndex: idx, LastIndex: idx})
}

func (s *Server) revertJob(w http.ResponseWriter, r *http.Request) {
	var req JobRevertRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.JobID != "" && req.JobID != r.PathValue("id") {
		s.fail(w, r, badRequestf("JobID: %q does not match the job ID in the path %q", req.JobID, r.PathValue("id")))
		return
	}
	resp, err := s.cfg.Operator.RevertJob(r.Context(), namespaceOf(r), r.PathValue("id"), req.JobVersion, req.EnforcePriorVersion)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, resp.Index)
	writeJSON(w, r, http.StatusOK, &JobRegisterResponse{EvalID: resp.EvalID, EvalCreateIndex: resp.EvalCreateIndex,
		JobModifyIndex: resp.JobModifyIndex, KnownLeader: true, LastIndex: resp.Index})
}

func (s *Server) drainNode(w http.ResponseWriter, r *http.Request) {
	var req NodeDrainRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	node, err := s.nodeByIDOrPrefix(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var spec *controlplane.DrainSpec
	if req.DrainSpec != nil {
		spec = &controlplane.DrainSpec{Deadline: req.DrainSpec.Deadline, IgnoreSystemJobs: req.DrainSpec.IgnoreSystemJobs}
	}
	n, err := s.cfg.Operator.UpdateDrain(r.Context(), node.ID, spec, req.MarkEligible)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, n.ModifyIndex)
	writeJSON(w, r, http.StatusOK, &NodeUpdateResponse{NodeModifyIndex: n.ModifyIndex, LastIndex: n.ModifyIndex})
}

func (s *Server) nodeEligibility(w http.ResponseWriter, r *http.Request) {
	var req NodeEligibilityRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	node, err := s.nodeByIDOrPrefix(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	n, err := s.cfg.Operator.UpdateEligibility(r.Context(), node.ID, req.Eligibility)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, n.ModifyIndex)
	writeJSON(w, r, http.StatusOK, &NodeUpdateResponse{NodeModifyIndex: n.ModifyIndex, LastIndex: n.ModifyIndex})
}

// systemGC forces a garbage collection of everything finished, as
// `PUT /v1/system/gc`.
func (s *Server) systemGC(w http.ResponseWriter, r *http.Request) {
	res, err := s.cfg.Operator.GarbageCollect(r.Context(), 0)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, res)
}

// decodeOptionalBody decodes a JSON body if there is one.
func decodeOptionalBody(r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	return decodeBody(r, v)
}
