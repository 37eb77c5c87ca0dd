package main

import (
	"strconv"
	"testing"
)

func TestJobScale(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", "testdata/web.nomad.hcl"), 0)

	r := ta.run(t, "job", "scale", "web", "3")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Monitoring evaluation", `finished with status "complete"`)
	ta.allocsOf(t, "web", 3)
	r = ta.run(t, "job", "scale", "web")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Task Group", "Desired", "web ")

	r = ta.run(t, "job", "scale", "-detach", "web", "web", "1")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Job "web" task group "web" scaled to 1`, "Evaluation ID: ")
	job, _, err := ta.client.Jobs().Info("web", nil)
	if err != nil || *job.TaskGroups[0].Count != 1 {
		t.Fatalf("count after scale: %v", err)
	}
	stale := strconv.FormatUint(*job.JobModifyIndex-1, 10)
	r = ta.run(t, "job", "scale", "-check-index", stale, "web", "2")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error scaling job: ")
	r = ta.run(t, "job", "scale", "web", "many")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, `Count "many" is not a non-negative integer`)
	r = ta.run(t, "job", "scale", "web", "nogroup", "2")
	mustCode(t, r, 1)
}
