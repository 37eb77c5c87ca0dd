package main

import "testing"

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

	// Pausing and resuming evaluation processing (what pausing does is the
	// server's, tested there).
	mustCode(t, ta.run(t, "operator", "scheduler", "set-config", "-pause-eval-broker", "true"), 0)
	r = ta.run(t, "operator", "scheduler", "get-config")
	mustContain(t, r.stdout, "Pause Eval Broker        = true")
	r = ta.run(t, "operator", "scheduler", "set-config", "-pause-eval-broker", "maybe")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, `-pause-eval-broker "maybe": use true or false`)
	mustCode(t, ta.run(t, "operator", "scheduler", "set-config", "-pause-eval-broker", "false"), 0)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "p.json", serviceJobJSON("resumed", 1))), 0)
	r = ta.run(t, "operator", "scheduler", "get-config", "-json")
	mustContain(t, r.stdout, `"PauseEvalBroker": false`, `"SchedulerAlgorithm": "spread"`)
}
