package chaos_test

import (
	"path/filepath"
	"testing"

	"github.com/drover-sched/drover/chaos"
)

// embeddedSuite is the embedded home's suite: a fresh state file per
// schedule.
func embeddedSuite() chaos.Suite {
	return chaos.Suite{
		Name:    "embedded",
		CISeeds: 40,
		NewHome: func(t testing.TB, env *chaos.Env) chaos.Home {
			h, err := chaos.NewEmbedded(filepath.Join(t.TempDir(), "state.db"), env)
			if err != nil {
				t.Fatal(err)
			}
			return h
		},
		Replay: "go test ./chaos -run TestChaos/embedded -seed %d",
	}
}

// TestChaos plays the fixed CI seeds (or -seeds N, or -seed S) on the
// embedded home and fails on any broken invariant.
func TestChaos(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { embeddedSuite().Run(t) })
}
