package controlplane

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// PreviousAlloc implements nodeagent.ControlPlane: the status of the
// allocation that allocID replaces, for a node agent whose sticky or
// migrating alloc waits for it. A node may only ask about the previous
// allocation of an allocation assigned to it. It returns nil when there
// is none or it was garbage collected.
func (s *Service) PreviousAlloc(ctx context.Context, nodeID, allocID string) (*structs.Allocation, error) {
	a, err := s.store.Alloc(ctx, allocID)
	if err != nil {
		return nil, fmt.Errorf("previous alloc of %s: %w", allocID, err)
	}
	if a.NodeID != nodeID {
		return nil, fmt.Errorf("previous alloc of %s: the alloc is not assigned to node %s: %w", allocID, nodeID, storage.ErrWrongNode)
	}
	if a.PreviousAllocation == "" {
		return nil, nil
	}
	prev, err := s.store.Alloc(ctx, a.PreviousAllocation)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("previous alloc %s: %w", a.PreviousAllocation, err)
	}
	return &structs.Allocation{
		ID: prev.ID, Namespace: prev.Namespace, Name: prev.Name, NodeID: prev.NodeID, JobID: prev.JobID,
		TaskGroup: prev.TaskGroup, DesiredStatus: prev.DesiredStatus, ClientStatus: prev.ClientStatus,
		AllocModifyIndex: prev.AllocModifyIndex, ModifyIndex: prev.ModifyIndex,
	}, nil
}
