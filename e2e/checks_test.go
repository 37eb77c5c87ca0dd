package e2e

import (
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// TestDeploymentWaitsOnHTTPCheck: a service whose task starts serving on
// its port only after a few seconds, with an http check on that port and
// health_check = "checks" (the default). min_healthy_time is shorter than
// the wait, so the alloc would be healthy on task states alone: it must
// not be, and the deployment not successful, until the check passes;
// then the deployment succeeds, and the check's result is served at
// /v1/client/allocation/:id/checks.
func TestDeploymentWaitsOnHTTPCheck(t *testing.T) {
	app := testApp(t)
	port := freePort(t)
	a := startAgent(t, t.TempDir(), anyPort, "-min-dynamic-port", strconv.Itoa(port), "-max-dynamic-port", strconv.Itoa(port))
	c := a.client()
	t.Cleanup(func() { killLeftovers(app) })

	job := api.NewServiceJob("checked", "checked", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("server", "raw_exec").
		SetConfig("command", "/bin/sh").
		SetConfig("args", []string{"-c", "sleep 5; exec " + app + " serve ${NOMAD_ADDR_http} up"}).
		Require(&api.Resources{CPU: ptr(50), MemoryMB: ptr(32)})
	tg := api.NewTaskGroup("web", 1).AddTask(task)
	tg.Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "http"}}}}
	tg.Services = []*api.Service{{
		Name: "checked-web", PortLabel: "http", Provider: "nomad",
		Checks: []api.ServiceCheck{{Name: "alive", Type: "http", Path: "/", Interval: time.Second, Timeout: time.Second}},
	}}
	tg.Update = &api.UpdateStrategy{
		MaxParallel: ptr(1), MinHealthyTime: ptr(time.Second), HealthyDeadline: ptr(time.Minute),
		ProgressDeadline: ptr(2 * time.Minute),
	}
	job.AddTaskGroup(tg)
	register(t, c, job)

	addr := "127.0.0.1:" + strconv.Itoa(port)
	var allocID string
	waitFor(t, 30*time.Second, "the alloc running", func() bool {
		stubs, _, err := c.Jobs().Allocations("checked", false, nil)
		if err != nil || len(stubs) != 1 || stubs[0].ClientStatus != "running" {
			return false
		}
		allocID = stubs[0].ID
		return true
	})
	// Until the task answers, neither the alloc is healthy nor the
	// deployment successful (it would be after 1s on task states alone).
	sawFailing := false
	waitFor(t, 60*time.Second, "the task answering on its port", func() bool {
		if answer(addr) != "" {
			return true
		}
		a, _, err := c.Allocations().Info(allocID, nil)
		if err == nil && a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
			t.Fatalf("alloc health set to %v before its check could pass", *a.DeploymentStatus.Healthy)
		}
		if d, _, err := c.Jobs().LatestDeployment("checked", nil); err == nil && d != nil && d.Status == "successful" {
			t.Fatal("deployment successful before the check could pass")
		}
		if res, err := c.Allocations().Checks(allocID, nil); err == nil {
			for _, r := range res {
				if r.Check == "alive" && r.Status == "failure" {
					sawFailing = true
				}
			}
		}
		return false
	})
	if !sawFailing {
		t.Error("the check was never seen failing while the task did not answer")
	}
	waitFor(t, 60*time.Second, "the deployment successful", func() bool {
		d, _, err := c.Jobs().LatestDeployment("checked", nil)
		return err == nil && d != nil && d.Status == "successful"
	})
	res, err := c.Allocations().Checks(allocID, nil)
	if err != nil || len(res) != 1 {
		t.Fatalf("checks %+v: %v", res, err)
	}
	for id, r := range res {
		if r.ID != id || r.Check != "alive" || r.Service != "checked-web" || r.Group != "checked.web[0]" || r.Mode != "healthiness" ||
			r.Status != "success" || r.StatusCode != 200 || r.Timestamp == 0 {
			t.Fatalf("check result %+v", r)
		}
	}
}
