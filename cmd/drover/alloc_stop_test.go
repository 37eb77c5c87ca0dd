package main

import (
	"testing"
	"time"
)

// TestAllocStop: the stopped allocation is replaced by the evaluation the
// stop creates, which the command monitors.
func TestAllocStop(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "s.json", serviceJobJSON("stopped", 1))), 0)
	a := ta.allocsOf(t, "stopped", 1)[0]
	r := ta.run(t, "alloc", "stop", a.ID[:8])
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Monitoring evaluation", `finished with status "complete"`, "created: node")
	waitFor(t, 20*time.Second, "the replacement", func() bool {
		allocs, _, _ := ta.client.Jobs().Allocations("stopped", false, nil)
		live := 0
		for _, x := range allocs {
			if x.ID != a.ID && x.DesiredStatus == "run" {
				live++
			}
		}
		old, _, _ := ta.client.Allocations().Info(a.ID, nil)
		return live == 1 && old.DesiredStatus == "stop"
	})
	r = ta.run(t, "alloc", "stop", "-detach", "ffffffff")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, `Error: no allocation with prefix or id "ffffffff" found`)
}
