package httpapi

import (
	"context"
	"net/http"

	"github.com/drover-sched/drover/structs"
)

// AllocStopper stops an allocation so it is replaced (controlplane.Service).
type AllocStopper interface {
	StopAlloc(ctx context.Context, allocID string) (*structs.Evaluation, uint64, error)
}

// AllocStopResponse is Nomad's answer to PUT /v1/allocation/:id/stop.
type AllocStopResponse struct {
	EvalID    string
	Index     uint64
	LastIndex uint64
}

// stopAllocation answers PUT|POST /v1/allocation/:id/stop (an ID or a
// unique prefix): the alloc is marked to migrate and a new evaluation
// replaces it, as Nomad.
func (s *Server) stopAllocation(w http.ResponseWriter, r *http.Request) {
	a, err := s.allocByIDOrPrefix(r.Context(), r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ev, idx, err := s.cfg.Allocs.StopAlloc(r.Context(), a.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, idx)
	writeJSON(w, r, http.StatusOK, &AllocStopResponse{EvalID: ev.ID, Index: idx, LastIndex: idx})
}

// allocByIDOrPrefix finds the path's alloc by ID or a unique prefix.
func (s *Server) allocByIDOrPrefix(ctx context.Context, r *http.Request) (*structs.Allocation, error) {
	id := r.PathValue("id")
	a, err := s.cfg.State.Alloc(ctx, id)
	if err == nil || !errorsIsNotFound(err) {
		return a, err
	}
	matches, lerr := s.cfg.State.AllocsByPrefix(ctx, "*", id)
	if lerr != nil {
		return nil, lerr
	}
	if len(matches) == 1 {
		return s.cfg.State.Alloc(ctx, matches[0].ID)
	}
	return nil, err
}
