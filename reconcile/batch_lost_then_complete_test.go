package reconcile

import (
	"testing"

	"github.com/drover-sched/drover/structs"
)

// TestBatchDoneAllocReplacedWhileLostCountsOnce: a batch alloc marked lost
// (its node missed its heartbeats) was replaced, then its node came back
// and reported it complete. Its work is done and counts, but only once
// with its replacement: both hold the same name. Counting both as
// separate allocs left another name of the group unplaced for good: the
// job ended with one of its allocs never run (found by the process-level
// chaos suite, seed 39: both nodes SIGSTOPped past the heartbeat TTL).
// Nomad 1.6 counts both.
func TestBatchDoneAllocReplacedWhileLostCountsOnce(t *testing.T) {
	w := batchWorld(group("work", 3))
	w.alloc("done0", "work", 0, stopped, complete)   // lost, replaced, then reported complete
	w.alloc("repl0", "work", 0)                      // its replacement, running
	w.alloc("done1", "work", 1, complete)            // finished normally
	w.alloc("lost2", "work", 2, stopped, lostStatus) // lost with the same node, its replacement blocked
	res := Reconcile(w.input())
	if len(res.Place) != 1 || res.Place[0].Name != structs.AllocName("example", "work", 2) {
		names := []string{}
		for _, p := range res.Place {
			names = append(names, p.Name)
		}
		t.Fatalf("want work[2] placed, got placements %v", names)
	}
	if len(res.Stop) != 0 {
		t.Fatalf("want nothing stopped, got %+v", res.Stop)
	}

	// A done alloc whose name no other alloc holds still counts: nothing
	// is placed again.
	w = batchWorld(group("work", 2))
	w.alloc("done0", "work", 0, stopped, complete)
	w.alloc("done1", "work", 1, complete)
	if res := Reconcile(w.input()); len(res.Place) != 0 {
		t.Fatalf("finished work placed again: %+v", res.Place)
	}
}
