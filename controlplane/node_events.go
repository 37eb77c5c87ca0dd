package controlplane

import (
	"context"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
)

// nodeEvent records an event on a node (Nomad's node events: registration,
// drain, eligibility, status). Events inform operators; failing to record
// one never fails the change it describes.
func (s *Service) nodeEvent(ctx context.Context, nodeID, subsystem, message string, details map[string]string) {
	ev := structs.NewNodeEvent(subsystem, message, s.now().UTC())
	ev.Details = details
	if _, err := s.store.AppendNodeEvents(ctx, nodeID, ev); err != nil {
		s.log.Warn("record node event", zap.String("node_id", nodeID), zap.String("message", message), zap.Error(err))
	}
}
