package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/moby/moby/client"

	"github.com/drover-sched/drover/internal/dockertest"
)

// dockerServiceJob is a service answering HTTP on addr with text and
// $VERSION, from the test image, on the host's network (network_mode
// host: it listens on addr itself).
func dockerServiceJob(id, image, addr, text, version string) *api.Job {
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("web", "docker").
		SetConfig("image", image).
		SetConfig("network_mode", "host").
		SetConfig("args", []string{"serve", addr, text}).
		Require(&api.Resources{CPU: ptr(100), MemoryMB: ptr(32), MemoryMaxMB: ptr(64)})
	task.Env = map[string]string{"VERSION": version}
	task.KillTimeout = ptr(2 * time.Second)
	tg := api.NewTaskGroup("web", 1).AddTask(task)
	tg.Update = &api.UpdateStrategy{MaxParallel: ptr(1), MinHealthyTime: ptr(500 * time.Millisecond),
		HealthyDeadline: ptr(time.Minute), ProgressDeadline: ptr(2 * time.Minute)}
	job.AddTaskGroup(tg)
	return job
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func answer(addr string) string {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b))
}

// jobContainers lists the containers (running or not) of jobID.
func jobContainers(t *testing.T, cli *client.Client, jobID string) []string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", "drover.job_id="+jobID)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

// TestDockerServiceEndToEnd: with the real binary, a docker service job
// is placed and runs (its HTTP port answers), is updated (new args and
// env: a new container answers with them, the old one is gone) and
// stopped, leaving no container. The node fingerprints driver.docker and
// the agent's -docker-allow-privileged.
func TestDockerServiceEndToEnd(t *testing.T) {
	image := dockertest.Image(t)
	cli := dockertest.Client(t)
	a := startAgent(t, t.TempDir(), anyPort, "-docker-allow-privileged")
	c := a.client()
	const jobID = "docker-web"
	t.Cleanup(func() {
		for _, id := range jobContainers(t, cli, jobID) {
			_, _ = cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
		}
	})
	nodes, _, err := c.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes %v %v", nodes, err)
	}
	node, _, err := c.Nodes().Info(nodes[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := node.Drivers["docker"]; d == nil || !d.Healthy || node.Attributes["driver.docker.version"] == "" ||
		node.Attributes["driver.docker.privileged.enabled"] != "true" {
		t.Fatalf("docker fingerprint %+v, attributes %v", node.Drivers["docker"], node.Attributes)
	}

	addr := freeAddr(t)
	register(t, c, dockerServiceJob(jobID, image, addr, "v1", "a"))
	waitFor(t, 60*time.Second, "v1 answering", func() bool { return answer(addr) == "v1 a" })
	first := jobContainers(t, cli, jobID)
	if len(first) != 1 {
		t.Fatalf("containers %v", first)
	}

	register(t, c, dockerServiceJob(jobID, image, addr, "v2", "b"))
	waitFor(t, 90*time.Second, "v2 answering", func() bool { return answer(addr) == "v2 b" })
	waitFor(t, 30*time.Second, "only the new container", func() bool {
		ids := jobContainers(t, cli, jobID)
		return len(ids) == 1 && ids[0] != first[0]
	})

	if _, _, err := c.Jobs().Deregister(jobID, false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "no container left", func() bool { return len(jobContainers(t, cli, jobID)) == 0 })
	if got := answer(addr); got != "" {
		t.Fatalf("still answering %q after stop", got)
	}

	// A bridge-mode group on the same agent: the proxy, on the alloc's
	// dynamic host port mapped to 8080, reaches the backend over the
	// group's shared localhost; stopping the job leaves no container, the
	// namespace's pause container included.
	const bridgeID = "docker-bridge"
	t.Cleanup(func() {
		for _, id := range jobContainers(t, cli, bridgeID) {
			_, _ = cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
		}
	})
	register(t, c, dockerBridgeJob(bridgeID, image))
	var hostAddr string
	waitFor(t, 60*time.Second, "the bridge alloc's port", func() bool {
		allocs, _, err := c.Jobs().Allocations(bridgeID, false, nil)
		if err != nil || len(allocs) != 1 {
			return false
		}
		alloc, _, err := c.Allocations().Info(allocs[0].ID, nil)
		if err != nil || alloc.AllocatedResources == nil || len(alloc.AllocatedResources.Shared.Ports) != 1 {
			return false
		}
		p := alloc.AllocatedResources.Shared.Ports[0]
		if n := alloc.AllocatedResources.Shared.Networks; len(n) != 1 || n[0].Mode != "bridge" || p.To != 8080 {
			t.Fatalf("bridge alloc's network %+v, ports %+v", n, p)
		}
		hostAddr = net.JoinHostPort(p.HostIP, strconv.Itoa(p.Value))
		return true
	})
	waitFor(t, 60*time.Second, "the proxy answering with the backend", func() bool { return answer(hostAddr) == "proxied: backend" })
	if n := len(jobContainers(t, cli, bridgeID)); n != 3 {
		t.Fatalf("%d containers of the bridge job, want the pause container and two tasks", n)
	}
	if _, _, err := c.Jobs().Deregister(bridgeID, false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "no container of the bridge job left", func() bool { return len(jobContainers(t, cli, bridgeID)) == 0 })
}

// dockerBridgeJob is a bridge-mode group of two docker tasks: a backend on
// 127.0.0.1:9000 only, and a proxy to it on the group's port "http"
// (dynamic, mapped to 8080).
func dockerBridgeJob(id, image string) *api.Job {
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := func(name string, args ...string) *api.Task {
		t := api.NewTask(name, "docker").SetConfig("image", image).SetConfig("args", args).
			Require(&api.Resources{CPU: ptr(50), MemoryMB: ptr(32)})
		t.KillTimeout = ptr(2 * time.Second)
		return t
	}
	proxy := task("proxy", "proxy", ":${NOMAD_PORT_http}", "http://127.0.0.1:9000/").SetConfig("ports", []string{"http"})
	tg := api.NewTaskGroup("api", 1).AddTask(task("backend", "serve", "127.0.0.1:9000", "backend")).AddTask(proxy)
	tg.Networks = []*api.NetworkResource{{Mode: "bridge", DynamicPorts: []api.Port{{Label: "http", To: 8080}}}}
	job.AddTaskGroup(tg)
	return job
}

// TestDockerFigures measures the docker driver's figures for the README
// (not a pass/fail test; skipped unless DROVER_FIGURES=1):
//
//	DROVER_FIGURES=1 go test -run TestDockerFigures -v ./e2e/
//
// A server and one client agent (polling every 1 s over the HTTP API) run
// 10 docker service allocs of the test image (present), placed one at a
// time: the time from an alloc's commit to its container running, then
// the client agent's memory with the 10 containers running.
func TestDockerFigures(t *testing.T) {
	if os.Getenv("DROVER_FIGURES") != "1" {
		t.Skip("set DROVER_FIGURES=1 to measure")
	}
	image := dockertest.Image(t)
	cli := dockertest.Client(t)
	cl := newCluster(t, 10*time.Second)
	agentProc := cl.addClient("docker-figures")
	var lat []time.Duration
	for i := 0; i < 10; i++ {
		id := "docker-figures-" + strconv.Itoa(i)
		t.Cleanup(func() {
			for _, c := range jobContainers(t, cli, id) {
				_, _ = cli.ContainerRemove(context.Background(), c, client.ContainerRemoveOptions{Force: true})
			}
		})
		job := api.NewServiceJob(id, id, "global", 50)
		job.Datacenters = []string{"dc1"}
		job.AddTaskGroup(api.NewTaskGroup("web", 1).AddTask(api.NewTask("server", "docker").
			SetConfig("image", image).SetConfig("args", []string{"sleep"}).
			Require(&api.Resources{CPU: ptr(50), MemoryMB: ptr(16)})))
		register(t, cl.c, job)
		waitFor(t, 60*time.Second, id+" running", func() bool { return countAll(cl.running(id)) == 1 })
		a, _, err := cl.c.Allocations().Info(cl.allocs(id)[0].ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		lat = append(lat, a.TaskStates["server"].StartedAt.Sub(time.Unix(0, a.CreateTime)))
		time.Sleep(time.Duration(137*(i+1)%1000) * time.Millisecond)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	t.Logf("docker alloc committed → container running (10 allocs one by one, image present, poll interval 1 s): min %v, median %v, mean %v, max %v",
		lat[0].Round(time.Millisecond), lat[len(lat)/2].Round(time.Millisecond),
		(sum / time.Duration(len(lat))).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	time.Sleep(5 * time.Second) // settle
	mem := procMem(t, agentProc.Cmd.Process.Pid)
	t.Logf("client agent with 10 running docker allocs: RSS %.1f MiB (anonymous %.1f MiB)", mem["Rss"]/1024, mem["Anonymous"]/1024)
}
