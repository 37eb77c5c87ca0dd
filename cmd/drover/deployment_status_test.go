package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// canaryJobJSON is serviceJobJSON with one canary per update and
// args[0] as the task's sleep time (change it for a destructive update).
func canaryJobJSON(id, sleep string) string {
	return `{"Job": {"ID": "` + id + `", "Type": "service", "TaskGroups": [{"Name": "web", "Count": 2,
		"Update": {"MaxParallel": 1, "Canary": 1, "MinHealthyTime": 100000000, "HealthyDeadline": 20000000000, "ProgressDeadline": 60000000000},
		"Tasks": [{"Name": "server", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["` + sleep + `"]},
		"Resources": {"CPU": 100, "MemoryMB": 32}, "KillTimeout": 1000000000}]}]}}`
}

// canaryDeployment registers a job, then a destructive update of it, and
// returns the update's deployment once its canary is healthy and it waits
// for promotion.
func (ta *testAgent) canaryDeployment(t *testing.T, id string) *api.Deployment {
	t.Helper()
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "v0.json", canaryJobJSON(id, "300"))), 0)
	mustCode(t, ta.run(t, "job", "run", "-detach", writeFile(t, "v1.json", canaryJobJSON(id, "301"))), 0)
	var d *api.Deployment
	waitFor(t, 20*time.Second, "the canary to be healthy", func() bool {
		var err error
		d, _, err = ta.client.Jobs().LatestDeployment(id, nil)
		return err == nil && d != nil && d.JobVersion == 1 && d.TaskGroups["web"].HealthyAllocs == 1
	})
	return d
}

func TestDeploymentStatusAndList(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	r := ta.run(t, "deployment", "list")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "No deployments found")
	d := ta.canaryDeployment(t, "canary")

	r = ta.run(t, "deployment", "list")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Job Version", d.ID[:8], "canary", "running")
	// The old form: status without an argument lists.
	r = ta.run(t, "deployment", "status")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, d.ID[:8], "successful")

	r = ta.run(t, "deployment", "status", d.ID[:5])
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "ID           = "+d.ID[:8], "Job Version  = 1", "Status       = running", "Deployed",
		"Promoted", "Canaries", "false")
	r = ta.run(t, "deployment", "status", "-verbose", d.ID)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "ID           = "+d.ID, "Allocations")
	r = ta.run(t, "deployment", "status", "-json", d.ID)
	mustCode(t, r, 0)
	var got api.Deployment
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.ID != d.ID {
		t.Fatalf("-json: %v\n%s", err, r.stdout)
	}
	r = ta.run(t, "deployment", "list", "-t", "{{range .}}{{.JobVersion}} {{end}}")
	mustCode(t, r, 0)
	if strings.TrimSpace(r.stdout) != "1 0" {
		t.Fatalf("-t: %q", r.stdout)
	}
	r = ta.run(t, "deployment", "status", "ab")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, `Error: no deployment with prefix or id "ab" found`)
}
