package main

import (
	"testing"
	"time"
)

func TestSystemGC(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "gc.json", serviceJobJSON("collected", 1))), 0)
	mustCode(t, ta.run(t, "job", "stop", "collected"), 0)
	waitFor(t, 20*time.Second, "the job's allocations to stop", func() bool {
		allocs, _, _ := ta.client.Jobs().Allocations("collected", true, nil)
		for _, a := range allocs {
			if a.ClientStatus == "running" || a.ClientStatus == "pending" {
				return false
			}
		}
		return true
	})
	r := ta.run(t, "system", "gc")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Garbage collection complete")
	if _, _, err := ta.client.Jobs().Info("collected", nil); err == nil {
		t.Fatal("the stopped job survived system gc")
	}
	mustCode(t, ta.run(t, "system", "gc", "extra"), 1)
}
