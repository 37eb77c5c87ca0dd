package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/drover-sched/drover/acl"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// NodeAgents is what the node-agent routes ask of the control plane
// (nodeagent.ControlPlane, served over HTTP).
type NodeAgents interface {
	RegisterNode(ctx context.Context, node *structs.Node) (time.Duration, error)
	Heartbeat(ctx context.Context, nodeID string) (time.Duration, error)
	AssignmentIndex(ctx context.Context, nodeID string) (uint64, error)
	Assignments(ctx context.Context, nodeID string) ([]*structs.Allocation, uint64, error)
	UpdateAllocs(ctx context.Context, nodeID string, updates []*structs.Allocation) error
	PreviousAlloc(ctx context.Context, nodeID, allocID string) (*structs.Allocation, error)
}

// NodeAuthorizer checks that a node-agent request comes from the node it
// names (on AWS: the caller's IAM identity is bound to the node ID). A nil
// authorizer accepts every request, as the embedded home does (its API
// listens on 127.0.0.1 by default).
type NodeAuthorizer func(r *http.Request, nodeID string) error

// NodeSecrets binds each node ID to the hash of the secret the node
// registered with (storage.Store): the self-hosted home's node identity,
// Nomad's node SecretID.
type NodeSecrets interface {
	BindNodeSecret(ctx context.Context, nodeID, secretHash string) error
	NodeSecretHash(ctx context.Context, nodeID string) (string, error)
}

// Node-agent wire types.

// NodeRegisterRequest is the body of PUT /v1/nodeagent/register.
type NodeRegisterRequest struct {
	Node *structs.Node
}

// HeartbeatResponse answers registrations and heartbeats: the TTL within
// which the next heartbeat must come.
type HeartbeatResponse struct {
	HeartbeatTTL time.Duration
}

// AssignmentIndexResponse answers GET /v1/nodeagent/{id}/assignment-index.
type AssignmentIndexResponse struct {
	Index uint64
}

// AssignmentsResponse answers GET /v1/nodeagent/{id}/assignments.
type AssignmentsResponse struct {
	Allocs []*structs.Allocation
	Index  uint64
}

// AllocUpdateRequest is the body of PUT /v1/nodeagent/{id}/allocs.
type AllocUpdateRequest struct {
	Allocs []*structs.Allocation
}

// maxNodeBody bounds node-agent request bodies (a fingerprint or a batch
// of alloc reports with their task events).
const maxNodeBody = 8 << 20

func (s *Server) nodeAgentRoutes() {
	if s.cfg.NodeAgents == nil {
		return
	}
	m := s.mux
	m.HandleFunc("PUT /v1/nodeagent/register", s.nodeRegister)
	m.HandleFunc("PUT /v1/nodeagent/{id}/heartbeat", s.nodeHeartbeat)
	m.HandleFunc("GET /v1/nodeagent/{id}/assignment-index", s.nodeAssignmentIndex)
	m.HandleFunc("GET /v1/nodeagent/{id}/assignments", s.nodeAssignments)
	m.HandleFunc("PUT /v1/nodeagent/{id}/allocs", s.nodeUpdateAllocs)
	m.HandleFunc("GET /v1/nodeagent/{id}/alloc/{alloc}/previous", s.nodePreviousAlloc)
}

// PreviousAllocResponse answers GET
// /v1/nodeagent/{id}/alloc/{alloc}/previous: the status of the alloc that
// {alloc} replaces, or null.
type PreviousAllocResponse struct {
	Alloc *structs.Allocation
}

func (s *Server) nodePreviousAlloc(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.authorizeNode(w, r, id) {
		return
	}
	prev, err := s.cfg.NodeAgents.PreviousAlloc(r.Context(), id, r.PathValue("alloc"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, &PreviousAllocResponse{Alloc: prev})
}

// authorizeNode checks that a node-agent request comes from the node it
// names: its IAM identity (NodeAuth, AWS) and the secret it registered with
// (NodeSecrets, self-hosted; sent as X-Nomad-Token, as Nomad's client
// sends its node secret). A registration binds the node to its secret the
// first time; another node's secret, a missing one, or a node never
// registered is refused with a 403.
func (s *Server) authorizeNode(w http.ResponseWriter, r *http.Request, nodeID string) bool {
	return s.checkNode(w, r, nodeID, false)
}

func (s *Server) checkNode(w http.ResponseWriter, r *http.Request, nodeID string, register bool) bool {
	if s.cfg.NodeAuth != nil {
		if err := s.cfg.NodeAuth(r, nodeID); err != nil {
			writeError(w, http.StatusForbidden, fmt.Sprintf("node %s: %v", nodeID, err))
			return false
		}
	}
	if s.cfg.NodeSecrets == nil {
		return true
	}
	secret := acl.SecretOf(r)
	if secret == "" {
		writeError(w, http.StatusForbidden, fmt.Sprintf("node %s: the node's secret is required (X-Nomad-Token)", nodeID))
		return false
	}
	h := acl.Hash(secret)
	if register {
		err := s.cfg.NodeSecrets.BindNodeSecret(r.Context(), nodeID, h)
		if errors.Is(err, storage.ErrConflict) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("node %s: registered with another secret: this is not that node", nodeID))
			return false
		}
		if err != nil {
			s.fail(w, r, err)
			return false
		}
		return true
	}
	bound, err := s.cfg.NodeSecrets.NodeSecretHash(r.Context(), nodeID)
	if errors.Is(err, storage.ErrNotFound) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("node %s: not registered (register first)", nodeID))
		return false
	}
	if err != nil {
		s.fail(w, r, err)
		return false
	}
	if subtle.ConstantTimeCompare([]byte(bound), []byte(h)) != 1 {
		writeError(w, http.StatusForbidden, fmt.Sprintf("node %s: wrong node secret", nodeID))
		return false
	}
	return true
}

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxNodeBody))
	if err := dec.Decode(v); err != nil {
		return badRequestf("decode request body: %v", err)
	}
	return nil
}

func (s *Server) nodeRegister(w http.ResponseWriter, r *http.Request) {
	var req NodeRegisterRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Node == nil || req.Node.ID == "" {
		s.fail(w, r, badRequestf("Node.ID: is required"))
		return
	}
	if !s.checkNode(w, r, req.Node.ID, true) {
		return
	}
	ttl, err := s.cfg.NodeAgents.RegisterNode(r.Context(), req.Node)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, &HeartbeatResponse{HeartbeatTTL: ttl})
}

func (s *Server) nodeHeartbeat(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.authorizeNode(w, r, id) {
		return
	}
	ttl, err := s.cfg.NodeAgents.Heartbeat(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, &HeartbeatResponse{HeartbeatTTL: ttl})
}

func (s *Server) nodeAssignmentIndex(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.authorizeNode(w, r, id) {
		return
	}
	idx, err := s.cfg.NodeAgents.AssignmentIndex(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, &AssignmentIndexResponse{Index: idx})
}

func (s *Server) nodeAssignments(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.authorizeNode(w, r, id) {
		return
	}
	allocs, idx, err := s.cfg.NodeAgents.Assignments(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if allocs == nil {
		allocs = []*structs.Allocation{}
	}
	writeJSON(w, r, http.StatusOK, &AssignmentsResponse{Allocs: allocs, Index: idx})
}

func (s *Server) nodeUpdateAllocs(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.authorizeNode(w, r, id) {
		return
	}
	var req AllocUpdateRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.cfg.NodeAgents.UpdateAllocs(r.Context(), id, req.Allocs); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
