//go:build drover_broken_capacity

package awschaos_test

import (
	"testing"

	"github.com/drover-sched/drover/chaos"
	"github.com/drover-sched/drover/internal/awstest"
)

// brokenSeeds is how many seeds of the stale-read suite the broken build
// plays on kumo.
const brokenSeeds = 24

// TestBrokenCapacityCheckIsCaught: in a build whose DynamoDB store leaves
// the free-capacity conditions out of its plan chunks (-tags
// drover_broken_capacity, as `make test` builds it for this test alone),
// the stale-read suite's seeds on kumo catch the over-commit: evaluations
// that read stale node usage, some delivered concurrently, place on full
// nodes, and nothing refuses them. Without the tag the same suite is
// clean (TestStaleReadsNeverOverCommit).
func TestBrokenCapacityCheckIsCaught(t *testing.T) {
	awstest.SkipOnMoto(t, "a schedule takes 8–15 s there; kumo's leg shows the catch")
	s := staleReadSuite(t, brokenSeeds,
		"DROVER_EMULATORS=kumo go test -tags drover_broken_capacity ./chaos/aws -run TestBrokenCapacityCheckIsCaught -seed %d")
	seeds := chaos.Seeds(t, s.CISeeds)
	var caught []uint64
	var first chaos.Violation
	s.RunSeeds(t, seeds, func(seed uint64, v []chaos.Violation, _ []chaos.Step) {
		for _, x := range v {
			if x.Invariant == chaos.InvCapacity {
				if len(caught) == 0 {
					first = x
				}
				caught = append(caught, seed)
				return
			}
		}
	})
	if len(caught) == 0 {
		t.Fatalf("none of %d seeds found the over-commit of a DynamoDB store without its commit-time capacity conditions", len(seeds))
	}
	t.Logf("%d of %d seeds caught the over-commit: %v; seed %d: %s", len(caught), len(seeds), caught, caught[0], first)
}
