package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestAllocSignal: the task's trap sees the signal; a bad signal is the
// API's 400.
func TestAllocSignal(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	job := shellJobJSON(t, "signalled", `trap 'echo got-usr1' USR1; while true; do sleep 0.2; done`)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "s.json", job)), 0)
	a := ta.allocsOf(t, "signalled", 1)[0]
	r := ta.run(t, "alloc", "signal", "-s", "USR1", a.ID[:8])
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Sent USR1 to running tasks of allocation "+a.ID[:8])
	alloc, _, err := ta.client.Allocations().Info(a.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the trap's output", func() bool {
		rc, err := ta.client.AllocFS().Cat(alloc, "alloc/logs/server.stdout.0", nil)
		if err != nil {
			return false
		}
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		return strings.Contains(string(b), "got-usr1")
	})
	// -task wins over the argument, as in Nomad's CLI.
	r = ta.run(t, "alloc", "signal", "-s", "HUP", "-task", "server", a.ID[:8], "nope")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Sent HUP to task "server"`)
	r = ta.run(t, "alloc", "signal", "-s", "SIGNOPE", a.ID[:8], "server")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error signalling allocation", "400", `unknown signal "SIGNOPE"`)
}
