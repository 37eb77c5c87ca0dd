package awschaos_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/drover-sched/drover/chaos"
	awschaos "github.com/drover-sched/drover/chaos/aws"
	"github.com/drover-sched/drover/internal/awstest"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

var tables atomic.Int64

var noNodeCache = flag.Bool("no-node-cache", false, "chaos: evaluate without the AWS home's node cache")

// TestChaos plays the fixed CI seeds (or -seeds N, or -seed S) on the AWS
// home on each emulator leg and fails on any broken invariant.
func TestChaos(t *testing.T) {
	leg := awstest.Emulator()
	p := chaos.DefaultParams
	ci := 8
	if leg == awstest.Moto {
		p.Sequential = true
		ci = 2
	}
	cfg := awstest.Config(t)
	// Open findings of the AWS home (see the README): not failures of
	// the run until fixed.
	parked := "about 1.5% of kumo schedules end with an eval parked (pending, or blocked with room on a node) and its " +
		"job short; the node cache's lost wake-up that made it 20% is fixed (d27e668), the rest is not diagnosed yet"
	open := map[string]string{chaos.InvEvalParked: parked, chaos.InvCount: parked}
	s := chaos.Suite{
		Name:    "aws/" + leg,
		Params:  p,
		CISeeds: ci,
		NewHome: func(t testing.TB, env *chaos.Env) chaos.Home {
			h, err := awschaos.New(context.Background(), cfg, fmt.Sprintf("%s-%d", awstest.Name("chaos"), tables.Add(1)), env,
				awschaos.Options{NoNodeCache: *noNodeCache})
			if err != nil {
				t.Fatal(err)
			}
			return h
		},
		Replay: "DROVER_EMULATORS=" + leg + " go test ./chaos/aws -run TestChaos -seed %d",
		Open:   open,
	}
	t.Run(leg, func(t *testing.T) { s.Run(t) })
}
