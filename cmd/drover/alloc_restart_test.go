package main

import (
	"encoding/json"
	"testing"
	"time"
)

// shellJobJSON is a one-alloc raw_exec service job whose task "server"
// runs script with /bin/sh -c.
func shellJobJSON(t *testing.T, id, script string) string {
	t.Helper()
	s, err := json.Marshal(script)
	if err != nil {
		t.Fatal(err)
	}
	return `{"Job": {"ID": "` + id + `", "Type": "service", "TaskGroups": [{"Name": "web", "Count": 1,
		"Update": {"MaxParallel": 1, "MinHealthyTime": 100000000, "HealthyDeadline": 20000000000, "ProgressDeadline": 30000000000},
		"Tasks": [{"Name": "server", "Driver": "raw_exec", "Config": {"command": "/bin/sh", "args": ["-c", ` + string(s) + `]},
		"Resources": {"CPU": 100, "MemoryMB": 32}, "KillTimeout": 1000000000}]}]}}`
}

// TestAllocRestart: the task restarts in place, counted as a restart;
// a task the allocation lacks is an error naming it.
func TestAllocRestart(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "r.json", serviceJobJSON("restarted", 1))), 0)
	a := ta.allocsOf(t, "restarted", 1)[0]
	r := ta.run(t, "alloc", "restart", a.ID[:8], "server")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Restarting task "server" of allocation `+a.ID[:8])
	waitFor(t, 20*time.Second, "the task restarted", func() bool {
		x, _, err := ta.client.Allocations().Info(a.ID, nil)
		st := x.TaskStates["server"]
		return err == nil && st != nil && st.Restarts == 1 && st.State == "running" && x.ClientStatus == "running"
	})
	r = ta.run(t, "alloc", "restart", "-all-tasks", a.ID[:8])
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Restarting running tasks")

	r = ta.run(t, "alloc", "restart", a.ID[:8], "db")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, `Error: could not find task named "db"`)
	r = ta.run(t, "alloc", "restart", "-task", "server", "-all-tasks", a.ID[:8])
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "-all-tasks cannot be combined")
}
