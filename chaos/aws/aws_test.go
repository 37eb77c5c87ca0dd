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
	}
	t.Run(leg, func(t *testing.T) { s.Run(t) })
}
