package storagetest

import (
	"errors"
	"testing"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// testNodeReactionsPending: a node's registration and each change of its
// status mark, in the same write, its reactions pending with that write's
// index (structs.Node.ReactionsPending); the mark survives what does not
// change the status (a re-registration of a ready node, an eligibility
// change, node events, a status write of the same status) and is cleared
// only by NodeReactionsDone with its own index, so the done of an older
// change leaves a newer change's mark alone.
func testNodeReactionsPending(t *testing.T, s storage.Store) {
	n := addNode(t, s, testNode("n1", 1000, 1024))
	if n.ReactionsPending == 0 || n.ReactionsPending != n.ModifyIndex {
		t.Fatalf("a new node: mark %d, want its write's index %d", n.ReactionsPending, n.ModifyIndex)
	}
	if got := must(s.Node(ctx, "n1")); got.ReactionsPending != n.ReactionsPending {
		t.Fatalf("the new node read back: mark %d, want %d", got.ReactionsPending, n.ReactionsPending)
	}
	if got := must(s.NodeReactionsDone(ctx, "n1", n.ReactionsPending+1)); got.ReactionsPending != n.ReactionsPending {
		t.Fatalf("done with another index cleared the mark: %d", got.ReactionsPending)
	}
	if got := must(s.NodeReactionsDone(ctx, "n1", n.ReactionsPending)); got.ReactionsPending != 0 {
		t.Fatalf("done with the mark's index: mark %d, want 0", got.ReactionsPending)
	}
	if got := must(s.Node(ctx, "n1")); got.ReactionsPending != 0 {
		t.Fatalf("after done, read back: mark %d, want 0", got.ReactionsPending)
	}
	// A re-registration of the ready node changes no status: no mark.
	if got := addNode(t, s, testNode("n1", 2000, 2048)); got.ReactionsPending != 0 {
		t.Fatalf("a ready node re-registered: mark %d, want 0", got.ReactionsPending)
	}

	down := must(s.UpdateNodeStatus(ctx, "n1", structs.NodeStatusDown, 10))
	if down.ReactionsPending == 0 || down.ReactionsPending != down.ModifyIndex {
		t.Fatalf("down: mark %d, want its write's index %d", down.ReactionsPending, down.ModifyIndex)
	}
	if got := must(s.UpdateNodeStatus(ctx, "n1", structs.NodeStatusDown, 11)); got.ReactionsPending != down.ReactionsPending ||
		got.StatusUpdatedAt != 10 {
		t.Fatalf("down again: %+v, want the first down's mark %d and time", got, down.ReactionsPending)
	}
	must(s.UpdateNodeEligibility(ctx, "n1", structs.NodeSchedulingIneligible))
	must(s.AppendNodeEvents(ctx, "n1", &structs.NodeEvent{Message: "m", Subsystem: structs.NodeEventSubsystemCluster}))
	if got := must(s.Node(ctx, "n1")); got.ReactionsPending != down.ReactionsPending {
		t.Fatalf("after eligibility and events: mark %d, want %d", got.ReactionsPending, down.ReactionsPending)
	}
	ready := must(s.UpdateNodeStatus(ctx, "n1", structs.NodeStatusReady, 12))
	if ready.ReactionsPending <= down.ReactionsPending || ready.ReactionsPending != ready.ModifyIndex {
		t.Fatalf("ready: mark %d, want its write's index %d (after the down's %d)", ready.ReactionsPending, ready.ModifyIndex, down.ReactionsPending)
	}
	// The down's reactions finishing late leave the ready's mark.
	if got := must(s.NodeReactionsDone(ctx, "n1", down.ReactionsPending)); got.ReactionsPending != ready.ReactionsPending {
		t.Fatalf("the older change's done: mark %d, want %d", got.ReactionsPending, ready.ReactionsPending)
	}
	// A re-registration keeps a pending mark (its reactions not run).
	if got := addNode(t, s, testNode("n1", 1000, 1024)); got.ReactionsPending != ready.ReactionsPending {
		t.Fatalf("re-registered with reactions pending: mark %d, want %d", got.ReactionsPending, ready.ReactionsPending)
	}
	must(s.NodeReactionsDone(ctx, "n1", ready.ReactionsPending))
	// A re-registration of a down node changes its status: a new mark.
	must(s.UpdateNodeStatus(ctx, "n1", structs.NodeStatusDown, 13))
	d2 := must(s.NodeReactionsDone(ctx, "n1", must(s.Node(ctx, "n1")).ReactionsPending))
	if d2.ReactionsPending != 0 {
		t.Fatalf("down, done: mark %d", d2.ReactionsPending)
	}
	if got := addNode(t, s, testNode("n1", 1000, 1024)); got.Status != structs.NodeStatusReady || got.ReactionsPending != got.ModifyIndex {
		t.Fatalf("a down node re-registered: %s, mark %d, want ready and its write's index %d", got.Status, got.ReactionsPending, got.ModifyIndex)
	}
	if _, err := s.NodeReactionsDone(ctx, "zzz", 1); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("done of an unknown node: %v", err)
	}
}
