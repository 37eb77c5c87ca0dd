package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// SchedulerConfigs reads and writes the scheduler configuration
// (controlplane.Service).
type SchedulerConfigs interface {
	SchedulerConfig(ctx context.Context) (*structs.SchedulerConfiguration, error)
	SetSchedulerConfig(ctx context.Context, cfg *structs.SchedulerConfiguration, cas *uint64) (bool, uint64, error)
}

// SchedulerConfigurationResponse is Nomad's answer to GET
// /v1/operator/scheduler/configuration.
type SchedulerConfigurationResponse struct {
	SchedulerConfig *structs.SchedulerConfiguration
	Index           uint64
	LastContact     int64
	KnownLeader     bool
}

// SchedulerSetConfigurationResponse is Nomad's answer to a write: whether
// it was applied (false when ?cas= did not match) and its index.
type SchedulerSetConfigurationResponse struct {
	Updated   bool
	Index     uint64
	LastIndex uint64
}

func (s *Server) getSchedulerConfig(w http.ResponseWriter, r *http.Request) {
	s.query(w, r, []string{storage.TableSchedulerConfig}, func(ctx context.Context) (any, error) {
		c, err := s.cfg.Scheduler.SchedulerConfig(ctx)
		if err != nil {
			return nil, err
		}
		return &SchedulerConfigurationResponse{SchedulerConfig: c, Index: c.ModifyIndex, KnownLeader: true}, nil
	})
}

// setSchedulerConfig answers PUT|POST /v1/operator/scheduler/configuration
// (?cas=N: only if the stored ModifyIndex is N).
func (s *Server) setSchedulerConfig(w http.ResponseWriter, r *http.Request) {
	var cas *uint64
	if v := r.URL.Query().Get("cas"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			s.fail(w, r, badRequestf("query parameter \"cas\": %q is not an index", v))
			return
		}
		cas = &n
	}
	var cfg structs.SchedulerConfiguration
	if err := decodeStrictBody(w, r, &cfg); err != nil {
		s.fail(w, r, err)
		return
	}
	ok, idx, err := s.cfg.Scheduler.SetSchedulerConfig(r.Context(), &cfg, cas)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, idx)
	writeJSON(w, r, http.StatusOK, &SchedulerSetConfigurationResponse{Updated: ok, Index: idx, LastIndex: idx})
}
