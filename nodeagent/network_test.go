package nodeagent

import (
	"reflect"
	"strings"
	"testing"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/drivers/mock"
	"github.com/drover-sched/drover/structs"
)

// The node fingerprints its host network: the address its allocs' ports
// are on (the loopback in dev mode, or the configured one), the dynamic
// port range (Nomad's 20000–32000 by default) and the reserved ports.
func TestFingerprintNetwork(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.DevMode = true
	a, err := New(newFakeCP(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := a.Node()
	hn := n.HostNetwork()
	if hn == nil || hn.IP != "127.0.0.1" || hn.Mode != structs.NetworkModeHost || n.Attributes["unique.network.ip-address"] != "127.0.0.1" {
		t.Fatalf("dev node network %+v, attribute %q", hn, n.Attributes["unique.network.ip-address"])
	}
	if lo, hi := n.DynamicPortRange(); lo != 20000 || hi != 32000 || n.NodeResources.MinDynamicPort != 20000 {
		t.Fatalf("default dynamic range %d-%d", lo, hi)
	}

	cfg = testConfig(t, t.TempDir())
	cfg.NetworkAddress, cfg.MinDynamicPort, cfg.MaxDynamicPort, cfg.ReservedPorts = "127.0.0.1", 21000, 21010, "22,8000-8001"
	a, err = New(newFakeCP(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n = a.Node()
	if lo, hi := n.DynamicPortRange(); lo != 21000 || hi != 21010 {
		t.Fatalf("configured dynamic range %d-%d", lo, hi)
	}
	if got := n.ReservedHostPorts(); len(got) != 3 || got[0] != 22 || got[2] != 8001 {
		t.Fatalf("reserved host ports %v", got)
	}

	for _, bad := range []struct {
		set  func(c *Config)
		want string
	}{
		{func(c *Config) { c.MinDynamicPort, c.MaxDynamicPort = 30000, 20000 }, "the minimum is above the maximum"},
		{func(c *Config) { c.MaxDynamicPort = 70000 }, "must be between 1 and 65535"},
		{func(c *Config) { c.ReservedPorts = "22,x" }, `reserved ports "22,x"`},
		{func(c *Config) { c.NetworkAddress = "localhost" }, "not an IP address"},
		{func(c *Config) { c.NetworkInterface = "no-such-if0" }, "no-such-if0"},
	} {
		c := testConfig(t, t.TempDir())
		bad.set(&c)
		if _, err := New(newFakeCP(), c); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("config %+v: err %v, want %q", c, err, bad.want)
		}
	}
}

// The task environment carries the alloc's ports as Nomad sets them for
// host networking.
func TestTaskEnvPorts(t *testing.T) {
	alloc := &structs.Allocation{ID: "a1b2c3d4-0000-0000-0000-000000000000", Name: "web.g[0]", JobID: "web", TaskGroup: "g",
		AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
			Ports: []structs.AllocatedPortMapping{
				{Label: "http", Value: 21005, HostIP: "10.1.2.3"},
				{Label: "db-admin", Value: 8080, To: 80, HostIP: "10.1.2.3"},
			}}}}
	env := buildTaskEnv(alloc, &structs.Task{Name: "t"}, AllocDir{}, TaskDir{}, nil, nil, drivers.FSIsolationNone, nil).vars
	for k, v := range map[string]string{
		"NOMAD_PORT_http": "21005", "NOMAD_HOST_PORT_http": "21005", "NOMAD_ALLOC_PORT_http": "21005",
		"NOMAD_IP_http": "10.1.2.3", "NOMAD_HOST_IP_http": "10.1.2.3",
		"NOMAD_ADDR_http": "10.1.2.3:21005", "NOMAD_HOST_ADDR_http": "10.1.2.3:21005",
		// to = 80: the task listens on 80 (a driver maps 8080 to it).
		"NOMAD_PORT_db_admin": "80", "NOMAD_ALLOC_PORT_db_admin": "80", "NOMAD_HOST_PORT_db_admin": "8080",
		"NOMAD_ADDR_db_admin": "10.1.2.3:8080",
	} {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
}

// In its own network namespace (bridge mode), the task also gets the
// namespace's address of each port, as Nomad sets NOMAD_ALLOC_IP_ and
// NOMAD_ALLOC_ADDR_; host-mode tasks do not.
func TestTaskEnvBridgePorts(t *testing.T) {
	alloc := &structs.Allocation{ID: "a1b2c3d4-0000-0000-0000-000000000000", Name: "web.g[0]", JobID: "web", TaskGroup: "g",
		AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
			Ports: []structs.AllocatedPortMapping{
				{Label: "http", Value: 21005, To: 8080, HostIP: "10.1.2.3"},
				{Label: "admin", Value: 21006, HostIP: "10.1.2.3"},
			}}}}
	iso := &drivers.NetworkIsolation{Mode: drivers.NetworkIsolationModeGroup, SandboxID: "c1", IP: "172.17.0.5"}
	env := buildTaskEnv(alloc, &structs.Task{Name: "t"}, AllocDir{}, TaskDir{}, nil, nil, drivers.FSIsolationImage, iso).vars
	for k, v := range map[string]string{
		"NOMAD_PORT_http": "8080", "NOMAD_HOST_PORT_http": "21005", "NOMAD_ALLOC_PORT_http": "8080",
		"NOMAD_ADDR_http": "10.1.2.3:21005", "NOMAD_ALLOC_IP_http": "172.17.0.5", "NOMAD_ALLOC_ADDR_http": "172.17.0.5:8080",
		"NOMAD_PORT_admin": "21006", "NOMAD_ALLOC_ADDR_admin": "172.17.0.5:21006",
	} {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	host := buildTaskEnv(alloc, &structs.Task{Name: "t"}, AllocDir{}, TaskDir{}, nil, nil, drivers.FSIsolationImage, nil).vars
	if v, ok := host["NOMAD_ALLOC_IP_http"]; ok {
		t.Errorf("host mode: NOMAD_ALLOC_IP_http = %q, want unset", v)
	}
}

// Drivers get the alloc's ports in the task config (docker maps them).
func TestDriversGetThePorts(t *testing.T) {
	t.Parallel()
	cp := newFakeCP()
	m := mock.New()
	startAgent(t, cp, mockAgentConfig(t, t.TempDir(), m))
	job := testJob(structs.JobTypeService, mockTask("web", map[string]any{"run_for": "1h"}))
	alloc := testAlloc(job)
	ports := []structs.AllocatedPortMapping{{Label: "http", Value: 21005, To: 8080, HostIP: "127.0.0.1"}}
	alloc.AllocatedResources.Shared.Ports = ports
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	cfg := m.Launched("web")
	if cfg == nil || !reflect.DeepEqual(cfg.Ports, ports) || cfg.Env["NOMAD_PORT_http"] != "8080" || cfg.Env["NOMAD_HOST_PORT_http"] != "21005" {
		t.Fatalf("launched with %+v", cfg)
	}
}
