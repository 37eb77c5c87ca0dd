package docker

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/network"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/internal/dockertest"
	"github.com/drover-sched/drover/internal/drivertest"
	"github.com/drover-sched/drover/structs"
)

// portBindings publishes each named port's host port on the node's
// address, to its `to` inside the container (or the same number), for TCP
// and UDP; a label the alloc lacks is an error naming it.
func TestPortBindings(t *testing.T) {
	cfg := &drivers.TaskConfig{Ports: []structs.AllocatedPortMapping{
		{Label: "http", Value: 21001, To: 8080, HostIP: "127.0.0.1"},
		{Label: "admin", Value: 21002, HostIP: "127.0.0.1"},
		{Label: "unused", Value: 21003, HostIP: "127.0.0.1"},
	}}
	exposed, bindings, err := portBindings(cfg, &TaskConfig{Ports: []string{"http", "admin"}})
	if err != nil {
		t.Fatal(err)
	}
	for inside, host := range map[string]string{"8080/tcp": "21001", "8080/udp": "21001", "21002/tcp": "21002", "21002/udp": "21002"} {
		p := network.MustParsePort(inside)
		if _, ok := exposed[p]; !ok {
			t.Errorf("%s not exposed (%v)", inside, exposed)
		}
		if b := bindings[p]; len(b) != 1 || b[0].HostPort != host || b[0].HostIP.String() != "127.0.0.1" {
			t.Errorf("%s bound to %+v, want 127.0.0.1:%s", inside, b, host)
		}
	}
	if len(exposed) != 4 {
		t.Errorf("exposed %v: the unnamed port must not be published", exposed)
	}
	if _, _, err := portBindings(cfg, &TaskConfig{Ports: []string{"db"}}); err == nil || !strings.Contains(err.Error(), `"db"`) {
		t.Fatalf("unknown label: %v", err)
	}
}

// A container's mapped port answers on the alloc's host port.
func TestMappedPortAnswers(t *testing.T) {
	t.Parallel()
	image := dockertest.Image(t)
	d := newDriver(t, drivers.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := drivertest.TaskConfig(t, "app", map[string]any{"image": image, "args": []any{"serve", ":8080", "mapped"}, "ports": []any{"http"}})
	cfg.Ports = []structs.AllocatedPortMapping{{Label: "http", Value: host, To: 8080, HostIP: "127.0.0.1"}}
	start(t, d, cfg)
	url := "http://127.0.0.1:" + strconv.Itoa(host) + "/"
	var body string
	drivertest.WaitFor(t, 30*time.Second, "the mapped port to answer", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	})
	if !strings.HasPrefix(body, "mapped") {
		t.Fatalf("%s answered %q", url, body)
	}
}
