package jobspec

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/drover-sched/drover/structs"
)

// A group network as `nomad job run -output` prints it: a static port, a
// dynamic one mapped with to, mode host.
const networkService = `{"Job": {
	"ID": "web",
	"TaskGroups": [{
		"Name": "web",
		"Networks": [{"Mode": "host", "Device": "", "CIDR": "", "IP": "", "Hostname": "", "MBits": 0, "DNS": null,
			"ReservedPorts": [{"Label": "admin", "Value": 8081, "To": 0, "HostNetwork": "default"}],
			"DynamicPorts": [{"Label": "http", "Value": 0, "To": 8080, "HostNetwork": ""}]}],
		"Tasks": [{"Name": "server", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["3600"]}}]
	}]
}}`

func TestGroupNetworkDecodes(t *testing.T) {
	got := decode(t, networkService).Job.TaskGroups[0].Networks
	want := []*structs.NetworkResource{{Mode: "host",
		ReservedPorts: []structs.Port{{Label: "admin", Value: 8081, HostNetwork: "default"}},
		DynamicPorts:  []structs.Port{{Label: "http", To: 8080}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("networks %+v, want %+v", got[0], want[0])
	}
	if labels := groupPortLabels(decode(t, networkService).Job.TaskGroups[0]); !reflect.DeepEqual(labels, []string{"admin", "http"}) {
		t.Fatalf("group port labels %v", labels)
	}
}

// System and sysbatch jobs are accepted with Nomad's defaults: no
// reschedule policy; system jobs get the default update strategy and the
// service restart policy, sysbatch jobs the batch restart policy and no
// update strategy.
func TestSystemJobsGetNomadDefaults(t *testing.T) {
	sys := decode(t, `{"Job": {"ID": "agent", "Type": "system", "TaskGroups": [{"Name": "agent",
		"Tasks": [{"Name": "a", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["3600"]}}]}]}}`).Job
	tg := sys.TaskGroups[0]
	if sys.Type != structs.JobTypeSystem || tg.Count != 1 || tg.ReschedulePolicy != nil {
		t.Fatalf("system job: type %s count %d reschedule %+v", sys.Type, tg.Count, tg.ReschedulePolicy)
	}
	if tg.Update == nil || tg.Update.MaxParallel != 1 || tg.RestartPolicy.Mode != structs.RestartPolicyModeFail || tg.RestartPolicy.Attempts != 2 {
		t.Fatalf("system job defaults: update %+v restart %+v", tg.Update, tg.RestartPolicy)
	}
	sb := decode(t, `{"Job": {"ID": "scan", "Type": "sysbatch", "TaskGroups": [{"Name": "scan", "Count": 2,
		"Tasks": [{"Name": "a", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}}`).Job
	tg = sb.TaskGroups[0]
	if sb.Type != structs.JobTypeSysBatch || tg.Count != 2 || tg.ReschedulePolicy != nil || tg.Update != nil || tg.RestartPolicy.Attempts != 3 {
		t.Fatalf("sysbatch job: type %s count %d reschedule %+v update %+v restart %+v", sb.Type, tg.Count, tg.ReschedulePolicy, tg.Update, tg.RestartPolicy)
	}
}

// A bridge-mode group of docker tasks is accepted (with the network's
// hostname and the tasks' ports, which the namespace publishes); a docker
// task in it that sets its own network options is refused, naming them.
func TestBridgeNetworkForDocker(t *testing.T) {
	const bridge = `{"Job": {"ID": "web", "TaskGroups": [{"Name": "web",
		"Networks": [{"Mode": "bridge", "Hostname": "web-1", "DynamicPorts": [{"Label": "http", "To": 8080}]}],
		"Tasks": [
			{"Name": "app", "Driver": "docker", "Config": {"image": "app:1", "ports": ["http"]}},
			{"Name": "sidecar", "Driver": "docker", "Config": {"image": "proxy:1"%s}}]}]}}`
	n := decode(t, fmt.Sprintf(bridge, "")).Job.TaskGroups[0].Networks[0]
	if n.Mode != structs.NetworkModeBridge || n.Hostname != "web-1" || len(n.DynamicPorts) != 1 || n.DynamicPorts[0].To != 8080 {
		t.Fatalf("bridge network decoded as %+v", n)
	}
	for _, c := range []struct{ opt, field string }{
		{`, "network_mode": "host"`, "network_mode"},
		{`, "hostname": "x"`, "hostname"},
		{`, "dns_servers": ["1.1.1.1"]`, "dns_servers"},
		{`, "extra_hosts": ["db:10.0.0.1"]`, "extra_hosts"},
	} {
		_, err := DecodeRegisterRequest(strings.NewReader(fmt.Sprintf(bridge, c.opt)))
		want := `Job.TaskGroups[0] "web".Tasks[1] "sidecar".Config.` + c.field + `: must not be set on a task whose group network is in bridge mode`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s in a bridge group: err %v, want %q", c.field, err, want)
		}
	}
	// A dns block is the namespace's resolver: kept, its servers checked;
	// in host mode it is refused.
	withDNS := strings.Replace(fmt.Sprintf(bridge, ""), `"Hostname": "web-1",`, `"Hostname": "web-1", "DNS": {"Servers": ["10.0.0.53"%s], "Searches": ["svc.example"], "Options": ["ndots:2"]},`, 1)
	n = decode(t, fmt.Sprintf(withDNS, "")).Job.TaskGroups[0].Networks[0]
	if d := n.DNS; d == nil || !reflect.DeepEqual(d.Servers, []string{"10.0.0.53"}) || !reflect.DeepEqual(d.Searches, []string{"svc.example"}) || !reflect.DeepEqual(d.Options, []string{"ndots:2"}) {
		t.Fatalf("dns block decoded as %+v", n.DNS)
	}
	if _, err := DecodeRegisterRequest(strings.NewReader(fmt.Sprintf(withDNS, `, "resolver"`))); err == nil ||
		!strings.Contains(err.Error(), `Networks[0].DNS.Servers[1]: must be an IP address (got "resolver")`) {
		t.Errorf("a dns server that is no address: %v", err)
	}
	hostDNS := strings.Replace(fmt.Sprintf(withDNS, ""), `"Mode": "bridge", "Hostname": "web-1", `, "", 1)
	if _, err := DecodeRegisterRequest(strings.NewReader(hostDNS)); err == nil || !strings.Contains(err.Error(), "Networks[0].DNS: a dns block is only supported in bridge networking") {
		t.Errorf("a dns block in host mode: %v", err)
	}
	// An interpolated hostname is checked on the node, once interpolated.
	decode(t, strings.Replace(fmt.Sprintf(bridge, ""), `"web-1"`, `"web-${NOMAD_ALLOC_INDEX}"`, 1))
	// Without a network block, or in host mode, the same options are fine.
	decode(t, strings.Replace(fmt.Sprintf(bridge, `, "network_mode": "host"`), `"Mode": "bridge", "Hostname": "web-1", `, "", 1))
}
