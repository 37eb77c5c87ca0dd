package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestAllocChecks: a task service's script check runs in the task; the
// command shows its result, as text and as Nomad's JSON; an alloc
// without checks says so.
func TestAllocChecks(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	job := `{"Job": {"ID": "checked", "Type": "service", "TaskGroups": [{"Name": "web", "Count": 1,
		"Tasks": [{"Name": "server", "Driver": "raw_exec", "Config": {"command": "/bin/sh", "args": ["-c", "while true; do sleep 0.2; done"]},
		"Resources": {"CPU": 100, "MemoryMB": 32}, "KillTimeout": 1000000000,
		"Services": [{"Name": "api", "Provider": "nomad", "Checks": [{"Name": "alive", "Type": "script", "Command": "/bin/sh",
			"Args": ["-c", "echo fine in $NOMAD_TASK_NAME"], "Interval": 1000000000, "Timeout": 5000000000}]}]}]}]}}`
	mustCode(t, ta.run(t, "job", "run", "-detach", writeFile(t, "c.json", job)), 0)
	a := ta.allocsOf(t, "checked", 1)[0]
	var out string
	waitFor(t, 30*time.Second, "the check passing", func() bool {
		r := ta.run(t, "alloc", "checks", a.ID[:8])
		out = r.stdout
		return r.code == 0 && strings.Contains(r.stdout, "success")
	})
	flat := regexp.MustCompile(` +`).ReplaceAllString(out, " ")
	mustContain(t, flat, "Status of 1 Nomad Service Checks\n", "Name = alive", "Group = checked.web[0]", "Task = server",
		"Service = api", "Status = success", "Mode = healthiness", "Output = fine in server")
	if strings.Contains(flat, "StatusCode") {
		t.Errorf("a script check's exit code 0 is shown: %s", out)
	}
	r := ta.run(t, "alloc", "checks", "-json", a.ID[:8])
	mustCode(t, r, 0)
	var res map[string]struct{ ID, Check, Status string }
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 1 {
		t.Fatalf("-json: %v %q", err, r.stdout)
	}
	for id, c := range res {
		if c.ID != id || c.Check != "alive" || c.Status != "success" {
			t.Fatalf("-json: %+v", res)
		}
	}

	mustCode(t, ta.run(t, "job", "run", "-detach", writeFile(t, "p.json", shellJobJSON(t, "plain", "while true; do sleep 0.2; done"))), 0)
	p := ta.allocsOf(t, "plain", 1)[0]
	waitFor(t, 30*time.Second, "the node running the plain alloc", func() bool {
		r = ta.run(t, "alloc", "checks", p.ID[:8])
		return r.code == 0
	})
	mustContain(t, r.stdout, "No service checks in allocation "+p.ID[:8])
}
