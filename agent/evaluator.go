package agent

import (
	"go.uber.org/zap"

	evqueue "github.com/drover-sched/drover/events/embedded"
	"github.com/drover-sched/drover/placement"
	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage/embedded"
)

// newEvaluator wires the evaluate service with drover's reconciler and
// update-type decision.
func newEvaluator(store *embedded.Store, broker *evqueue.Broker, log *zap.Logger) *scheduler.Evaluator {
	return &scheduler.Evaluator{
		State:             store,
		Queue:             broker,
		Reconcile:         reconcile.Reconcile,
		UpdateOnNodes:     placement.UpdateTypeOnNodes,
		RescheduleTracker: reconcile.NextRescheduleTracker,
		// Disconnected clients (max_client_disconnect) are supported, as
		// in Nomad since 1.3.
		SupportsDisconnectedClients: true,
		// Pause and scheduler algorithm from the stored configuration.
		Config: &scheduler.CachedConfig{Source: store},
		Logger: log,
	}
}
