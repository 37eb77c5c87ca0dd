package awschaos_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/drover-sched/drover/chaos"
	awschaos "github.com/drover-sched/drover/chaos/aws"
	"github.com/drover-sched/drover/internal/awstest"
)

// staleReadSuite is the suite that shows the DynamoDB store's commit-time
// capacity conditions at work: stale node reads are the only fault, at
// twice the default rate, on the first generator's schedules, so
// evaluations often place on nodes already full and only the conditions
// refuse them (the other faults only make that rarer). ci is how many seeds it plays, from 1; replay is the
// command that replays one (%d: the seed).
func staleReadSuite(t *testing.T, ci int, replay string) chaos.Suite {
	cfg := awstest.Config(t)
	s := chaos.Suite{
		Name:    "aws/" + awstest.Emulator() + "/stale-reads",
		CISeeds: ci,
		NewHome: func(t testing.TB, env *chaos.Env) chaos.Home {
			h, err := awschaos.New(context.Background(), cfg, fmt.Sprintf("%s-%d", awstest.Name("chaos"), tables.Add(1)), env, awschaos.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return h
		},
		Replay: replay,
		Faults: []string{chaos.FaultStaleRead},
		Params: chaos.DefaultParams,
	}
	s.Params.FaultRate = 0.3
	// The first generator's schedules (no canaries, drains, system jobs or
	// disconnects): more of their steps place, so more seeds over-commit
	// a broken build (4 of 24, the same ones every run, against 1–2 with
	// every feature on).
	s.Params.Features = 0
	return s
}

// TestStaleReadsNeverOverCommit plays the stale-read suite's first seeds on
// kumo, the seeds on which a build without the capacity conditions
// over-commits (TestBrokenCapacityCheckIsCaught, -tags
// drover_broken_capacity: seeds 2, 6 and 8 of these), and fails on any
// broken invariant: with the conditions, every plan over a full node is
// refused at commit time.
func TestStaleReadsNeverOverCommit(t *testing.T) {
	awstest.SkipOnMoto(t, "a schedule takes 8–15 s there; TestChaos plays moto's seeds")
	staleReadSuite(t, 8, "DROVER_EMULATORS=kumo go test ./chaos/aws -run TestStaleReadsNeverOverCommit -seed %d").Run(t)
}
