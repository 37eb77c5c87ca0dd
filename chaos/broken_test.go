//go:build drover_broken_capacity

package chaos_test

import (
	"testing"

	"github.com/drover-sched/drover/chaos"
)

// brokenSeeds is how many seeds the broken build plays.
const brokenSeeds = 100

// TestBrokenCapacityCheckIsCaught: in a build whose embedded store skips
// the commit-time capacity check (-tags drover_broken_capacity, as `make
// test` builds it for this test alone), the CI seeds catch the
// over-commit: stale node reads and concurrent plans of different jobs
// place on full nodes, and nothing refuses them.
//
// It takes more seeds than the home's CI run (a race-free build, so they
// cost about what the CI seeds cost under -race).
func TestBrokenCapacityCheckIsCaught(t *testing.T) {
	s := embeddedSuite()
	s.CISeeds = brokenSeeds
	// Stale node reads are what lets a plan place on a full node; the
	// other faults only make it rarer.
	s.Faults = []string{chaos.FaultStaleRead}
	s.Params = chaos.DefaultParams
	s.Params.FaultRate = 0.3
	var caught []uint64
	s.RunSeeds(t, chaos.Seeds(t, s.CISeeds), func(seed uint64, v []chaos.Violation, _ []chaos.Step) {
		for _, x := range v {
			if x.Invariant == chaos.InvCapacity {
				caught = append(caught, seed)
				return
			}
		}
	})
	if len(caught) == 0 {
		t.Fatalf("no CI seed found the over-commit of a store without its commit-time capacity check")
	}
	t.Logf("%d of %d CI seeds caught the over-commit, first %d", len(caught), s.CISeeds, caught[0])
}
