package main

import "testing"

func TestJobDeployments(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "v0.json", serviceJobJSON("deployed", 1))), 0)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "v1.json", serviceJobJSON("deployed", 2))), 0)
	ds, _, err := ta.client.Jobs().Deployments("deployed", false, nil)
	if err != nil || len(ds) != 2 {
		t.Fatalf("deployments: %v %d", err, len(ds))
	}
	r := ta.run(t, "job", "deployments", "deployed")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Job Version", ds[0].ID[:8], ds[1].ID[:8], "successful")
	r = ta.run(t, "job", "deployments", "-latest", "deployed")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Job Version  = 1", "Deployed")
	r = ta.run(t, "job", "deployments", "-latest", "-t", "{{.JobVersion}}", "deployed")
	mustCode(t, r, 0)
	if r.stdout != "1\n" {
		t.Fatalf("-t: %q", r.stdout)
	}
}
