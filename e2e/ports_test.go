package e2e

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/moby/moby/client"

	"github.com/drover-sched/drover/internal/dockertest"
)

var (
	testAppOnce sync.Once
	testAppBin  string
	testAppErr  error
)

// testApp builds, once, the small test program (internal/dockertest's
// testapp: `serve ADDR TEXT` answers HTTP with TEXT and $VERSION) next to
// the drover binary, for raw_exec tasks.
func testApp(t *testing.T) string {
	t.Helper()
	testAppOnce.Do(func() {
		testAppBin = filepath.Join(filepath.Dir(droverBin), "testapp")
		out, err := exec.Command("go", "build", "-o", testAppBin, "../internal/dockertest/testapp").CombinedOutput()
		if err != nil {
			testAppErr = err
			testAppBin = string(out)
		}
	})
	if testAppErr != nil {
		t.Fatalf("build testapp: %v: %s", testAppErr, testAppBin)
	}
	return testAppBin
}

// freePort returns a port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	_, p, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// TestRawExecDynamicPortAnswers: a raw_exec service asks for a dynamic
// port; the node's range is one free port, so the scheduler must give it
// that one. The task listens on NOMAD_ADDR_http and answers there, its
// environment has the port (NOMAD_HOST_PORT_http), the API shows the
// alloc's ports in Nomad's shapes, and a second job asking for the same
// port as a static one cannot be placed (the port is held).
func TestRawExecDynamicPortAnswers(t *testing.T) {
	app := testApp(t)
	port := freePort(t)
	a := startAgent(t, t.TempDir(), anyPort, "-min-dynamic-port", strconv.Itoa(port), "-max-dynamic-port", strconv.Itoa(port))
	c := a.client()
	t.Cleanup(func() { killLeftovers(app) })

	job := api.NewServiceJob("web", "web", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("server", "raw_exec").
		SetConfig("command", app).
		SetConfig("args", []string{"serve", "${NOMAD_ADDR_http}", "hello"}).
		Require(&api.Resources{CPU: ptr(50), MemoryMB: ptr(32)})
	task.Env = map[string]string{"VERSION": "${NOMAD_HOST_PORT_http}"}
	tg := api.NewTaskGroup("web", 1).AddTask(task)
	tg.Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "http"}}}}
	job.AddTaskGroup(tg)
	register(t, c, job)

	addr := "127.0.0.1:" + strconv.Itoa(port)
	want := "hello " + strconv.Itoa(port)
	waitFor(t, 30*time.Second, "the task answering on its dynamic port", func() bool { return answer(addr) == want })
	stubs, _, err := c.Jobs().Allocations("web", false, nil)
	if err != nil || len(stubs) != 1 {
		t.Fatalf("allocs %v %v", stubs, err)
	}
	alloc, _, err := c.Allocations().Info(stubs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	shared := alloc.AllocatedResources.Shared
	if len(shared.Ports) != 1 || shared.Ports[0].Label != "http" || shared.Ports[0].Value != port || shared.Ports[0].HostIP != "127.0.0.1" {
		t.Fatalf("alloc ports %+v", shared.Ports)
	}
	if len(shared.Networks) != 1 || shared.Networks[0].IP != "127.0.0.1" || len(shared.Networks[0].DynamicPorts) != 1 ||
		shared.Networks[0].DynamicPorts[0].Value != port {
		t.Fatalf("alloc networks %+v", shared.Networks)
	}

	// The same host port, asked for as a static port by another job: no
	// node has it free.
	other := api.NewServiceJob("clash", "clash", "global", 50)
	other.Datacenters = []string{"dc1"}
	otask := api.NewTask("server", "raw_exec").SetConfig("command", app).SetConfig("args", []string{"sleep"}).
		Require(&api.Resources{CPU: ptr(50), MemoryMB: ptr(32)})
	otg := api.NewTaskGroup("clash", 1).AddTask(otask)
	otg.Networks = []*api.NetworkResource{{ReservedPorts: []api.Port{{Label: "http", Value: port}}}}
	other.AddTaskGroup(otg)
	evalID := register(t, c, other)
	var ev *api.Evaluation
	waitFor(t, 20*time.Second, "the clashing job's evaluation", func() bool {
		ev, _, err = c.Evaluations().Info(evalID, nil)
		return err == nil && ev.Status == "complete"
	})
	m := ev.FailedTGAllocs["clash"]
	if m == nil || m.DimensionExhausted["network: reserved port collision http="+strconv.Itoa(port)] != 1 {
		t.Fatalf("clashing job: failed placements %+v", ev.FailedTGAllocs)
	}
}

// TestDockerDynamicPortRollingUpdate: a docker web service with a dynamic
// port mapped to 8080 in the container (`ports = ["http"]`), two allocs,
// updated one at a time: each alloc answers on its host port, and after
// the update the new allocs answer with the new version.
func TestDockerDynamicPortRollingUpdate(t *testing.T) {
	image := dockertest.Image(t)
	cli := dockertest.Client(t)
	a := startAgent(t, t.TempDir(), anyPort)
	c := a.client()
	const jobID = "docker-ports"
	t.Cleanup(func() {
		for _, id := range jobContainers(t, cli, jobID) {
			_, _ = cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
		}
	})
	job := func(version string) *api.Job {
		j := api.NewServiceJob(jobID, jobID, "global", 50)
		j.Datacenters = []string{"dc1"}
		task := api.NewTask("web", "docker").
			SetConfig("image", image).
			SetConfig("ports", []string{"http"}).
			SetConfig("args", []string{"serve", ":8080", "web"}).
			Require(&api.Resources{CPU: ptr(100), MemoryMB: ptr(32)})
		task.Env = map[string]string{"VERSION": version}
		task.KillTimeout = ptr(2 * time.Second)
		tg := api.NewTaskGroup("web", 2).AddTask(task)
		tg.Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "http", To: 8080}}}}
		tg.Update = &api.UpdateStrategy{MaxParallel: ptr(1), MinHealthyTime: ptr(500 * time.Millisecond),
			HealthyDeadline: ptr(time.Minute), ProgressDeadline: ptr(2 * time.Minute)}
		// A replacement may get the port its predecessor is giving up:
		// retry the start quickly until the old container is gone.
		tg.RestartPolicy = &api.RestartPolicy{Attempts: ptr(10), Interval: ptr(time.Minute), Delay: ptr(time.Second), Mode: ptr("fail")}
		j.AddTaskGroup(tg)
		return j
	}
	// answering returns the host addresses of the job's running allocs
	// that answer with text.
	answering := func(text string) int {
		stubs, _, err := c.Jobs().Allocations(jobID, false, nil)
		if err != nil {
			return 0
		}
		n := 0
		for _, s := range stubs {
			if s.DesiredStatus != "run" || s.ClientStatus != "running" {
				continue
			}
			alloc, _, err := c.Allocations().Info(s.ID, nil)
			if err != nil || len(alloc.AllocatedResources.Shared.Ports) != 1 {
				continue
			}
			p := alloc.AllocatedResources.Shared.Ports[0]
			if p.To == 8080 && answer(net.JoinHostPort(p.HostIP, strconv.Itoa(p.Value))) == text {
				n++
			}
		}
		return n
	}
	register(t, c, job("a"))
	waitFor(t, 90*time.Second, "both allocs answering on their host ports", func() bool { return answering("web a") == 2 })
	register(t, c, job("b"))
	waitFor(t, 180*time.Second, "both new allocs answering", func() bool { return answering("web b") == 2 })
	if _, _, err := c.Jobs().Deregister(jobID, false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "no container left", func() bool { return len(jobContainers(t, cli, jobID)) == 0 })
}

// TestSystemAndSysbatchAcrossClients: a system job and a sysbatch job on a
// cluster of one server and clients. Each client runs the system job's
// alloc; the sysbatch job runs once per client and is not run again when
// evaluated again; a client that joins later gets both; a drained client's
// system alloc is stopped and not replaced elsewhere.
func TestSystemAndSysbatchAcrossClients(t *testing.T) {
	cl := newCluster(t, time.Second)
	cl.addClient("alpha")
	daemon := taskScript(t, cl.dir, "daemon.sh", "while true; do sleep 1; done")
	once := taskScript(t, cl.dir, "once.sh", "echo ran")

	sys := api.NewSystemJob("node-agent", "node-agent", "global", 50)
	sys.Datacenters = []string{"dc1"}
	sys.AddTaskGroup(api.NewTaskGroup("agent", 1).AddTask(api.NewTask("agent", "raw_exec").SetConfig("command", daemon).
		Require(&api.Resources{CPU: ptr(20), MemoryMB: ptr(16)})))
	register(t, cl.c, sys)
	sb := api.NewSysbatchJob("inventory", "inventory", "global", 50)
	sb.Datacenters = []string{"dc1"}
	sb.AddTaskGroup(api.NewTaskGroup("scan", 1).AddTask(api.NewTask("scan", "raw_exec").SetConfig("command", once).
		Require(&api.Resources{CPU: ptr(20), MemoryMB: ptr(16)})))
	register(t, cl.c, sb)

	complete := func(job string) map[string]int {
		out := map[string]int{}
		for _, a := range cl.allocs(job) {
			if a.ClientStatus == "complete" {
				out[a.NodeName]++
			}
		}
		return out
	}
	waitFor(t, 30*time.Second, "the system alloc running and the sysbatch alloc complete on alpha", func() bool {
		return len(cl.running("node-agent")["alpha"]) == 1 && complete("inventory")["alpha"] == 1
	})

	cl.addClient("beta")
	waitFor(t, 30*time.Second, "beta's system alloc running and its sysbatch run complete", func() bool {
		r := cl.running("node-agent")
		return len(r["alpha"]) == 1 && len(r["beta"]) == 1 && complete("inventory")["beta"] == 1
	})
	// Evaluated again (registered again, unchanged), the sysbatch job
	// runs nowhere again.
	evalID := register(t, cl.c, sb)
	waitFor(t, 20*time.Second, "the re-registration's evaluation", func() bool {
		ev, _, err := cl.c.Evaluations().Info(evalID, nil)
		return err == nil && ev.Status == "complete"
	})
	if n := len(cl.allocs("inventory")); n != 2 {
		t.Fatalf("%d sysbatch allocs after an unchanged re-registration, want 2 (one per node)", n)
	}

	beta := cl.node("beta")
	if _, err := cl.c.Nodes().UpdateDrain(beta.ID, &api.DrainSpec{Deadline: time.Minute}, false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "beta's system alloc stopped, not replaced", func() bool {
		r := cl.running("node-agent")
		return len(r["alpha"]) == 1 && len(r["beta"]) == 0 && countAll(r) == 1
	})
	waitFor(t, 30*time.Second, "beta's drain complete", func() bool {
		n, _, err := cl.c.Nodes().Info(beta.ID, nil)
		return err == nil && !n.Drain && strings.EqualFold(n.SchedulingEligibility, "ineligible")
	})
}
