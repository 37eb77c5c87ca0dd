package reconcile

import (
	"testing"

	"github.com/drover-sched/drover/structs"
)

// canaryWorld is a group web of count 1 wanting 2 canaries at version 1,
// whose running deployment d2 wants them and has placed the given ones.
func canaryWorld(placed ...string) *world {
	w := newWorld(group("web", 1, rolling(1, 2)))
	d := w.deployment("d2", structs.DeploymentStatusRunning, "web")
	d.TaskGroups["web"].DesiredCanaries = 2
	d.TaskGroups["web"].PlacedCanaries = placed
	return w
}

// TestOldAllocReplacedWhileCanaryingPlacesTheCanaries: while a deployment
// waits for its canaries, the replacement of an old-version alloc (failed,
// lost, or migrated off a drained node) is placed with the old version, so
// the rollout still has it to replace: the missing canaries are placed in
// the same evaluation, as they are when an old alloc stays to be updated.
// Before, a group whose only old alloc was being replaced had no
// destructive update, placed no canary, and once the replacement ran
// (outside the deployment) nothing evaluated the job again: the deployment
// waited for canaries it never placed (found by the chaos suite: `go test
// ./chaos -run TestChaos/embedded -seed 1810 -features canaries,drains`, a
// failed alloc; kumo seed 823, a drained one; Nomad 1.6 does the same).
func TestOldAllocReplacedWhileCanaryingPlacesTheCanaries(t *testing.T) {
	t.Run("failed", func(t *testing.T) {
		w := canaryWorld()
		w.alloc("o0", "web", 0, ver(0), failed)
		check(t, w, Reconcile(w.input()), outcome{
			stop:  l("o0"),
			place: l("web[0]/r/d<o0", "web[0]/c", "web[1]/c"),
		})
	})
	t.Run("migrated off a drained node, one canary running", func(t *testing.T) {
		// kumo seed 823: c1 ran on the drained node too and was migrated
		// (stopped, not replaced); c2 runs; the old o0 must move.
		w := canaryWorld("c1", "c2")
		w.alloc("o0", "web", 0, ver(0), onNode("n2"), migrateFlag)
		w.alloc("c1", "web", 0, onNode("n2"), migrateFlag, stopped, complete, inDeployment("d2", nil, true))
		w.alloc("c2", "web", 1, inDeployment("d2", healthy, true))
		w.draining("n2")
		check(t, w, Reconcile(w.input()), outcome{
			stop:  l("o0"),
			place: l("web[0]/d<o0", "web[0]/c"),
		})
	})
	t.Run("lost", func(t *testing.T) {
		w := canaryWorld()
		w.alloc("o0", "web", 0, ver(0), onNode("n2"))
		w.down("n2")
		check(t, w, Reconcile(w.input()), outcome{
			stop:  l("o0:lost"),
			place: l("web[0]/l/d<o0", "web[0]/c", "web[1]/c"),
		})
	})
	t.Run("an old alloc updated in place needs no canary", func(t *testing.T) {
		w := canaryWorld()
		w.alloc("o0", "web", 0, ver(0), failed, kind(UpdateInPlace))
		check(t, w, Reconcile(w.input()), outcome{
			stop:  l("o0"),
			place: l("web[0]/r/d<o0"),
		})
	})
}

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
