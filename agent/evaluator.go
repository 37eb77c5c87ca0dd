package agent

import (
	"go.uber.org/zap"

	"github.com/drover-sched/drover/placement"
	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage/embedded"
)

// NewEvaluator wires the embedded home's evaluate service with drover's
// reconciler and update-type decision, on store and queue (the server's
// broker; the chaos suite's harness queue).
func NewEvaluator(store *embedded.Store, queue scheduler.Queue, log *zap.Logger) *scheduler.Evaluator {
	return &scheduler.Evaluator{
		State:             store,
		Queue:             queue,
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
