package main

import (
	"strings"
	"testing"
	"time"
)

// serviceJobWithServices is a service job whose task registers "api" on
// a dynamic port with tags v1 and team-<job>.
func serviceJobWithServices(id string) string {
	return `{"Job": {"ID": "` + id + `", "Type": "service", "TaskGroups": [{"Name": "web", "Count": 1,
		"Networks": [{"DynamicPorts": [{"Label": "http"}]}],
		"Services": [{"Name": "${JOB}-api", "PortLabel": "http", "Tags": ["v1", "team-${NOMAD_JOB_NAME}"]}],
		"Tasks": [{"Name": "server", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["300"]},
		"Resources": {"CPU": 100, "MemoryMB": 32}, "KillTimeout": 1000000000}]}]}}`
}

// TestServiceCommands: a running job's service shows in `service list`
// and `service info` (and -json), `service delete` removes a registration,
// and stopping the job deregisters it.
func TestServiceCommands(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "s.json", serviceJobWithServices("shop"))), 0)
	waitFor(t, 30*time.Second, "the service to be registered", func() bool {
		return strings.Contains(ta.run(t, "service", "list").stdout, "shop-api")
	})
	r := ta.run(t, "service", "list")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Service Name", "Tags", "shop-api", "[team-shop,v1]")
	r = ta.run(t, "service", "list", "-namespace", "*")
	mustContain(t, r.stdout, "Namespace", "default")
	r = ta.run(t, "service", "info", "shop-api")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Job ID", "Address", "shop", "[v1,team-shop]")
	r = ta.run(t, "service", "info", "-tag", "v1", "-tag", "nope", "shop-api")
	mustContain(t, r.stdout, "No service registrations found")
	r = ta.run(t, "service", "info", "-json", "shop-api")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `"ServiceName": "shop-api"`, `"ID": "_nomad-task-`)
	id := between(r.stdout, `"ID": "`, `"`)
	r = ta.run(t, "service", "delete", "shop-api", id)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Successfully deleted service registration")
	mustContain(t, ta.run(t, "service", "info", "shop-api").stdout, "No service registrations found")
	r = ta.run(t, "service", "delete", "shop-api", id)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error deleting service registration")

	// A new run registers it again; stopping the job deregisters it.
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "s2.json", strings.Replace(serviceJobWithServices("shop"), `"v1"`, `"v2"`, 1))), 0)
	defer func() {
		if t.Failed() {
			t.Log(ta.run(t, "job", "status", "shop").stdout, ta.run(t, "service", "info", "-verbose", "shop-api").stdout)
		}
	}()
	waitFor(t, 30*time.Second, "the new version's registration", func() bool {
		return strings.Contains(ta.run(t, "service", "info", "shop-api").stdout, "[v2,team-shop]")
	})
	mustCode(t, ta.run(t, "job", "stop", "shop"), 0)
	waitFor(t, 30*time.Second, "deregistration on job stop", func() bool {
		return strings.Contains(ta.run(t, "service", "list").stdout, "No service registrations found")
	})
}

func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}
