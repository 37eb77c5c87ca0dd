package main

import (
	"testing"
	"time"
)

func TestJobStop(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "stopme.json", serviceJobJSON("stopme", 1))), 0)
	r := ta.run(t, "job", "stop", "-yes", "stop")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Monitoring evaluation", `finished with status "complete"`)
	job, _, err := ta.client.Jobs().Info("stopme", nil)
	if err != nil || job.Stop == nil || !*job.Stop {
		t.Fatalf("job not stopped: %v", err)
	}
	r = ta.run(t, "job", "stop", "-purge", "-detach", "stopme")
	mustCode(t, r, 0)
	waitFor(t, 20*time.Second, "the job to be purged", func() bool {
		_, _, err := ta.client.Jobs().Info("stopme", nil)
		return err != nil
	})
	r = ta.run(t, "job", "stop", "stopme")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error deregistering job: no job with prefix or id")
}
