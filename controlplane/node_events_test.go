package controlplane

import (
	"testing"

	"github.com/drover-sched/drover/structs"
)

// TestNodeEventsAndReservedResources: registration, eligibility, drain,
// a missed heartbeat and the node's return each leave Nomad's event on the
// node, oldest first; a registered node always has ReservedResources
// (Nomad's CLI reads it without a nil check).
func TestNodeEventsAndReservedResources(t *testing.T) {
	f := newFixture(t)
	f.node("n1")
	n, _ := f.store.Node(f.ctx, "n1")
	if n.ReservedResources == nil || n.NodeResources == nil {
		t.Fatalf("reserved %v resources %v", n.ReservedResources, n.NodeResources)
	}
	if _, err := f.svc.UpdateEligibility(f.ctx, "n1", structs.NodeSchedulingIneligible); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.UpdateEligibility(f.ctx, "n1", structs.NodeSchedulingEligible); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.UpdateDrain(f.ctx, "n1", &DrainSpec{Deadline: -1}, false); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.NodeMissedHeartbeat(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Heartbeat(f.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	n, _ = f.store.Node(f.ctx, "n1")
	var got []string
	for _, e := range n.Events {
		got = append(got, e.Message)
	}
	want := []string{structs.NodeEventRegistered, structs.NodeEventIneligible, structs.NodeEventEligible,
		structs.NodeEventDrainSet, structs.NodeEventDrainComplete, structs.NodeEventHeartbeatMissed, structs.NodeEventHeartbeatReturned}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %q, want %q", got, want)
		}
	}
	if n.Events[0].Subsystem != structs.NodeEventSubsystemCluster || n.Events[3].Subsystem != structs.NodeEventSubsystemDrain ||
		n.Events[0].Timestamp.IsZero() || n.Events[0].CreateIndex == 0 {
		t.Fatalf("event shape: %+v %+v", n.Events[0], n.Events[3])
	}
}
