package docker

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/internal/dockertest"
	"github.com/drover-sched/drover/internal/drivertest"
	"github.com/drover-sched/drover/structs"
)

// The pause program is a real executable of this machine's architecture
// that keeps running until it is killed.
func TestPauseBinaryWaits(t *testing.T) {
	if _, err := pauseBinary("mips"); err == nil {
		t.Fatal("a pause program for an unknown architecture")
	}
	bin, err := pauseBinary(goarch())
	if err != nil {
		t.Skipf("no pause program here: %v", err)
	}
	path := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("the pause program exited: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Bridge networking: the alloc's pause container publishes its host port
// into the namespace; two task containers joining it talk over localhost
// (the proxy reaches the app, which listens on 127.0.0.1 only), and the
// host port reaches the proxy. CreateNetwork again returns the same
// namespace; DestroyNetwork removes the pause container, and again does
// nothing.
func TestBridgeNetworkSharedByTasks(t *testing.T) {
	t.Parallel()
	image := dockertest.Image(t)
	d := newDriver(t, drivers.Options{})
	ctx := context.Background()
	host := freePort(t)
	app := drivertest.TaskConfig(t, "app", map[string]any{"image": image, "args": []any{"serve", "127.0.0.1:9000", "backend"}})
	allocID := app.AllocID
	req := &drivers.NetworkCreateRequest{AllocID: allocID, JobID: "web", Namespace: "default", TaskGroup: "web", Hostname: "web-1",
		DNS:   &structs.DNSConfig{Servers: []string{"10.0.0.53"}, Searches: []string{"svc.example"}, Options: []string{"ndots:2"}},
		Ports: []structs.AllocatedPortMapping{{Label: "http", Value: host, To: 8080, HostIP: "127.0.0.1"}}}
	iso, err := d.CreateNetwork(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyNetwork(context.Background(), allocID) })
	if iso.Mode != drivers.NetworkIsolationModeGroup || iso.SandboxID == "" || net.ParseIP(iso.IP) == nil {
		t.Fatalf("isolation %+v", iso)
	}
	again, err := d.CreateNetwork(ctx, req)
	if err != nil || again.SandboxID != iso.SandboxID {
		t.Fatalf("CreateNetwork again: %+v, %v; want the same sandbox %s", again, err, iso.SandboxID)
	}

	app.Network = iso
	app.Ports = req.Ports
	start(t, d, app)
	proxy := drivertest.TaskConfig(t, "proxy", map[string]any{"image": image, "args": []any{"proxy", ":8080", "http://127.0.0.1:9000/"}, "ports": []any{"http"}})
	proxy.AllocID, proxy.Network, proxy.Ports = allocID, iso, req.Ports
	h := start(t, d, proxy)
	ins, err := d.client.ContainerInspect(ctx, containerID(t, h), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(ins.Container.HostConfig.NetworkMode); got != "container:"+iso.SandboxID {
		t.Fatalf("task network mode %q, want container:%s", got, iso.SandboxID)
	}
	if ins.Container.Config.Hostname != "web-1" {
		t.Errorf("task hostname %q, want the network's web-1", ins.Container.Config.Hostname)
	}
	// The task's resolv.conf is the namespace's, from the dns block.
	resolv, err := os.ReadFile(ins.Container.ResolvConfPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nameserver 10.0.0.53", "search svc.example", "options ndots:2"} {
		if !strings.Contains(string(resolv), want) {
			t.Errorf("the task's resolv.conf lacks %q:\n%s", want, resolv)
		}
	}

	url := "http://127.0.0.1:" + strconv.Itoa(host) + "/"
	var body string
	drivertest.WaitFor(t, 30*time.Second, "the host port to reach the app through the proxy", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	})
	if body != "proxied: backend \n" {
		t.Fatalf("%s answered %q", url, body)
	}

	for _, cfg := range []*drivers.TaskConfig{proxy, app} {
		if err := d.Destroy(ctx, cfg.ID, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.DestroyNetwork(ctx, allocID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.client.ContainerInspect(ctx, iso.SandboxID, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Fatalf("the pause container is still there: %v", err)
	}
	if err := d.DestroyNetwork(ctx, allocID); err != nil {
		t.Fatalf("DestroyNetwork of a removed namespace: %v", err)
	}
}

// A task that joins a namespace publishes no ports of its own and may not
// bring its own network settings.
func TestBridgeTaskOptions(t *testing.T) {
	d := &Driver{}
	cfg := &drivers.TaskConfig{Name: "app", AllocID: "a1", Network: &drivers.NetworkIsolation{Mode: drivers.NetworkIsolationModeGroup, SandboxID: "p1"},
		Ports: []structs.AllocatedPortMapping{{Label: "http", Value: 21001, To: 8080, HostIP: "127.0.0.1"}}}
	opts, err := d.createOptions(cfg, &TaskConfig{Image: "x", Ports: []string{"http"}})
	if err != nil {
		t.Fatal(err)
	}
	if opts.HostConfig.NetworkMode != "container:p1" || len(opts.HostConfig.PortBindings) != 0 || len(opts.Config.ExposedPorts) != 0 {
		t.Fatalf("network mode %q, bindings %v, exposed %v", opts.HostConfig.NetworkMode, opts.HostConfig.PortBindings, opts.Config.ExposedPorts)
	}
	if _, err := d.createOptions(cfg, &TaskConfig{Image: "x", NetworkMode: "host"}); err == nil {
		t.Fatal("network_mode accepted in a bridge group")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func goarch() string { return runtime.GOARCH }
