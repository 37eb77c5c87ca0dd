package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestJobHistoryAndRevert(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "v0.json", serviceJobJSON("hist", 1))), 0)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "v1.json", serviceJobJSON("hist", 2))), 0)

	r := ta.run(t, "job", "history", "his")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Version      = 1", "Version      = 0", "Stable       = true")
	r = ta.run(t, "job", "history", "-version", "0", "-json", "hist")
	mustCode(t, r, 0)
	var versions []struct{ Version uint64 }
	if err := json.Unmarshal([]byte(r.stdout), &versions); err != nil || len(versions) != 1 || versions[0].Version != 0 {
		t.Fatalf("-version 0 -json: %v\n%s", err, r.stdout)
	}

	r = ta.run(t, "job", "revert", "hist", "zero")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, `Job version "zero" is not a version number`)
	r = ta.run(t, "job", "revert", "hist", "0")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Monitoring evaluation", "Monitoring deployment", "successful")
	job, _, err := ta.client.Jobs().Info("hist", nil)
	if err != nil || *job.Version != 2 || *job.TaskGroups[0].Count != 1 {
		t.Fatalf("revert did not register version 0 again as version 2: %v", err)
	}
	r = ta.run(t, "job", "history", "hist")
	if !strings.Contains(r.stdout, "Version      = 2") {
		t.Fatalf("history after revert:\n%s", r)
	}
}
