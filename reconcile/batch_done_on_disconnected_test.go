package reconcile

import (
	"testing"

	"github.com/drover-sched/drover/structs"
)

// TestBatchDoneOnDisconnectedNodeCounts: a batch alloc that ran to
// completion before its node disconnected, in a group without disconnect
// support (another job's group on the node has it, so the node is
// disconnected, not down), is done work: it is neither stopped as lost
// nor placed again, as on a down node. Nomad 1.6 marks it lost: its
// status said lost while its work counted as done, and while the node
// was away its name was placed again, running finished work twice when
// room was left (found by the chaos suite with disconnects: `go test
// ./chaos -run TestChaos/embedded -seed 1308`, a batch job short of one
// alloc at rest). A running alloc there is still lost and replaced.
func TestBatchDoneOnDisconnectedNodeCounts(t *testing.T) {
	for _, sdc := range []bool{true, false} {
		w := batchWorld(group("work", 2))
		w.sdc = sdc
		w.alloc("done0", "work", 0, onNode("away"), complete)
		w.alloc("run1", "work", 1, onNode("away"))
		w.disconnected("away")
		res := Reconcile(w.input())
		if len(res.Stop) != 1 || res.Stop[0].Alloc.ID != "run1" {
			t.Fatalf("sdc=%v: want only run1 stopped as lost, got %+v", sdc, res.Stop)
		}
		if len(res.Place) != 1 || res.Place[0].Name != structs.AllocName(w.jobID, "work", 1) {
			t.Fatalf("sdc=%v: want work[1] placed (the lost one's replacement), got %+v", sdc, res.Place)
		}
	}
}
