package reconcile

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

// scenario is one named reconciler case: a world, the exact outcome, and
// optionally more checks on the result.
type scenario struct {
	name  string
	world func() *world
	want  outcome
	more  func(t *testing.T, res *Result)
}

// runScenarios runs a family of scenarios as subtests.
func runScenarios(t *testing.T, family []scenario) {
	t.Helper()
	for _, sc := range family {
		t.Run(sc.name, func(t *testing.T) {
			w := sc.world()
			res := Reconcile(w.input())
			check(t, w, res, sc.want)
			if sc.more != nil {
				sc.more(t, res)
			}
		})
	}
}

// counters checks the desired-update counters of a group.
func counters(group string, want DesiredUpdates) func(t *testing.T, res *Result) {
	return func(t *testing.T, res *Result) {
		t.Helper()
		got := res.DesiredTGUpdates[group]
		if got == nil || *got != want {
			t.Errorf("counters of %s: want %+v, got %+v", group, want, got)
		}
	}
}

// both runs two extra checks.
func both(a, b func(*testing.T, *Result)) func(*testing.T, *Result) {
	return func(t *testing.T, res *Result) { a(t, res); b(t, res) }
}

func TestPlacementAndScale(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "fresh job places every name",
			world: func() *world { return newWorld(group("web", 3)) },
			want:  outcome{place: l("web[0]", "web[1]", "web[2]")},
			more:  counters("web", DesiredUpdates{Place: 3})},
		{name: "fresh job with an update strategy starts a deployment",
			world: func() *world { return newWorld(group("web", 3, rolling(1, 0))) },
			want:  outcome{place: l("web[0]", "web[1]", "web[2]"), deployment: "new"}},
		{name: "count zero places nothing",
			world: func() *world { return newWorld(group("web", 0)) },
			want:  outcome{},
			more:  counters("web", DesiredUpdates{})},
		{name: "all names running: nothing to do",
			world: func() *world { w := newWorld(group("web", 3)); w.run("a", "web", 3); return w },
			want:  outcome{},
			more:  counters("web", DesiredUpdates{Ignore: 3})},
		{name: "scale up takes the lowest free names",
			world: func() *world { w := newWorld(group("web", 5)); w.run("a", "web", 2); return w },
			want:  outcome{place: l("web[2]", "web[3]", "web[4]")}},
		{name: "scale up fills gaps first",
			world: func() *world {
				w := newWorld(group("web", 5))
				w.alloc("a0", "web", 0)
				w.alloc("a2", "web", 2)
				w.alloc("a5", "web", 5)
				return w
			},
			want: outcome{place: l("web[1]", "web[3]")}},
		{name: "scale down stops the highest names",
			world: func() *world { w := newWorld(group("web", 3)); w.run("a", "web", 5); return w },
			want:  outcome{stop: l("a3", "a4")},
			more:  counters("web", DesiredUpdates{Stop: 2, Ignore: 3})},
		{name: "scale down with gaps stops the highest names",
			world: func() *world {
				w := newWorld(group("web", 2))
				for _, i := range []uint{0, 2, 4, 6} {
					w.alloc("a"+string(rune('0'+i)), "web", i)
				}
				return w
			},
			want: outcome{stop: l("a4", "a6")}},
		{name: "scale to zero stops everything",
			world: func() *world { w := newWorld(group("web", 0)); w.run("a", "web", 3); return w },
			want:  outcome{stop: l("a0", "a1", "a2")}},
		{name: "duplicate names: stop exactly running minus count, highest name first",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0)
				w.alloc("b0", "web", 0)
				w.alloc("a1", "web", 1)
				return w
			},
			want: outcome{stop: l("a1")}},
		{name: "duplicate of one name over count: one of them stops",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.alloc("a0", "web", 0)
				w.alloc("b0", "web", 0)
				return w
			},
			want: outcome{stop: l("b0")}},
		{name: "duplicates: the older job version stops first",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.alloc("a0", "web", 0)
				w.alloc("b0", "web", 0, ver(0))
				return w
			},
			want: outcome{stop: l("b0")}},
		{name: "duplicates below count: place the missing name",
			world: func() *world {
				w := newWorld(group("web", 3))
				w.alloc("a0", "web", 0)
				w.alloc("b0", "web", 0)
				return w
			},
			want: outcome{place: l("web[1]")}},
		{name: "complete service alloc does not count",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0)
				w.alloc("a1", "web", 1, complete)
				return w
			},
			want: outcome{place: l("web[1]")}},
		{name: "server-stopped alloc does not count",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0)
				w.alloc("a1", "web", 1, stopped)
				return w
			},
			want: outcome{place: l("web[1]")}},
		{name: "lost alloc does not count",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0)
				w.alloc("a1", "web", 1, lostStatus)
				return w
			},
			want: outcome{place: l("web[1]")}},
		{name: "failed alloc that may not be rescheduled still counts",
			world: func() *world {
				w := newWorld(group("web", 1, noResched))
				w.alloc("a0", "web", 0, failed)
				return w
			},
			want: outcome{}},
		{name: "pending allocs count",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0, pending)
				w.alloc("a1", "web", 1)
				return w
			},
			want: outcome{}},
		{name: "new group gets placed",
			world: func() *world {
				w := newWorld(group("web", 2), group("api", 1))
				w.run("a", "web", 2)
				return w
			},
			want: outcome{place: l("api[0]")},
			more: counters("api", DesiredUpdates{Place: 1})},
		{name: "groups scale independently",
			world: func() *world {
				w := newWorld(group("web", 1), group("api", 2))
				w.run("w", "web", 2)
				w.run("p", "api", 1)
				return w
			},
			want: outcome{stop: l("w1"), place: l("api[1]")}},
		{name: "an out-of-range name counts and low names are placed",
			world: func() *world { w := newWorld(group("web", 2)); w.alloc("a7", "web", 7); return w },
			want:  outcome{place: l("web[0]")}},
		{name: "scale down keeps low names despite a gap",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0)
				w.alloc("a3", "web", 3)
				w.alloc("a4", "web", 4)
				return w
			},
			want: outcome{stop: l("a4")}},
		{name: "scale up next to terminal allocs reuses their names",
			world: func() *world {
				w := newWorld(group("web", 3))
				w.alloc("a0", "web", 0, complete)
				w.alloc("a1", "web", 1)
				return w
			},
			want: outcome{place: l("web[0]", "web[2]")}},
		{name: "scale down ignores terminal allocs",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.alloc("a0", "web", 0)
				w.alloc("a1", "web", 1, complete)
				w.alloc("a2", "web", 2, stopped)
				return w
			},
			want: outcome{}},
	})
}

func TestStopAndPurge(t *testing.T) {
	stoppedJob := func(w *world) *world { w.job.Stop = true; return w }
	runScenarios(t, []scenario{
		{name: "stopped job stops every running alloc",
			world: func() *world { w := newWorld(group("web", 3)); w.run("a", "web", 3); return stoppedJob(w) },
			want:  outcome{stop: l("a0", "a1", "a2")},
			more:  counters("web", DesiredUpdates{Stop: 3})},
		{name: "purged job stops every running alloc",
			world: func() *world { w := newWorld(group("web", 2)); w.run("a", "web", 2); w.purged = true; return w },
			want:  outcome{stop: l("a0", "a1")}},
		{name: "stopped job leaves terminal allocs alone",
			world: func() *world {
				w := newWorld(group("web", 3))
				w.alloc("a0", "web", 0)
				w.alloc("a1", "web", 1, complete)
				w.alloc("a2", "web", 2, stopped)
				return stoppedJob(w)
			},
			want: outcome{stop: l("a0")},
			more: counters("web", DesiredUpdates{Stop: 1})},
		{name: "stopped job marks allocs on down nodes lost",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0, onNode("n9"))
				w.alloc("a1", "web", 1)
				w.down("n9")
				return stoppedJob(w)
			},
			want: outcome{stop: l("a0:lost", "a1")}},
		{name: "stopped job cancels its running deployment",
			world: func() *world {
				w := newWorld(group("web", 1, rolling(1, 0)))
				w.run("a", "web", 1)
				w.deployment("d1", structs.DeploymentStatusRunning, "web")
				return stoppedJob(w)
			},
			want: outcome{stop: l("a0"), depUpdates: l("cancelled")},
			more: func(t *testing.T, res *Result) {
				if u := res.DeploymentUpdates[0]; u.StatusDescription != structs.DeploymentStatusDescriptionStoppedJob || u.DeploymentID != "d1" {
					t.Errorf("update: %+v", u)
				}
			}},
		{name: "stopped job leaves a finished deployment alone",
			world: func() *world {
				w := newWorld(group("web", 1, rolling(1, 0)))
				w.run("a", "web", 1)
				w.deployment("d1", structs.DeploymentStatusSuccessful, "web")
				return stoppedJob(w)
			},
			want: outcome{stop: l("a0")}},
		{name: "stopped job cancels an initializing deployment",
			world: func() *world {
				w := newWorld(group("web", 1, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusInitializing, "web")
				return stoppedJob(w)
			},
			want: outcome{depUpdates: l("cancelled")}},
		{name: "purged job cancels its paused deployment",
			world: func() *world {
				w := newWorld(group("web", 1, rolling(1, 0)))
				w.run("a", "web", 1)
				w.deployment("d1", structs.DeploymentStatusPaused, "web")
				w.purged = true
				return w
			},
			want: outcome{stop: l("a0"), depUpdates: l("cancelled")}},
		{name: "removed group: its allocs stop",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.run("w", "web", 1)
				w.run("p", "api", 2, ownGroup(0, group("api", 2)))
				return w
			},
			want: outcome{stop: l("p0", "p1")},
			more: counters("api", DesiredUpdates{Stop: 2})},
		{name: "removed group: terminal allocs are listed too",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.run("w", "web", 1)
				w.alloc("p0", "api", 0, ownGroup(0, group("api", 2)))
				w.alloc("p1", "api", 1, ownGroup(0, group("api", 2)), complete)
				return w
			},
			want: outcome{stop: l("p0", "p1")},
			more: counters("api", DesiredUpdates{Stop: 2})},
		{name: "removed group with disconnect support: server-stopped allocs counted, not listed",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.sdc = true
				api := group("api", 2, maxDisconnect(time.Hour))
				w.run("w", "web", 1)
				w.alloc("p0", "api", 0, ownGroup(0, api))
				w.alloc("p1", "api", 1, ownGroup(0, api), complete)
				w.alloc("p2", "api", 1, ownGroup(0, api), complete, stopped)
				return w
			},
			// p1 ended on its own and is listed as for any group (Nomad
			// 1.6 sets it aside too; see ORACLE.md).
			want: outcome{stop: l("p0", "p1")},
			more: counters("api", DesiredUpdates{Stop: 3})},
		{name: "removed group: allocs on down nodes are lost",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.run("w", "web", 1)
				w.alloc("p0", "api", 0, ownGroup(0, group("api", 1)), onNode("n9"))
				w.down("n9")
				return w
			},
			want: outcome{stop: l("p0:lost")}},
		{name: "scale to zero stops pending allocs",
			world: func() *world { w := newWorld(group("web", 0)); w.alloc("a0", "web", 0, pending); return w },
			want:  outcome{stop: l("a0")}},
		{name: "stopped batch job stops running allocs, not completed ones",
			world: func() *world {
				w := batchWorld(group("work", 2))
				w.alloc("a0", "work", 0)
				w.alloc("a1", "work", 1, complete)
				return stoppedJob(w)
			},
			want: outcome{stop: l("a0")}},
		{name: "stopped job: migrating alloc is just stopped",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.alloc("a0", "web", 0, onNode("n9"), migrateFlag)
				w.draining("n9")
				return stoppedJob(w)
			},
			want: outcome{stop: l("a0")}},
		{name: "stopped job: unknown alloc on a disconnected node is stopped",
			world: func() *world {
				w := newWorld(group("web", 1, maxDisconnect(time.Hour)))
				w.sdc = true
				w.alloc("a0", "web", 0, onNode("n9"), unknownSince(time.Minute))
				w.disconnected("n9")
				return stoppedJob(w)
			},
			want: outcome{stop: l("a0")}},
		{name: "purged job: alloc on a vanished node is lost",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.alloc("a0", "web", 0, onNode("n9"))
				w.gone("n9")
				w.purged = true
				return w
			},
			want: outcome{stop: l("a0:lost")}},
		{name: "stopped job with nothing running does nothing",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0, complete)
				return stoppedJob(w)
			},
			want: outcome{},
			more: counters("web", DesiredUpdates{})},
		{name: "stopped job creates no follow-ups for failed allocs",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.alloc("a0", "web", 0, failedAt(time.Second))
				return stoppedJob(w)
			},
			want: outcome{}},
	})
}

func TestUpdates(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "in-place for all",
			world: func() *world {
				w := newWorld(group("web", 3))
				w.run("a", "web", 3, ver(0), kind(UpdateInPlace))
				return w
			},
			want: outcome{inplace: l("a0", "a1", "a2")},
			more: counters("web", DesiredUpdates{InPlaceUpdate: 3})},
		{name: "in-place with an update strategy starts a deployment",
			world: func() *world {
				w := newWorld(group("web", 3, rolling(1, 0)))
				w.run("a", "web", 3, ver(0), kind(UpdateInPlace))
				return w
			},
			want: outcome{inplace: l("a0", "a1", "a2"), deployment: "new"}},
		{name: "destructive without an update strategy replaces all at once",
			world: func() *world { w := newWorld(group("web", 3)); w.run("a", "web", 3, ver(0)); return w },
			want:  outcome{destructive: l("a0", "a1", "a2")},
			more:  counters("web", DesiredUpdates{DestructiveUpdate: 3})},
		{name: "destructive limited by max_parallel",
			world: func() *world { w := newWorld(group("web", 5, rolling(2, 0))); w.run("a", "web", 5, ver(0)); return w },
			want:  outcome{destructive: l("a0", "a1"), deployment: "new"},
			more:  counters("web", DesiredUpdates{DestructiveUpdate: 2, Ignore: 3})},
		{name: "destructive takes the lowest names first",
			world: func() *world {
				w := newWorld(group("web", 5, rolling(2, 0)))
				for _, i := range []uint{4, 2, 0, 3, 1} {
					w.alloc("x"+string(rune('a'+i)), "web", i, ver(0))
				}
				return w
			},
			want: outcome{destructive: l("xa", "xb"), deployment: "new"}},
		{name: "unchanged allocs are ignored",
			world: func() *world { w := newWorld(group("web", 3, rolling(1, 0))); w.run("a", "web", 3); return w },
			want:  outcome{}},
		{name: "mixed ignore, in-place and destructive",
			world: func() *world {
				w := newWorld(group("web", 3, rolling(1, 0)))
				w.alloc("a0", "web", 0)
				w.alloc("a1", "web", 1, ver(0), kind(UpdateInPlace))
				w.alloc("a2", "web", 2, ver(0))
				return w
			},
			want: outcome{inplace: l("a1"), destructive: l("a2"), deployment: "new"}},
		{name: "an unhealthy alloc of the deployment halts the rollout",
			world: func() *world {
				w := newWorld(group("web", 3, rolling(2, 0)))
				w.deployment("d1", structs.DeploymentStatusRunning, "web")
				w.alloc("a0", "web", 0, inDeployment("d1", unhealthy, false))
				w.alloc("a1", "web", 1, ver(0))
				w.alloc("a2", "web", 2, ver(0))
				return w
			},
			want: outcome{}},
		{name: "allocs not yet healthy use up max_parallel",
			world: func() *world {
				w := newWorld(group("web", 4, rolling(2, 0)))
				w.deployment("d1", structs.DeploymentStatusRunning, "web")
				w.alloc("a0", "web", 0, inDeployment("d1", nil, false))
				for i := uint(1); i < 4; i++ {
					w.alloc("a"+string(rune('0'+i)), "web", i, ver(0))
				}
				return w
			},
			want: outcome{destructive: l("a1")}},
		{name: "healthy allocs free the rollout",
			world: func() *world {
				w := newWorld(group("web", 5, rolling(2, 0)))
				w.deployment("d1", structs.DeploymentStatusRunning, "web")
				w.alloc("a0", "web", 0, inDeployment("d1", healthy, false))
				w.alloc("a1", "web", 1, inDeployment("d1", healthy, false))
				for i := uint(2); i < 5; i++ {
					w.alloc("a"+string(rune('0'+i)), "web", i, ver(0))
				}
				return w
			},
			want: outcome{destructive: l("a2", "a3")}},
		{name: "more undecided allocs than max_parallel: nothing",
			world: func() *world {
				w := newWorld(group("web", 5, rolling(2, 0)))
				w.deployment("d1", structs.DeploymentStatusRunning, "web")
				w.run("a", "web", 3, inDeployment("d1", nil, false))
				w.alloc("a3", "web", 3, ver(0))
				w.alloc("a4", "web", 4, ver(0))
				return w
			},
			want: outcome{}},
		{name: "scale up during a destructive change spends max_parallel on placements",
			world: func() *world { w := newWorld(group("web", 4, rolling(2, 0))); w.run("a", "web", 2, ver(0)); return w },
			want:  outcome{place: l("web[2]", "web[3]"), deployment: "new"},
			more:  counters("web", DesiredUpdates{Place: 2, Ignore: 2})},
		{name: "scale down during a destructive change stops first",
			world: func() *world { w := newWorld(group("web", 2, rolling(1, 0))); w.run("a", "web", 4, ver(0)); return w },
			want:  outcome{stop: l("a2", "a3"), destructive: l("a0"), deployment: "new"}},
		{name: "paused deployment holds destructive updates",
			world: func() *world {
				w := newWorld(group("web", 3, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusPaused, "web")
				w.run("a", "web", 3, ver(0))
				return w
			},
			want: outcome{},
			more: counters("web", DesiredUpdates{Ignore: 3})},
		{name: "failed deployment holds destructive updates",
			world: func() *world {
				w := newWorld(group("web", 3, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusFailed, "web")
				w.run("a", "web", 3, ver(0))
				return w
			},
			want: outcome{}},
		{name: "pending deployment holds destructive updates",
			world: func() *world {
				w := newWorld(group("web", 3, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusPending, "web")
				w.run("a", "web", 3, ver(0))
				return w
			},
			want: outcome{}},
		{name: "complete service allocs are not updated",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0, ver(0), kind(UpdateInPlace))
				w.alloc("a1", "web", 1, ver(0), complete, kind(UpdateInPlace))
				return w
			},
			want: outcome{inplace: l("a0"), place: l("web[1]")}},
		{name: "two groups, in-place and destructive",
			world: func() *world {
				w := newWorld(group("web", 2), group("api", 1))
				w.run("w", "web", 2, ver(0), kind(UpdateInPlace))
				w.run("p", "api", 1, ver(0))
				return w
			},
			want: outcome{inplace: l("w0", "w1"), destructive: l("p0")}},
		{name: "max_parallel above count replaces everything",
			world: func() *world { w := newWorld(group("web", 3, rolling(10, 0))); w.run("a", "web", 3, ver(0)); return w },
			want:  outcome{destructive: l("a0", "a1", "a2"), deployment: "new"}},
		{name: "max_parallel 0 means no update strategy",
			world: func() *world { w := newWorld(group("web", 3, rolling(0, 0))); w.run("a", "web", 3, ver(0)); return w },
			want:  outcome{destructive: l("a0", "a1", "a2")}},
		{name: "migrating alloc is moved, not updated",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.alloc("a0", "web", 0, ver(0), onNode("n9"), migrateFlag)
				w.alloc("a1", "web", 1, ver(0))
				w.draining("n9")
				return w
			},
			want: outcome{place: l("web[0]<a0"), stop: l("a0"), destructive: l("a1"), deployment: "new"},
			more: counters("web", DesiredUpdates{Migrate: 1, DestructiveUpdate: 1})},
		{name: "job-level update strategy applies to groups without one",
			world: func() *world {
				w := newWorld(group("web", 4))
				w.job.Update = &structs.UpdateStrategy{MaxParallel: 1}
				w.run("a", "web", 4, ver(0))
				return w
			},
			want: outcome{destructive: l("a0"), deployment: "new"}},
		{name: "destructive updates of a new job incarnation",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.run("a", "web", 2)
				for _, a := range w.allocs {
					j := *w.job
					j.CreateIndex = 5
					a.Job = &j
					w.kinds[a.ID] = UpdateDestructive
				}
				return w
			},
			want: outcome{destructive: l("a0"), deployment: "new"}},
	})
}

func TestDeployments(t *testing.T) {
	healthyDeployment := func(status string) func() *world {
		return func() *world {
			w := newWorld(group("web", 2, rolling(1, 0)))
			d := w.deployment("d1", status, "web")
			d.TaskGroups["web"].HealthyAllocs = 2
			w.run("a", "web", 2, inDeployment("d1", healthy, false))
			return w
		}
	}
	runScenarios(t, []scenario{
		{name: "all healthy: deployment successful",
			world: healthyDeployment(structs.DeploymentStatusRunning),
			want:  outcome{depUpdates: l("successful")}},
		{name: "not enough healthy allocs: still running",
			world: func() *world {
				w := healthyDeployment(structs.DeploymentStatusRunning)()
				w.dep.TaskGroups["web"].HealthyAllocs = 1
				return w
			},
			want: outcome{}},
		{name: "multiregion job completes as blocked",
			world: func() *world {
				w := healthyDeployment(structs.DeploymentStatusRunning)()
				w.job.Multiregion = &structs.Multiregion{Regions: []*structs.MultiregionRegion{{Name: "a"}, {Name: "b"}}}
				return w
			},
			want: outcome{depUpdates: l("blocked")}},
		{name: "multiregion already unblocking stays",
			world: func() *world {
				w := healthyDeployment(structs.DeploymentStatusUnblocking)()
				w.job.Multiregion = &structs.Multiregion{Regions: []*structs.MultiregionRegion{{Name: "a"}, {Name: "b"}}}
				return w
			},
			want: outcome{}},
		{name: "multiregion blocked and complete is blocked again",
			world: func() *world {
				w := healthyDeployment(structs.DeploymentStatusBlocked)()
				w.job.Multiregion = &structs.Multiregion{Regions: []*structs.MultiregionRegion{{Name: "a"}, {Name: "b"}}}
				return w
			},
			want: outcome{depUpdates: l("blocked")}},
		{name: "deployment of an older version is cancelled",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusRunning, "web").JobVersion = 0
				w.run("a", "web", 2)
				return w
			},
			want: outcome{depUpdates: l("cancelled")},
			more: func(t *testing.T, res *Result) {
				if d := res.DeploymentUpdates[0].StatusDescription; d != structs.DeploymentStatusDescriptionNewerJob {
					t.Errorf("description %q", d)
				}
			}},
		{name: "deployment of an older incarnation is cancelled",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusRunning, "web").JobCreateIndex = 3
				w.run("a", "web", 2)
				return w
			},
			want: outcome{depUpdates: l("cancelled")}},
		{name: "failed deployment of an older version is not cancelled",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusFailed, "web").JobVersion = 0
				w.run("a", "web", 2)
				return w
			},
			want: outcome{}},
		{name: "successful deployment is left alone",
			world: healthyDeployment(structs.DeploymentStatusSuccessful),
			want:  outcome{}},
		{name: "older version cancelled and a new deployment started",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusRunning, "web").JobVersion = 0
				w.run("a", "web", 2, ver(0))
				return w
			},
			want: outcome{depUpdates: l("cancelled"), destructive: l("a0"), deployment: "new"}},
		{name: "no deployment when the spec did not change",
			world: func() *world { w := newWorld(group("web", 3, rolling(1, 0))); w.run("a", "web", 2); return w },
			want:  outcome{place: l("web[2]")}},
		{name: "initializing deployment is handed back and moves to pending",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusInitializing, "web")
				w.run("a", "web", 1, inDeployment("d1", nil, false))
				return w
			},
			want: outcome{deployment: "d1", depUpdates: l("pending")}},
		{name: "complete initializing deployment: successful, then pending",
			world: healthyDeployment(structs.DeploymentStatusInitializing),
			want:  outcome{deployment: "d1", depUpdates: l("successful", "pending")}},
		{name: "paused deployment places no missing allocs",
			world: func() *world {
				w := newWorld(group("web", 3, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusPaused, "web")
				w.run("a", "web", 2, inDeployment("d1", healthy, false))
				return w
			},
			want: outcome{}},
		{name: "failed deployment still replaces lost allocs",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusFailed, "web")
				w.alloc("a0", "web", 0, onNode("n9"))
				w.alloc("a1", "web", 1)
				w.down("n9")
				return w
			},
			want: outcome{stop: l("a0:lost"), place: l("web[0]/l<a0")}},
		{name: "failed deployment: its own failed allocs are not rescheduled",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusFailed, "web")
				w.alloc("a0", "web", 0, failed, inDeployment("d1", unhealthy, false))
				w.alloc("a1", "web", 1)
				return w
			},
			want: outcome{}},
		{name: "failed deployment: other failed allocs are rescheduled",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusFailed, "web")
				w.alloc("a0", "web", 0, failed)
				w.alloc("a1", "web", 1)
				return w
			},
			want: outcome{stop: l("a0"), place: l("web[0]/r<a0")}},
		{name: "running deployment: its failed allocs wait for the deployment",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusRunning, "web")
				w.alloc("a0", "web", 0, failed, inDeployment("d1", unhealthy, false))
				w.alloc("a1", "web", 1, inDeployment("d1", healthy, false))
				return w
			},
			want: outcome{}},
		{name: "running deployment: a failed alloc marked for reschedule is replaced",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusRunning, "web")
				w.alloc("a0", "web", 0, failed, reschedFlag, inDeployment("d1", unhealthy, false))
				w.alloc("a1", "web", 1, inDeployment("d1", healthy, false))
				return w
			},
			want: outcome{stop: l("a0"), place: l("web[0]/r<a0")}},
		{name: "group missing from the deployment is placed without a new deployment",
			world: func() *world {
				w := newWorld(group("web", 1, rolling(1, 0)), group("api", 2, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusRunning, "web")
				w.run("a", "web", 1, inDeployment("d1", nil, false))
				return w
			},
			want: outcome{place: l("api[0]", "api[1]")}},
		{name: "pending (multiregion) deployment places nothing and stays",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusPending, "web")
				w.run("a", "web", 1)
				return w
			},
			want: outcome{}},
		{name: "created deployment carries the strategy",
			world: func() *world {
				w := newWorld(group("web", 3, rolling(2, 0), autoPromote))
				w.run("a", "web", 3, ver(0))
				return w
			},
			want: outcome{destructive: l("a0", "a1"), deployment: "new"},
			more: func(t *testing.T, res *Result) {
				d := res.Deployment
				s := d.TaskGroups["web"]
				if d.JobVersion != 1 || d.JobCreateIndex != 10 || d.Status != structs.DeploymentStatusRunning ||
					d.StatusDescription != structs.DeploymentStatusDescriptionRunning || d.EvalPriority != 50 ||
					s.DesiredTotal != 3 || !s.AutoRevert || !s.AutoPromote || s.ProgressDeadline != 10*time.Minute {
					t.Errorf("deployment %+v, group %+v", d, s)
				}
				if d.ID != structs.DeterministicID("eval-main", "deployment", "default", "example", "1") {
					t.Errorf("deployment ID %s is not derived from the eval", d.ID)
				}
			}},
		{name: "no update strategy, no deployment",
			world: func() *world { w := newWorld(group("web", 2)); w.run("a", "web", 2, ver(0)); return w },
			want:  outcome{destructive: l("a0", "a1")}},
		{name: "two groups complete: successful",
			world: func() *world {
				w := newWorld(group("web", 1, rolling(1, 0)), group("api", 1, rolling(1, 0)))
				d := w.deployment("d1", structs.DeploymentStatusRunning, "web", "api")
				d.TaskGroups["web"].HealthyAllocs, d.TaskGroups["api"].HealthyAllocs = 1, 1
				w.run("w", "web", 1, inDeployment("d1", healthy, false))
				w.run("p", "api", 1, inDeployment("d1", healthy, false))
				return w
			},
			want: outcome{depUpdates: l("successful")}},
		{name: "one of two groups incomplete: no update",
			world: func() *world {
				w := newWorld(group("web", 1, rolling(1, 0)), group("api", 1, rolling(1, 0)))
				d := w.deployment("d1", structs.DeploymentStatusRunning, "web", "api")
				d.TaskGroups["web"].HealthyAllocs = 1
				w.run("w", "web", 1, inDeployment("d1", healthy, false))
				w.run("p", "api", 1, inDeployment("d1", nil, false))
				return w
			},
			want: outcome{}},
	})
}

func TestCanaries(t *testing.T) {
	// canaryWorld: count 3 at version 0, canary strategy, deployment d1 of
	// version 1 with the given canaries (IDs c0.. named web[0]..).
	canaryWorld := func(canary int, promoted bool, placed ...string) *world {
		w := newWorld(group("web", 3, rolling(1, canary)))
		d := w.deployment("d1", structs.DeploymentStatusRunning, "web")
		d.TaskGroups["web"].DesiredCanaries = canary
		d.TaskGroups["web"].Promoted = promoted
		d.TaskGroups["web"].PlacedCanaries = placed
		w.run("a", "web", 3, ver(0))
		for i, id := range placed {
			w.alloc(id, "web", uint(i), inDeployment("d1", nil, true))
		}
		return w
	}
	runScenarios(t, []scenario{
		{name: "destructive change with canaries places canaries first",
			world: func() *world { w := newWorld(group("web", 3, rolling(1, 2))); w.run("a", "web", 3, ver(0)); return w },
			want:  outcome{place: l("web[0]/c", "web[1]/c"), deployment: "new"},
			more: both(counters("web", DesiredUpdates{Canary: 2, Ignore: 3}), func(t *testing.T, res *Result) {
				d := res.Deployment
				if d.StatusDescription != structs.DeploymentStatusDescriptionRunningNeedsPromotion || d.TaskGroups["web"].DesiredCanaries != 2 || d.TaskGroups["web"].DesiredTotal != 3 {
					t.Errorf("deployment %+v %+v", d, d.TaskGroups["web"])
				}
			})},
		{name: "auto-promoted canaries: the deployment says so",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 1), autoPromote))
				w.run("a", "web", 2, ver(0))
				return w
			},
			want: outcome{place: l("web[0]/c"), deployment: "new"},
			more: func(t *testing.T, res *Result) {
				if d := res.Deployment.StatusDescription; d != structs.DeploymentStatusDescriptionRunningAutoPromotion {
					t.Errorf("description %q", d)
				}
			}},
		{name: "some canaries placed: place the rest",
			world: func() *world { return canaryWorld(2, false, "c0") },
			want:  outcome{place: l("web[1]/c")}},
		{name: "all canaries placed: wait for promotion",
			world: func() *world { return canaryWorld(2, false, "c0", "c1") },
			want:  outcome{},
			more:  counters("web", DesiredUpdates{Ignore: 5})},
		{name: "promoted: old allocs sharing canary names stop, the rollout goes on",
			world: func() *world {
				w := canaryWorld(2, true, "c0", "c1")
				for _, a := range w.allocs[3:] {
					a.DeploymentStatus.Healthy = healthy
				}
				return w
			},
			want: outcome{stop: l("a0", "a1"), destructive: l("a2")}},
		{name: "promoted but canaries not yet healthy: they use up max_parallel",
			world: func() *world { return canaryWorld(1, true, "c0") },
			want:  outcome{stop: l("a0")}},
		{name: "unpromoted canaries of the old deployment are stopped",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.job.Version = 2
				d := w.deployment("d-old", structs.DeploymentStatusRunning, "web")
				d.JobVersion = 1
				d.TaskGroups["web"].PlacedCanaries = []string{"c0"}
				d.TaskGroups["web"].DesiredCanaries = 1
				w.run("a", "web", 2, ver(0))
				w.alloc("c0", "web", 0, ver(1), inDeployment("d-old", nil, true))
				return w
			},
			want: outcome{stop: l("c0"), destructive: l("a0"), deployment: "new", depUpdates: l("cancelled")}},
		{name: "promoted canaries of the old deployment stay",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.job.Version = 2
				d := w.deployment("d-old", structs.DeploymentStatusSuccessful, "web")
				d.JobVersion = 1
				d.TaskGroups["web"].PlacedCanaries = []string{"c0"}
				d.TaskGroups["web"].Promoted = true
				w.alloc("c0", "web", 0, ver(2), inDeployment("d-old", healthy, true))
				w.alloc("a1", "web", 1, ver(2))
				return w
			},
			want: outcome{}},
		{name: "canaries of a failed deployment are stopped",
			world: func() *world {
				w := canaryWorld(1, false, "c0")
				w.dep.Status = structs.DeploymentStatusFailed
				return w
			},
			want: outcome{stop: l("c0")},
			more: counters("web", DesiredUpdates{Stop: 1, Ignore: 3})},
		{name: "canary on a draining node is stopped and placed again",
			world: func() *world {
				w := canaryWorld(1, false, "c0")
				w.allocs[3].NodeID = "n9"
				migrateFlag(w, w.allocs[3])
				w.draining("n9")
				return w
			},
			want: outcome{stop: l("c0"), place: l("web[0]/c")},
			more: counters("web", DesiredUpdates{Canary: 1, Ignore: 3})},
		{name: "canary on a down node is lost and placed again",
			world: func() *world {
				w := canaryWorld(1, false, "c0")
				w.allocs[3].NodeID = "n9"
				w.down("n9")
				return w
			},
			want: outcome{stop: l("c0:lost"), place: l("web[0]/c")}},
		{name: "no canary for a pure migration",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 1)))
				w.alloc("a0", "web", 0, onNode("n9"), migrateFlag)
				w.alloc("a1", "web", 1)
				w.draining("n9")
				return w
			},
			want: outcome{stop: l("a0"), place: l("web[0]<a0")}},
		{name: "more canaries than destructive names: extra names above the count",
			world: func() *world { w := newWorld(group("web", 2, rolling(1, 3))); w.run("a", "web", 2, ver(0)); return w },
			want:  outcome{place: l("web[0]/c", "web[1]/c", "web[2]/c"), deployment: "new"}},
		{name: "scale up while canarying waits for promotion",
			world: func() *world {
				w := canaryWorld(1, false, "c0")
				w.job.TaskGroups[0].Count = 4
				return w
			},
			want: outcome{}},
		{name: "paused deployment places no canary",
			world: func() *world {
				w := canaryWorld(1, false)
				w.dep.Status = structs.DeploymentStatusPaused
				w.dep.TaskGroups["web"].DesiredCanaries = 0
				return w
			},
			want: outcome{}},
		{name: "in-place changes need no canary",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 1)))
				w.run("a", "web", 2, ver(0), kind(UpdateInPlace))
				return w
			},
			want: outcome{inplace: l("a0", "a1"), deployment: "new"}},
		{name: "promoted and healthy everywhere: successful",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 1)))
				d := w.deployment("d1", structs.DeploymentStatusRunning, "web")
				s := d.TaskGroups["web"]
				s.DesiredCanaries, s.Promoted, s.PlacedCanaries, s.HealthyAllocs = 1, true, []string{"c0"}, 2
				w.alloc("c0", "web", 0, inDeployment("d1", healthy, true))
				w.alloc("a1", "web", 1, inDeployment("d1", healthy, false))
				return w
			},
			want: outcome{depUpdates: l("successful")}},
		{name: "healthy but unpromoted canaries: not complete",
			world: func() *world {
				w := newWorld(group("web", 1, rolling(1, 1)))
				d := w.deployment("d1", structs.DeploymentStatusRunning, "web")
				s := d.TaskGroups["web"]
				s.DesiredCanaries, s.PlacedCanaries, s.HealthyAllocs = 1, []string{"c0"}, 1
				w.alloc("c0", "web", 0, inDeployment("d1", healthy, true))
				return w
			},
			want: outcome{}},
		{name: "failed canary of the running deployment waits",
			world: func() *world {
				w := canaryWorld(1, false, "c0")
				failed(w, w.allocs[3])
				return w
			},
			want: outcome{}},
		{name: "canary group next to a plain group",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 1)), group("api", 2))
				w.run("w", "web", 2, ver(0))
				w.run("p", "api", 2, ver(0))
				return w
			},
			want: outcome{place: l("web[0]/c"), destructive: l("p0", "p1"), deployment: "new"},
			more: func(t *testing.T, res *Result) {
				if _, ok := res.Deployment.TaskGroups["api"]; ok || len(res.Deployment.TaskGroups) != 1 {
					t.Errorf("groups in deployment: %v", res.Deployment.TaskGroups)
				}
			}},
		{name: "canary names skip names held by existing canaries",
			world: func() *world {
				w := newWorld(group("web", 3, rolling(1, 2)))
				d := w.deployment("d1", structs.DeploymentStatusRunning, "web")
				d.TaskGroups["web"].DesiredCanaries = 2
				d.TaskGroups["web"].PlacedCanaries = []string{"c1"}
				w.run("a", "web", 3, ver(0))
				w.alloc("c1", "web", 0, inDeployment("d1", nil, true))
				return w
			},
			want: outcome{place: l("web[1]/c")}},
		{name: "promoted canaries over count: old names stop, surplus canary too",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 3)))
				d := w.deployment("d1", structs.DeploymentStatusRunning, "web")
				s := d.TaskGroups["web"]
				s.DesiredCanaries, s.Promoted, s.PlacedCanaries = 3, true, []string{"c0", "c1", "c2"}
				w.run("a", "web", 2, ver(0))
				for i, id := range s.PlacedCanaries {
					w.alloc(id, "web", uint(i), inDeployment("d1", healthy, true))
				}
				return w
			},
			want: outcome{stop: l("a0", "a1", "c2")}},
	})
}

func TestRescheduling(t *testing.T) {
	one := func(opts ...func(*world, *structs.Allocation)) func(...func(*structs.TaskGroup)) *world {
		return func(g ...func(*structs.TaskGroup)) *world {
			w := newWorld(group("web", 1, g...))
			w.alloc("a0", "web", 0, opts...)
			return w
		}
	}
	expo := resched(0, 0, 30*time.Second, structs.DelayFunctionExponential, time.Hour, true)
	runScenarios(t, []scenario{
		{name: "failed long ago: replaced now",
			world: func() *world { return one(failed)() },
			want:  outcome{stop: l("a0"), place: l("web[0]/r<a0")},
			more: both(counters("web", DesiredUpdates{Place: 1, Stop: 1}), func(t *testing.T, res *Result) {
				if s := res.Stop[0]; s.StatusDescription != StatusAllocRescheduled {
					t.Errorf("stop description %q", s.StatusDescription)
				}
				if p := res.Place[0]; p.MinJobVersion != 1 {
					t.Errorf("min job version %d", p.MinJobVersion)
				}
			})},
		{name: "failed just now: follow-up eval after the delay",
			world: func() *world { return one(failedAt(10 * time.Second))() },
			want:  outcome{attr: l("a0"), followups: d(20 * time.Second)},
			more: func(t *testing.T, res *Result) {
				e := res.DesiredFollowupEvals["web"][0]
				if res.AttributeUpdates["a0"].FollowupEvalID != e.ID || e.TriggeredBy != structs.EvalTriggerRetryFailedAlloc ||
					e.StatusDescription != FollowupDescReschedule || e.Status != structs.EvalStatusPending || e.JobID != "example" {
					t.Errorf("follow-up %+v", e)
				}
				if e.ID != structs.DeterministicID("eval-main", "followup", "web", "0") {
					t.Errorf("follow-up ID %s is not derived from the eval", e.ID)
				}
			}},
		{name: "due within the 1s window: now",
			world: func() *world { return one(failedAt(29*time.Second + 500*time.Millisecond))() },
			want:  outcome{stop: l("a0"), place: l("web[0]/r<a0")}},
		{name: "due exactly 1s from now: now",
			world: func() *world { return one(failedAt(29 * time.Second))() },
			want:  outcome{stop: l("a0"), place: l("web[0]/r<a0")}},
		{name: "due 1.5s from now: later",
			world: func() *world { return one(failedAt(28*time.Second + 500*time.Millisecond))() },
			want:  outcome{attr: l("a0"), followups: d(1500 * time.Millisecond)}},
		{name: "this eval is the alloc's follow-up: now",
			world: func() *world { return one(failedAt(10*time.Second), followup("eval-main"))() },
			want:  outcome{stop: l("a0"), place: l("web[0]/r<a0")}},
		{name: "another follow-up already attached: wait for it",
			world: func() *world { return one(failedAt(10*time.Second), followup("eval-other"))() },
			want:  outcome{}},
		{name: "attempts used up within the interval",
			world: func() *world {
				return one(failed, rescheduled(10*time.Minute, 30*time.Second, 20*time.Minute, 30*time.Second))(
					resched(2, 2*time.Hour, 30*time.Second, structs.DelayFunctionConstant, 0, false))
			},
			want: outcome{}},
		{name: "attempts outside the interval do not count",
			world: func() *world {
				return one(failedAt(time.Minute), rescheduled(3*time.Hour, 30*time.Second, 2*time.Hour, 30*time.Second))(
					resched(2, time.Hour, 30*time.Second, structs.DelayFunctionConstant, 0, false))
			},
			want: outcome{stop: l("a0"), place: l("web[0]/r<a0")}},
		{name: "one attempt left",
			world: func() *world {
				return one(failedAt(time.Minute), rescheduled(10*time.Minute, 30*time.Second))(
					resched(2, time.Hour, 30*time.Second, structs.DelayFunctionConstant, 0, false))
			},
			want: outcome{stop: l("a0"), place: l("web[0]/r<a0")}},
		{name: "exponential delay doubles the last one",
			world: func() *world {
				return one(failedAt(time.Minute), rescheduled(5*time.Minute, time.Minute))(expo)
			},
			want: outcome{attr: l("a0"), followups: d(time.Minute)}},
		{name: "exponential delay is capped at max_delay",
			world: func() *world {
				return one(failedAt(time.Minute), rescheduled(30*time.Minute, 40*time.Minute))(expo)
			},
			want: outcome{attr: l("a0"), followups: d(59 * time.Minute)}},
		{name: "delay starts over after running longer than max_delay",
			world: func() *world {
				return one(failedAt(time.Minute), rescheduled(3*time.Hour, 40*time.Minute))(expo)
			},
			want: outcome{stop: l("a0"), place: l("web[0]/r<a0")}},
		{name: "fibonacci adds the last two delays",
			world: func() *world {
				return one(failedAt(10*time.Second), rescheduled(10*time.Minute, 30*time.Second, 5*time.Minute, 30*time.Second))(
					resched(0, 0, 30*time.Second, structs.DelayFunctionFibonacci, time.Hour, true))
			},
			want: outcome{attr: l("a0"), followups: d(50 * time.Second)}},
		{name: "fibonacci with one event uses the base delay",
			world: func() *world {
				return one(failedAt(10*time.Second), rescheduled(10*time.Minute, 30*time.Second))(
					resched(0, 0, 30*time.Second, structs.DelayFunctionFibonacci, time.Hour, true))
			},
			want: outcome{attr: l("a0"), followups: d(20 * time.Second)}},
		{name: "fibonacci restarts after a reset",
			world: func() *world {
				return one(failedAt(10*time.Second), rescheduled(20*time.Minute, 2*time.Minute, 5*time.Minute, 30*time.Second))(
					resched(0, 0, 30*time.Second, structs.DelayFunctionFibonacci, 2*time.Minute, true))
			},
			want: outcome{attr: l("a0"), followups: d(20 * time.Second)}},
		{name: "constant delay ignores the events",
			world: func() *world {
				return one(failedAt(10*time.Second), rescheduled(10*time.Minute, 5*time.Minute))(
					resched(0, 0, 30*time.Second, structs.DelayFunctionConstant, time.Minute, true))
			},
			want: outcome{attr: l("a0"), followups: d(20 * time.Second)}},
		{name: "failures within 5s share one follow-up",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0, failedAt(10*time.Second))
				w.alloc("a1", "web", 1, failedAt(7*time.Second))
				return w
			},
			want: outcome{attr: l("a0", "a1"), followups: d(20 * time.Second)}},
		{name: "failures 5s apart get separate follow-ups, the later undescribed",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0, failedAt(10*time.Second))
				w.alloc("a1", "web", 1, failedAt(5*time.Second))
				return w
			},
			want: outcome{attr: l("a0", "a1"), followups: d(20*time.Second, 25*time.Second)},
			more: func(t *testing.T, res *Result) {
				es := res.DesiredFollowupEvals["web"]
				if es[0].StatusDescription != FollowupDescReschedule || es[1].StatusDescription != "" {
					t.Errorf("descriptions %q %q", es[0].StatusDescription, es[1].StatusDescription)
				}
				if res.AttributeUpdates["a1"].FollowupEvalID != es[1].ID {
					t.Error("a1 not attached to the second eval")
				}
			}},
		{name: "already replaced: never rescheduled again",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.alloc("a0", "web", 0, failed, next("a9"))
				w.alloc("a9", "web", 0)
				return w
			},
			want: outcome{},
			more: counters("web", DesiredUpdates{Ignore: 1})},
		{name: "rescheduling disabled: the failed alloc stays",
			world: func() *world { return one(failed)(noResched) },
			want:  outcome{}},
		{name: "forced reschedule of a running alloc",
			world: func() *world { return one(forceResched)() },
			want:  outcome{stop: l("a0"), place: l("web[0]/r<a0")}},
		{name: "server-stopped failed alloc is replaced by a new one",
			world: func() *world { return one(failed, stopped)() },
			want:  outcome{place: l("web[0]")}},
		{name: "one now, one later",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0, failed)
				w.alloc("a1", "web", 1, failedAt(10*time.Second))
				return w
			},
			want: outcome{stop: l("a0"), place: l("web[0]/r<a0"), attr: l("a1"), followups: d(20 * time.Second)}},
		{name: "limited attempts and no tracker: eligible",
			world: func() *world {
				return one(failed)(resched(1, 10*time.Second, 30*time.Second, structs.DelayFunctionConstant, 0, false))
			},
			want: outcome{stop: l("a0"), place: l("web[0]/r<a0")}},
		{name: "limited attempts, empty tracker, delay not below the interval: not eligible",
			world: func() *world {
				return one(failed, rescheduled())(resched(1, 10*time.Second, 30*time.Second, structs.DelayFunctionConstant, 0, false))
			},
			want: outcome{}},
		{name: "failed alloc outside the running deployment is rescheduled",
			world: func() *world {
				w := newWorld(group("web", 2, rolling(1, 0)))
				w.deployment("d1", structs.DeploymentStatusRunning, "web")
				w.alloc("a0", "web", 0, failed)
				w.alloc("a1", "web", 1, inDeployment("d1", healthy, false))
				return w
			},
			want: outcome{stop: l("a0"), place: l("web[0]/r<a0")}},
		{name: "unpromoted canary replacement keeps the canary flag",
			world: func() *world {
				w := newWorld(group("web", 1, rolling(1, 1)))
				d := w.deployment("d1", structs.DeploymentStatusRunning, "web")
				d.TaskGroups["web"].DesiredCanaries = 1
				d.TaskGroups["web"].PlacedCanaries = []string{"c0"}
				w.alloc("o0", "web", 0, ver(0))
				w.alloc("c0", "web", 0, failed, reschedFlag, inDeployment("d1", unhealthy, true))
				return w
			},
			want: outcome{stop: l("c0"), place: l("web[0]/c/r<c0")}},
		// After promotion the deployment's canaries are ordinary allocs:
		// a replacement is not one more canary (Nomad 1.6 keeps the flag).
		{name: "promoted canary replacement is no canary",
			world: func() *world {
				w := newWorld(group("web", 1, rolling(1, 1)))
				d := w.deployment("d1", structs.DeploymentStatusRunning, "web")
				d.TaskGroups["web"].DesiredCanaries = 1
				d.TaskGroups["web"].Promoted = true
				w.alloc("c0", "web", 0, failed, reschedFlag, inDeployment("d1", unhealthy, true))
				return w
			},
			want: outcome{stop: l("c0"), place: l("web[0]/r<c0")}},
	})
}

func TestTaintedNodes(t *testing.T) {
	disc := func(g ...func(*structs.TaskGroup)) *world {
		w := newWorld(group("web", 1, append([]func(*structs.TaskGroup){maxDisconnect(time.Hour)}, g...)...))
		w.sdc = true
		return w
	}
	runScenarios(t, []scenario{
		{name: "draining node: migrate",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0, onNode("n9"), migrateFlag)
				w.alloc("a1", "web", 1)
				w.draining("n9")
				return w
			},
			want: outcome{stop: l("a0"), place: l("web[0]<a0")},
			more: both(counters("web", DesiredUpdates{Migrate: 1, Ignore: 1}), func(t *testing.T, res *Result) {
				if res.Stop[0].StatusDescription != StatusAllocMigrating {
					t.Errorf("description %q", res.Stop[0].StatusDescription)
				}
			})},
		{name: "draining node without the migrate flag: stay",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.alloc("a0", "web", 0, onNode("n9"))
				w.draining("n9")
				return w
			},
			want: outcome{}},
		{name: "down node: lost and replaced",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0, onNode("n9"))
				w.alloc("a1", "web", 1)
				w.down("n9")
				return w
			},
			want: outcome{stop: l("a0:lost"), place: l("web[0]/l<a0")},
			more: func(t *testing.T, res *Result) {
				if res.Stop[0].StatusDescription != StatusAllocLost {
					t.Errorf("description %q", res.Stop[0].StatusDescription)
				}
			}},
		{name: "vanished node: lost and replaced",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.alloc("a0", "web", 0, onNode("n9"))
				w.gone("n9")
				return w
			},
			want: outcome{stop: l("a0:lost"), place: l("web[0]/l<a0")}},
		{name: "lost replacements are capped at the count",
			world: func() *world {
				w := newWorld(group("web", 2))
				w.alloc("a0", "web", 0, onNode("n9"))
				w.alloc("a1", "web", 1, onNode("n9"))
				w.alloc("a2", "web", 2)
				w.down("n9")
				return w
			},
			want: outcome{stop: l("a0:lost", "a1:lost"), place: l("web[0]/l<a0")}},
		{name: "stop_after_client_disconnect: stopped with a follow-up, nothing placed",
			world: func() *world {
				w := newWorld(group("web", 2, stopAfter(time.Minute)))
				w.alloc("a0", "web", 0, onNode("n9"))
				w.alloc("a1", "web", 1)
				w.down("n9")
				return w
			},
			want: outcome{stop: l("a0:lost+f"), followups: d(65 * time.Second)}},
		{name: "stop_after waits for the longest kill timeout",
			world: func() *world {
				w := newWorld(group("web", 1, stopAfter(time.Minute), killTimeout(30*time.Second)))
				w.alloc("a0", "web", 0, onNode("n9"))
				w.down("n9")
				return w
			},
			want: outcome{stop: l("a0:lost+f"), followups: d(90 * time.Second)}},
		{name: "stop_after counts from when the alloc was marked lost",
			world: func() *world {
				w := newWorld(group("web", 1, stopAfter(time.Minute)))
				w.alloc("a0", "web", 0, onNode("n9"), lostSince(30*time.Second))
				w.down("n9")
				return w
			},
			want: outcome{stop: l("a0:lost+f"), followups: d(35 * time.Second)}},
		{name: "stop_after already over: replace",
			world: func() *world {
				w := newWorld(group("web", 1, stopAfter(time.Minute)))
				w.alloc("a0", "web", 0, onNode("n9"), lostSince(10*time.Minute))
				w.down("n9")
				return w
			},
			want: outcome{stop: l("a0:lost"), place: l("web[0]/l<a0")}},
		{name: "pending stop_after blocks every placement of the group",
			world: func() *world {
				w := newWorld(group("web", 3, stopAfter(time.Minute)))
				w.alloc("a0", "web", 0, onNode("n9"))
				w.alloc("a1", "web", 1)
				w.down("n9")
				return w
			},
			want: outcome{stop: l("a0:lost+f"), followups: d(65 * time.Second)}},
		{name: "disconnect: unknown with a timeout eval, replaced at once with no delay",
			world: func() *world {
				w := disc(resched(0, 0, 0, structs.DelayFunctionConstant, 0, true))
				w.alloc("a0", "web", 0, onNode("n9"))
				w.disconnected("n9")
				return w
			},
			want: outcome{disconnect: l("a0"), place: l("web[0]/r<a0"), followups: d(time.Hour)},
			more: func(t *testing.T, res *Result) {
				u := res.DisconnectUpdates["a0"]
				e := res.DesiredFollowupEvals["web"][0]
				if u.ClientStatus != structs.AllocClientStatusUnknown || u.ClientDescription != StatusAllocUnknown ||
					u.FollowupEvalID != e.ID || e.TriggeredBy != structs.EvalTriggerMaxDisconnectTimeout ||
					e.StatusDescription != FollowupDescDisconnectTimeout || !u.LastUnknown().Equal(t0) {
					t.Errorf("update %+v eval %+v", u, e)
				}
			}},
		{name: "disconnect with a reschedule delay: replacement later, its eval on the update",
			world: func() *world {
				w := disc()
				w.alloc("a0", "web", 0, onNode("n9"))
				w.disconnected("n9")
				return w
			},
			want: outcome{disconnect: l("a0"), followups: d(30*time.Second, time.Hour)},
			more: func(t *testing.T, res *Result) {
				var resched string
				for _, e := range res.DesiredFollowupEvals["web"] {
					if e.TriggeredBy == structs.EvalTriggerRetryFailedAlloc {
						resched = e.ID
					}
				}
				if res.DisconnectUpdates["a0"].FollowupEvalID != resched {
					t.Error("disconnect update does not point at the reschedule eval")
				}
			}},
		{name: "disconnect without server support: lost",
			world: func() *world {
				w := disc()
				w.sdc = false
				w.alloc("a0", "web", 0, onNode("n9"))
				w.disconnected("n9")
				return w
			},
			want: outcome{stop: l("a0:lost"), place: l("web[0]/l<a0")}},
		{name: "disconnect of a group without max_client_disconnect: lost",
			world: func() *world {
				w := newWorld(group("web", 1))
				w.sdc = true
				w.alloc("a0", "web", 0, onNode("n9"))
				w.disconnected("n9")
				return w
			},
			want: outcome{stop: l("a0:lost"), place: l("web[0]/l<a0")}},
		{name: "pending alloc on a disconnected node: lost",
			world: func() *world {
				w := disc()
				w.alloc("a0", "web", 0, onNode("n9"), pending)
				w.disconnected("n9")
				return w
			},
			want: outcome{stop: l("a0:lost"), place: l("web[0]/l<a0")}},
		{name: "still disconnected unknown alloc is kept next to its replacement",
			world: func() *world {
				w := disc()
				w.alloc("a0", "web", 0, onNode("n9"), unknownSince(10*time.Minute), next("a9"))
				w.alloc("a9", "web", 0)
				w.disconnected("n9")
				return w
			},
			want: outcome{}},
		{name: "unknown past max_client_disconnect: lost",
			world: func() *world {
				w := disc()
				w.alloc("a0", "web", 0, onNode("n9"), unknownSince(2*time.Hour), next("a9"))
				w.alloc("a9", "web", 0)
				w.disconnected("n9")
				return w
			},
			want: outcome{stop: l("a0:lost")}},
		{name: "reconnect: the original is kept, its replacement stopped",
			world: func() *world {
				w := disc()
				w.alloc("a0", "web", 0, disconnectedSince(10*time.Minute), next("a9"))
				w.alloc("a9", "web", 0, onNode("n2"))
				return w
			},
			want: outcome{stop: l("a9"), reconnect: l("a0")},
			more: func(t *testing.T, res *Result) {
				if res.Stop[0].StatusDescription != StatusAllocReconnected {
					t.Errorf("description %q", res.Stop[0].StatusDescription)
				}
				if s := res.ReconnectUpdates["a0"].AllocStates; s[len(s)-1].Value != structs.AllocClientStatusRunning {
					t.Errorf("reconnect not recorded: %+v", s)
				}
			}},
		{name: "reconnect: a running replacement with a better score wins",
			world: func() *world {
				w := disc()
				w.alloc("a0", "web", 0, disconnectedSince(10*time.Minute), next("a9"), score(0.2))
				w.alloc("a9", "web", 0, onNode("n2"), score(0.8))
				return w
			},
			want: outcome{stop: l("a0")}},
		{name: "reconnect: a better-scored replacement that is not running loses",
			world: func() *world {
				w := disc()
				w.alloc("a0", "web", 0, disconnectedSince(10*time.Minute), next("a9"), score(0.2))
				w.alloc("a9", "web", 0, onNode("n2"), score(0.8), pending)
				return w
			},
			want: outcome{stop: l("a9"), reconnect: l("a0")}},
		{name: "reconnect on a node back in the tainted map as ready",
			world: func() *world {
				w := disc()
				w.alloc("a0", "web", 0, onNode("n9"), disconnectedSince(10*time.Minute), next("a9"))
				w.alloc("a9", "web", 0, onNode("n2"))
				w.readyAgain("n9")
				return w
			},
			want: outcome{stop: l("a9"), reconnect: l("a0")}},
		{name: "failed while disconnected: stopped as failed and replaced",
			world: func() *world {
				w := disc()
				w.alloc("a0", "web", 0, failed, disconnectedSince(10*time.Minute))
				return w
			},
			want: outcome{stop: l("a0:failed"), place: l("web[0]")}},
		{name: "reconnecting alloc of an older job version is stopped",
			world: func() *world {
				w := disc()
				w.alloc("a0", "web", 0, ver(0), ownGroup(0, group("web", 1, maxDisconnect(time.Hour))), disconnectedSince(10*time.Minute), next("a9"))
				w.alloc("a9", "web", 0, onNode("n2"))
				return w
			},
			want: outcome{stop: l("a0")}},
		{name: "unknown alloc on a node back as ready is kept without an update",
			world: func() *world {
				w := disc()
				w.alloc("a0", "web", 0, onNode("n9"), unknownSince(10*time.Minute))
				w.readyAgain("n9")
				return w
			},
			want: outcome{}},
		{name: "unknown alloc on a node missing from the map stays unknown",
			world: func() *world {
				w := disc()
				w.alloc("a0", "web", 0, onNode("n9"), unknownSince(10*time.Minute))
				return w
			},
			want: outcome{}},
		{name: "zero max_client_disconnect marks nothing",
			world: func() *world {
				w := disc()
				w.job.TaskGroups[0].MaxClientDisconnect = new(time.Duration)
				w.alloc("a0", "web", 0, onNode("n9"))
				w.disconnected("n9")
				return w
			},
			want: outcome{attr: l("a0"), followups: d(30 * time.Second)}},
		{name: "drain, down and healthy together",
			world: func() *world {
				w := newWorld(group("web", 3))
				w.alloc("a0", "web", 0, onNode("n8"), migrateFlag)
				w.alloc("a1", "web", 1, onNode("n9"))
				w.alloc("a2", "web", 2)
				w.draining("n8")
				w.down("n9")
				return w
			},
			want: outcome{stop: l("a0", "a1:lost"), place: l("web[0]<a0", "web[1]/l<a1")}},
	})
}

func TestBatch(t *testing.T) {
	batchResched := resched(1, 24*time.Hour, 5*time.Second, structs.DelayFunctionConstant, 0, false)
	runScenarios(t, []scenario{
		{name: "fresh batch job places every name",
			world: func() *world { return batchWorld(group("work", 2)) },
			want:  outcome{place: l("work[0]", "work[1]")}},
		{name: "completed allocs are not run again",
			world: func() *world {
				w := batchWorld(group("work", 2))
				w.alloc("a0", "work", 0, complete)
				w.alloc("a1", "work", 1)
				return w
			},
			want: outcome{}},
		{name: "completed allocs of an older version are ignored: run again",
			world: func() *world {
				w := batchWorld(group("work", 1))
				w.alloc("a0", "work", 0, ver(0), complete)
				return w
			},
			want: outcome{place: l("work[0]")},
			more: counters("work", DesiredUpdates{Place: 1, Ignore: 1})},
		{name: "failed batch alloc rescheduled by the batch policy",
			world: func() *world {
				w := batchWorld(group("work", 1, batchResched))
				w.alloc("a0", "work", 0, failed)
				return w
			},
			want: outcome{stop: l("a0"), place: l("work[0]/r<a0")}},
		{name: "failed batch alloc with its attempt used: stays failed",
			world: func() *world {
				w := batchWorld(group("work", 1, batchResched))
				w.alloc("a0", "work", 0, failed, rescheduled(2*time.Hour, 5*time.Second))
				return w
			},
			want: outcome{}},
		{name: "evicted batch alloc is replaced",
			world: func() *world {
				w := batchWorld(group("work", 1))
				w.alloc("a0", "work", 0, evicted, complete)
				return w
			},
			want: outcome{place: l("work[0]")}},
		{name: "stopped batch alloc that ran successfully counts",
			world: func() *world {
				w := batchWorld(group("work", 1))
				w.alloc("a0", "work", 0, stopped, complete)
				return w
			},
			want: outcome{}},
		{name: "stopped batch alloc that failed is replaced",
			world: func() *world {
				w := batchWorld(group("work", 1))
				w.alloc("a0", "work", 0, stopped, failed)
				return w
			},
			want: outcome{place: l("work[0]")}},
		{name: "stopped batch alloc that never ran is replaced",
			world: func() *world {
				w := batchWorld(group("work", 1))
				w.alloc("a0", "work", 0, stopped, pending)
				return w
			},
			want: outcome{place: l("work[0]")}},
		{name: "batch alloc on a down node is lost and replaced",
			world: func() *world {
				w := batchWorld(group("work", 1))
				w.alloc("a0", "work", 0, onNode("n9"))
				w.down("n9")
				return w
			},
			want: outcome{stop: l("a0:lost"), place: l("work[0]/l<a0")}},
		{name: "failed alloc of an older version is ignored: run again",
			world: func() *world {
				w := batchWorld(group("work", 1, batchResched))
				w.alloc("a0", "work", 0, ver(0), failed)
				return w
			},
			want: outcome{place: l("work[0]")}},
		{name: "scale down never stops completed allocs",
			world: func() *world {
				w := batchWorld(group("work", 1))
				w.alloc("a0", "work", 0, complete)
				w.alloc("a1", "work", 1, complete)
				return w
			},
			want: outcome{}},
		{name: "scale down stops running allocs only",
			world: func() *world {
				w := batchWorld(group("work", 1))
				w.alloc("a0", "work", 0, complete)
				w.alloc("a1", "work", 1)
				return w
			},
			want: outcome{stop: l("a1")}},
		{name: "running alloc of an older version is replaced",
			world: func() *world {
				w := batchWorld(group("work", 1))
				w.alloc("a0", "work", 0, ver(0))
				return w
			},
			want: outcome{destructive: l("a0")}},
		{name: "recently failed batch alloc: follow-up later",
			world: func() *world {
				w := batchWorld(group("work", 1, resched(1, 24*time.Hour, 30*time.Second, structs.DelayFunctionConstant, 0, false)))
				w.alloc("a0", "work", 0, failedAt(10*time.Second))
				return w
			},
			want: outcome{attr: l("a0"), followups: d(20 * time.Second)}},
		{name: "completed allocs are asked about updates",
			world: func() *world {
				w := batchWorld(group("work", 1))
				w.alloc("a0", "work", 0, ver(0), complete, kind(UpdateInPlace))
				w.job.Version = 0
				return w
			},
			want: outcome{inplace: l("a0")}},
		{name: "stopped batch job leaves completed allocs",
			world: func() *world {
				w := batchWorld(group("work", 2))
				w.alloc("a0", "work", 0, complete)
				w.alloc("a1", "work", 1, failed)
				w.job.Stop = true
				return w
			},
			want: outcome{}},
		{name: "failed and replaced batch alloc is not rescheduled twice",
			world: func() *world {
				w := batchWorld(group("work", 1, batchResched))
				w.alloc("a0", "work", 0, failed, next("a1"))
				w.alloc("a1", "work", 0)
				return w
			},
			want: outcome{}},
	})
}
