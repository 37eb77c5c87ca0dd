package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

type fakeConfig struct {
	cfg   *structs.SchedulerConfiguration
	reads int
}

func (f *fakeConfig) SchedulerConfig(context.Context) (*structs.SchedulerConfiguration, error) {
	f.reads++
	return f.cfg, nil
}

// TestPausedEvaluatorProcessesNothing: with PauseEvalBroker set, Process
// returns ErrPaused before it reads (or writes) anything.
func TestPausedEvaluatorProcessesNothing(t *testing.T) {
	src := &fakeConfig{cfg: &structs.SchedulerConfiguration{PauseEvalBroker: true}}
	e := &Evaluator{Config: &CachedConfig{Source: src}} // nil State: any read would panic
	if err := e.Process(context.Background(), "e1"); !errors.Is(err, ErrPaused) {
		t.Fatalf("paused: %v", err)
	}
}

// TestCachedConfigReadsOncePerTTL: the configuration is read from the
// store at most once per TTL, and again after Invalidate.
func TestCachedConfigReadsOncePerTTL(t *testing.T) {
	now := time.Unix(1000, 0)
	src := &fakeConfig{cfg: &structs.SchedulerConfiguration{SchedulerAlgorithm: structs.SchedulerAlgorithmSpread}}
	c := &CachedConfig{Source: src, TTL: time.Second, Now: func() time.Time { return now }}
	for i := 0; i < 3; i++ {
		if c.Get(context.Background()).SchedulerAlgorithm != structs.SchedulerAlgorithmSpread {
			t.Fatal("wrong config")
		}
	}
	if src.reads != 1 {
		t.Fatalf("reads within the TTL: %d", src.reads)
	}
	now = now.Add(2 * time.Second)
	c.Get(context.Background())
	c.Invalidate()
	c.Get(context.Background())
	if src.reads != 3 {
		t.Fatalf("reads after the TTL and an invalidation: %d", src.reads)
	}
	var none *CachedConfig
	if none.Paused(context.Background()) || none.Get(context.Background()).SchedulerAlgorithm != structs.SchedulerAlgorithmBinpack {
		t.Fatal("no configuration: not the default")
	}
}
