package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// TestServiceDiscoveryEndToEnd: with the real binary, a two-group job
// whose frontend renders the backend's instances (nomadService) sees the
// rendered file change when the backend scales from 1 to 2, Nomad's API
// lists the service, and stopping the job deregisters every instance.
func TestServiceDiscoveryEndToEnd(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir, anyPort)
	c := a.client()

	backend := api.NewTaskGroup("backend", 1).AddTask(rawExecTask("api", `while true; do sleep 1; done`))
	backend.Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "http"}}}}
	backend.Services = []*api.Service{{Name: "${JOB}-backend", PortLabel: "http", Tags: []string{"v1"}}}
	front := rawExecTask("web", `while true; do sleep 1; done`)
	front.Templates = []*api.Template{{
		DestPath: ptr("local/upstreams"), ChangeMode: ptr("noop"),
		EmbeddedTmpl: ptr(`{{ range nomadService "shop-backend" }}{{ .Address }}:{{ .Port }}` + "\n" + `{{ end }}`),
	}}
	job := api.NewServiceJob("shop", "shop", "global", 50)
	job.AddTaskGroup(backend)
	job.AddTaskGroup(api.NewTaskGroup("frontend", 1).AddTask(front))
	register(t, c, job)

	waitFor(t, 60*time.Second, "both groups running", func() bool { return count(allocsByStatus(t, c, "shop"), "run/running") == 2 })
	var frontID string
	stubs, _, err := c.Jobs().Allocations("shop", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stubs {
		if s.TaskGroup == "frontend" {
			frontID = s.ID
		}
	}
	rendered := filepath.Join(dir, "client", "alloc", frontID, "web", "local", "upstreams")
	lines := func() int {
		b, _ := os.ReadFile(rendered)
		return len(strings.Fields(string(b)))
	}
	waitFor(t, 60*time.Second, "the frontend's template lists one backend", func() bool { return lines() == 1 })

	list, _, err := c.Services().List(nil)
	if err != nil || len(list) != 1 || len(list[0].Services) != 1 || list[0].Services[0].ServiceName != "shop-backend" {
		t.Fatalf("service list: %+v, %v", list, err)
	}

	if _, _, err := c.Jobs().Scale("shop", "backend", ptr(2), "more backends", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the frontend's template lists two backends", func() bool { return lines() == 2 })
	regs, _, err := c.Services().Get("shop-backend", nil)
	if err != nil || len(regs) != 2 || regs[0].Port == regs[1].Port {
		t.Fatalf("instances: %+v, %v", regs, err)
	}
	b, _ := os.ReadFile(rendered)
	for _, r := range regs {
		if !strings.Contains(string(b), r.Address+":"+strconv.Itoa(r.Port)) {
			t.Fatalf("rendered %q lacks instance %s:%d", b, r.Address, r.Port)
		}
	}

	if _, _, err := c.Jobs().Deregister("shop", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "every instance deregistered on job stop", func() bool {
		regs, _, err := c.Services().Get("shop-backend", nil)
		return err == nil && len(regs) == 0
	})
}
