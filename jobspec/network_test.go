package jobspec

import (
	"reflect"
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
