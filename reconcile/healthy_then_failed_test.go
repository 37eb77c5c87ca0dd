package reconcile

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

// TestHealthyThenFailedAllocOfActiveDeploymentIsRescheduled: an alloc that
// was reported healthy in the running deployment and then failed is
// rescheduled by its policy. Holding it back for the deployment's health
// logic (as an undecided alloc is) would leave it failed for good: the
// health logic has counted it, the same evaluation marks the deployment
// successful, and nothing evaluates the job again (found by the chaos
// suite: `go test ./chaos -run TestChaos/embedded -seed 140`).
func TestHealthyThenFailedAllocOfActiveDeploymentIsRescheduled(t *testing.T) {
	w := newWorld(group("web", 3, rolling(1, 0)))
	d := w.deployment("d1", structs.DeploymentStatusRunning, "web")
	d.TaskGroups["web"].PlacedAllocs, d.TaskGroups["web"].HealthyAllocs = 3, 3
	healthy := true
	w.run("a", "web", 2, inDeployment("d1", &healthy, false))
	w.alloc("a2", "web", 2, inDeployment("d1", &healthy, false), failedAt(time.Minute))
	res := Reconcile(w.input())
	if len(res.Place) != 1 || res.Place[0].PreviousAlloc == nil || res.Place[0].PreviousAlloc.ID != "a2" || !res.Place[0].Reschedule {
		t.Fatalf("want one reschedule of a2, got placements %+v", res.Place)
	}
	for _, u := range res.DeploymentUpdates {
		if u.Status == structs.DeploymentStatusSuccessful {
			t.Fatalf("the deployment is marked successful while its replacement is being placed: %+v", u)
		}
	}

	// An alloc whose health is undecided stays the health logic's.
	w = newWorld(group("web", 3, rolling(1, 0)))
	w.deployment("d1", structs.DeploymentStatusRunning, "web")
	w.run("a", "web", 2, inDeployment("d1", &healthy, false))
	w.alloc("a2", "web", 2, inDeployment("d1", nil, false), failedAt(time.Minute))
	if res := Reconcile(w.input()); len(res.Place) != 0 {
		t.Fatalf("a failed alloc of undecided health was replaced: %+v", res.Place)
	}
}
