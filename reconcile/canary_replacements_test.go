package reconcile

import (
	"testing"

	"github.com/drover-sched/drover/structs"
)

// TestPromotedCanaryOfEarlierDeploymentMigratesAsNoCanary: an earlier
// deployment's promoted canary (it keeps its canary flag) that must leave a
// drained node is replaced by an ordinary alloc of its own version, not by
// a canary of the current deployment: the deployment has its 2 canaries,
// and a third one would share web[0] with c0 for good once promoted (found
// by the chaos suite: `go test ./chaos -run TestChaos/embedded -seed 1083
// -features canaries,drains` ended with two live allocs of one name; Nomad
// 1.6 passes the flag on).
func TestPromotedCanaryOfEarlierDeploymentMigratesAsNoCanary(t *testing.T) {
	w := newWorld(group("web", 2, rolling(1, 2)))
	w.job.Version = 2
	d := w.deployment("d2", structs.DeploymentStatusRunning, "web")
	d.TaskGroups["web"].DesiredCanaries = 2
	d.TaskGroups["web"].PlacedCanaries = []string{"c0", "c1"}
	w.alloc("p", "web", 0, ver(1), onNode("n2"), migrateFlag, inDeployment("d1", healthy, true))
	w.alloc("o1", "web", 1, ver(1))
	w.alloc("c0", "web", 0, inDeployment("d2", healthy, true))
	w.alloc("c1", "web", 1, inDeployment("d2", healthy, true))
	w.draining("n2")
	check(t, w, Reconcile(w.input()), outcome{
		stop:  l("p"),
		place: l("web[0]/d<p"),
	})
}
