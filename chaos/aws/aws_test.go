package awschaos_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/drover-sched/drover/chaos"
	awschaos "github.com/drover-sched/drover/chaos/aws"
	"github.com/drover-sched/drover/internal/awstest"
)

func TestMain(m *testing.M) {
	chaos.ExitOnBadFlags() // before awstest starts an emulator
	os.Exit(awstest.Main(m))
}

// TestBadFlagsRefusedBeforeEmulatorsStart: a bad chaos flag is refused
// before an emulator starts (it started kumo, then refused -seeds 0).
func TestBadFlagsRefusedBeforeEmulatorsStart(t *testing.T) {
	if chaos.Replaying() || flag.Lookup("seeds").Value.String() != "0" {
		t.Skip("checked on a plain run")
	}
	out, err := exec.Command(os.Args[0], "-test.run", "^TestChaos$", "-seeds", "0").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want status 2:\n%s", err, out)
	}
	if !strings.Contains(string(out), "-seeds 0: at least 1") || strings.Contains(string(out), "awstest: running the tests on") {
		t.Fatalf("refused after starting an emulator, or not naming -seeds:\n%s", out)
	}
}

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
