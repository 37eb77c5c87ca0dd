package main

import (
	"testing"
	"time"
)

func TestOperatorSchedulerConfig(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	r := ta.run(t, "operator", "scheduler", "get-config")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Scheduler Algorithm", "binpack", "Pause Eval Broker", "false")

	r = ta.run(t, "operator", "scheduler", "set-config", "-scheduler-algorithm", "spread")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Scheduler configuration updated!")
	r = ta.run(t, "operator", "scheduler", "get-config", "-t", "{{.SchedulerConfig.SchedulerAlgorithm}}")
	mustCode(t, r, 0)
	if r.stdout != "spread\n" {
		t.Fatalf("algorithm after set-config: %q", r.stdout)
	}
	r = ta.run(t, "operator", "scheduler", "set-config", "-scheduler-algorithm", "random")
	mustCode(t, r, 1)

	// Pausing the eval broker leaves a registration's evaluation pending.
	mustCode(t, ta.run(t, "operator", "scheduler", "set-config", "-pause-eval-broker", "true"), 0)
	r = ta.run(t, "job", "run", "-detach", writeFile(t, "p.json", serviceJobJSON("paused", 1)))
	mustCode(t, r, 0)
	time.Sleep(500 * time.Millisecond)
	if allocs, _, _ := ta.client.Jobs().Allocations("paused", false, nil); len(allocs) != 0 {
		t.Fatalf("an evaluation ran while the broker was paused")
	}
	mustCode(t, ta.run(t, "operator", "scheduler", "set-config", "-pause-eval-broker", "false"), 0)
	ta.allocsOf(t, "paused", 1)
	r = ta.run(t, "operator", "scheduler", "get-config", "-json")
	mustContain(t, r.stdout, `"PauseEvalBroker": false`, `"SchedulerAlgorithm": "spread"`)
}
