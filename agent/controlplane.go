package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/nodeagent"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// localControlPlane is the control plane of a node agent running in the
// server's process: the service itself, whose answers that asking again
// will not change (a node asking about another node's alloc, an unknown
// alloc) are marked nodeagent.ErrPermanent, as the HTTP client marks the
// server's 403 and 404.
type localControlPlane struct{ *controlplane.Service }

var _ nodeagent.ControlPlane = localControlPlane{}
var _ nodeagent.ServiceRegistry = localControlPlane{}

// PreviousAlloc implements nodeagent.ControlPlane.
func (l localControlPlane) PreviousAlloc(ctx context.Context, nodeID, allocID string) (*structs.Allocation, error) {
	prev, err := l.Service.PreviousAlloc(ctx, nodeID, allocID)
	if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrWrongNode) {
		err = fmt.Errorf("%w (%w)", err, nodeagent.ErrPermanent)
	}
	return prev, err
}
