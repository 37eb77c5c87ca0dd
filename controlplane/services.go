package controlplane

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// UpsertServiceRegistrations records the service instances a node agent
// registered for its running tasks (Nomad's ServiceRegistration.Upsert).
// Each must name the node, an ID, a service and an alloc; a registration
// for an alloc that is no longer live is dropped by the store.
func (s *Service) UpsertServiceRegistrations(ctx context.Context, nodeID string, regs []*structs.ServiceRegistration) error {
	for i, r := range regs {
		switch {
		case r == nil:
			return badRequest("Services[%d]: must not be null", i)
		case r.ID == "" || r.ServiceName == "" || r.AllocID == "":
			return badRequest("Services[%d]: ID, ServiceName and AllocID must be set", i)
		case r.NodeID != nodeID:
			return badRequest("Services[%d] %q: NodeID %q is not the reporting node %q", i, r.ID, r.NodeID, nodeID)
		case r.Port < 0 || r.Port > structs.MaxValidPort:
			return badRequest("Services[%d] %q: Port must be between 0 and %d (got %d)", i, r.ID, structs.MaxValidPort, r.Port)
		}
	}
	if _, err := s.store.UpsertServiceRegistrations(ctx, nodeID, regs); err != nil {
		return err
	}
	for _, r := range regs {
		s.log.Debug("service registered", zap.String("node_id", nodeID), zap.String("alloc_id", r.AllocID),
			zap.String("service", r.ServiceName), zap.String("registration_id", r.ID))
	}
	return nil
}

// DeleteServiceRegistrations removes the node's registrations by ID
// (Nomad's ServiceRegistration.DeleteByID from the client): the task
// stopped. Another node's registrations are left alone.
func (s *Service) DeleteServiceRegistrations(ctx context.Context, nodeID string, ids []string) error {
	_, err := s.store.DeleteServiceRegistrations(ctx, nodeID, ids)
	return err
}

// ServiceRegistrations answers a node agent's registry read (what its
// templates' nomadService and nomadServices render): the namespace's
// registrations, of one service when name is set (none when name is "*":
// the index alone), and the registry's
// index. With minIndex > 0 it blocks until the index passes minIndex or
// wait ends, as a blocking query.
func (s *Service) ServiceRegistrations(ctx context.Context, nodeID, namespace, name string, minIndex uint64, wait time.Duration) ([]*structs.ServiceRegistration, uint64, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	watcher, _ := s.store.(storage.Watcher)
	for {
		var changed <-chan struct{}
		if watcher != nil && minIndex > 0 {
			changed = watcher.WatchTables(storage.TableServiceRegistrations)
		}
		idx, err := s.store.Index(ctx, storage.TableServiceRegistrations)
		if err != nil {
			return nil, 0, err
		}
		if minIndex == 0 || idx > minIndex || wait <= 0 {
			var regs []*structs.ServiceRegistration
			switch name {
			case "*": // the index alone
			case "":
				regs, err = s.store.ServiceRegistrations(ctx, namespace)
			default:
				regs, err = s.store.ServiceRegistrationsByName(ctx, namespace, name)
			}
			if err != nil {
				return nil, 0, fmt.Errorf("read services for node %s: %w", nodeID, err)
			}
			return regs, max(idx, 1), nil
		}
		if changed == nil {
			c := make(chan struct{})
			t := time.AfterFunc(time.Second, func() { close(c) })
			defer t.Stop()
			changed = c
		}
		select {
		case <-changed:
		case <-deadline.C:
			minIndex = 0
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}
