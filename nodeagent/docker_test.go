package nodeagent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	dockerdriver "github.com/drover-sched/drover/drivers/docker"
	"github.com/drover-sched/drover/internal/dockertest"
	"github.com/drover-sched/drover/structs"
)

func dockerTask(name, image string, args ...string) *structs.Task {
	cfgArgs := make([]any, len(args))
	for i, a := range args {
		cfgArgs[i] = a
	}
	return &structs.Task{Name: name, Driver: dockerdriver.Name,
		Config:      map[string]any{"image": image, "args": cfgArgs},
		KillTimeout: 2 * time.Second, Resources: &structs.Resources{CPU: 100, MemoryMB: 32}}
}

func dockerConfig(t *testing.T, dir string) Config {
	cfg := testConfig(t, dir)
	cfg.EnabledDrivers = []string{dockerdriver.Name}
	return cfg
}

// containersOf lists the containers labelled with allocID.
func containersOf(t *testing.T, cli *client.Client, allocID string) []string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", "drover.alloc_id="+allocID)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

// TestDockerPullFailureFailsTask: no registry answers here, so an absent
// image cannot be pulled: the task has a "Downloading image" driver
// event, then a Driver Failure naming the pull, and fails.
func TestDockerPullFailureFailsTask(t *testing.T) {
	t.Parallel()
	dockertest.Client(t)
	cp := newFakeCP()
	startAgent(t, cp, dockerConfig(t, t.TempDir()))
	task := dockerTask("web", "127.0.0.1:1/drover-absent-image:never")
	task.Config["image_pull_timeout"] = "20s"
	alloc := testAlloc(testJob(structs.JobTypeService, task))
	cp.addAlloc(alloc)
	st := cp.waitReport(t, alloc.ID, "failed", hasStatus(structs.AllocClientStatusFailed)).TaskStates["web"]
	if ev := findEvent(st, structs.TaskEventDriverMessage); ev == nil || ev.DisplayMessage != "Downloading image 127.0.0.1:1/drover-absent-image:never" {
		t.Errorf("driver event %+v in %v", ev, eventTypes(st))
	}
	ev := findEvent(st, structs.TaskDriverFailure)
	if ev == nil || !strings.Contains(ev.DriverError, "Failed to pull `127.0.0.1:1/drover-absent-image:never`") {
		t.Fatalf("Driver Failure %+v in %v", ev, eventTypes(st))
	}
	if !st.Failed || findEvent(st, structs.TaskNotRestarting) == nil {
		t.Fatalf("task state %+v events %v", st, eventTypes(st))
	}
}

// TestDockerReattachAfterAgentRestart: the container runs on while no
// agent runs; the next agent re-attaches by container ID (nothing re-run),
// and stopping the alloc removes its container.
func TestDockerReattachAfterAgentRestart(t *testing.T) {
	t.Parallel()
	image := dockertest.Image(t)
	cli := dockertest.Client(t)
	dir := t.TempDir()
	cp := newFakeCP()
	a1 := startAgent(t, cp, dockerConfig(t, dir))
	alloc := testAlloc(testJob(structs.JobTypeService, dockerTask("web", image, "sleep")))
	cp.addAlloc(alloc)
	t.Cleanup(func() {
		for _, id := range containersOf(t, cli, alloc.ID) {
			_, _ = cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
		}
	})
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	// Its stop signal is caught once it is ready: stopped before, it
	// would exit 2, not 0 (seen under load).
	waitFor(t, 20*time.Second, "the task ready", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "alloc", alloc.ID, "alloc", "logs", "web.stdout.0"))
		return string(b) == "ready\n"
	})
	before := containersOf(t, cli, alloc.ID)
	if len(before) != 1 {
		t.Fatalf("containers %v", before)
	}
	a1.stop(t)
	ins, err := cli.ContainerInspect(context.Background(), before[0], client.ContainerInspectOptions{})
	if err != nil || !ins.Container.State.Running {
		t.Fatalf("container stopped with the agent: %v", err)
	}
	cp.clearReports()

	startAgent(t, cp, dockerConfig(t, dir))
	rep := cp.waitReport(t, alloc.ID, "restored running", hasStatus(structs.AllocClientStatusRunning))
	if st := rep.TaskStates["web"]; st.Restarts != 0 || countEvents(st, structs.TaskStarted) != 1 {
		t.Fatalf("re-attach restarted the task: restarts %d, events %v", st.Restarts, eventTypes(st))
	}
	if after := containersOf(t, cli, alloc.ID); len(after) != 1 || after[0] != before[0] {
		t.Fatalf("containers after re-attach %v, before %v", after, before)
	}
	cp.stopAlloc(alloc.ID)
	rep = cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	if ev := findEvent(rep.TaskStates["web"], structs.TaskTerminated); ev == nil || ev.ExitCode != 0 {
		t.Errorf("Terminated %+v", ev)
	}
	waitFor(t, 10*time.Second, "the container removed", func() bool { return len(containersOf(t, cli, alloc.ID)) == 0 })
}

// TestDockerHostVolume: a docker task's volume_mount of a host volume is a
// bind mount in its container: what the task writes there is on the host.
func TestDockerHostVolume(t *testing.T) {
	t.Parallel()
	image := dockertest.Image(t)
	cli := dockertest.Client(t)
	dir := t.TempDir()
	vol := filepath.Join(dir, "vol")
	if err := os.MkdirAll(vol, 0o777); err != nil {
		t.Fatal(err)
	}
	cfg := dockerConfig(t, filepath.Join(dir, "data"))
	cfg.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"shared": {Name: "shared", Path: vol}}
	cp := newFakeCP()
	startAgent(t, cp, cfg)
	task := dockerTask("web", image, "write", "/data/out", "from the container")
	task.VolumeMounts = []*structs.VolumeMount{{Volume: "v", Destination: "/data"}}
	job := testJob(structs.JobTypeService, task)
	job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"v": {Name: "v", Type: structs.VolumeTypeHost, Source: "shared"}}
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	t.Cleanup(func() {
		for _, id := range containersOf(t, cli, alloc.ID) {
			_, _ = cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
		}
	})
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	waitFor(t, 10*time.Second, "the file on the host", func() bool {
		b, err := os.ReadFile(filepath.Join(vol, "out"))
		return err == nil && string(b) == "from the container"
	})
	cp.stopAlloc(alloc.ID)
	cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
}

// TestDockerBridgeGroup: a group in bridge mode gets a network namespace
// of its own (a pause container) before its tasks start; its two tasks
// share it — the proxy, on the alloc's host port mapped to 8080, reaches
// the app on localhost. A restarted agent re-attaches to all of it
// (nothing re-created); stopping the alloc removes every container of it,
// the pause container included.
func TestDockerBridgeGroup(t *testing.T) {
	t.Parallel()
	image := dockertest.Image(t)
	cli := dockertest.Client(t)
	dir := t.TempDir()
	cp := newFakeCP()
	a1 := startAgent(t, cp, dockerConfig(t, dir))
	app := dockerTask("app", image, "serve", "127.0.0.1:9000", "backend")
	proxy := dockerTask("proxy", image, "proxy", ":${NOMAD_PORT_http}", "http://127.0.0.1:9000/")
	proxy.Config["ports"] = []any{"http"}
	job := testJob(structs.JobTypeService, app, proxy)
	job.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: structs.NetworkModeBridge, Hostname: "web-${NOMAD_ALLOC_INDEX}",
		DynamicPorts: []structs.Port{{Label: "http", To: 8080}}}}
	alloc := testAlloc(job)
	host := freeTCPPort(t)
	alloc.AllocatedResources.Shared.Networks = []*structs.NetworkResource{{Mode: structs.NetworkModeBridge, IP: "127.0.0.1",
		DynamicPorts: []structs.Port{{Label: "http", Value: host, To: 8080}}}}
	alloc.AllocatedResources.Shared.Ports = []structs.AllocatedPortMapping{{Label: "http", Value: host, To: 8080, HostIP: "127.0.0.1"}}
	t.Cleanup(func() {
		for _, id := range containersOf(t, cli, alloc.ID) {
			_, _ = cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
		}
	})
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	url := fmt.Sprintf("http://127.0.0.1:%d/", host)
	answer := func() string {
		var body string
		waitFor(t, 30*time.Second, "the alloc's host port to answer", func() bool {
			resp, err := http.Get(url)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
			return resp.StatusCode == http.StatusOK
		})
		return body
	}
	if got := answer(); got != "proxied: backend \n" {
		t.Fatalf("%s answered %q", url, got)
	}
	before := containersOf(t, cli, alloc.ID)
	if len(before) != 3 {
		t.Fatalf("containers %v, want the pause container and two tasks", before)
	}
	// The network's hostname, interpolated, is every task's.
	for _, id := range before {
		ins, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ins.Container.Config.Hostname != "web-0" {
			t.Errorf("container %s has hostname %q, want web-0", ins.Container.Name, ins.Container.Config.Hostname)
		}
	}

	a1.stop(t)
	cp.clearReports()
	startAgent(t, cp, dockerConfig(t, dir))
	rep := cp.waitReport(t, alloc.ID, "restored running", hasStatus(structs.AllocClientStatusRunning))
	for _, name := range []string{"app", "proxy"} {
		if st := rep.TaskStates[name]; st.Restarts != 0 || countEvents(st, structs.TaskStarted) != 1 {
			t.Fatalf("re-attach restarted %s: restarts %d, events %v", name, st.Restarts, eventTypes(st))
		}
	}
	after := containersOf(t, cli, alloc.ID)
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Fatalf("containers after re-attach %v, before %v", after, before)
	}
	if got := answer(); got != "proxied: backend \n" {
		t.Fatalf("after the restart %s answered %q", url, got)
	}

	cp.stopAlloc(alloc.ID)
	cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	waitFor(t, 20*time.Second, "every container of the alloc removed", func() bool { return len(containersOf(t, cli, alloc.ID)) == 0 })
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
