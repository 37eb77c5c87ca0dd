package agent

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/nodeagent"
	"github.com/drover-sched/drover/storage/embedded"
)

// TestLocalControlPlaneMarksPermanentErrors: in one process, asking about
// the previous alloc of an unknown alloc is an answer that will not
// change (as the HTTP client's 404): the node agent stops waiting.
func TestLocalControlPlaneMarksPermanentErrors(t *testing.T) {
	store, err := embedded.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cp := localControlPlane{controlplane.New(controlplane.Config{Store: store})}
	_, err = cp.PreviousAlloc(context.Background(), "n1", "no-such-alloc")
	if err == nil || !errors.Is(err, nodeagent.ErrPermanent) {
		t.Fatalf("unknown alloc: %v, want a permanent error", err)
	}
}
