package nodeagent

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

// deployedAlloc returns a service alloc in deployment "d1" whose group has
// the given health settings.
func deployedAlloc(minHealthy, deadline time.Duration, tasks ...*structs.Task) *structs.Allocation {
	job := testJob(structs.JobTypeService, tasks...)
	job.TaskGroups[0].Update = &structs.UpdateStrategy{MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckChecks,
		MinHealthyTime: minHealthy, HealthyDeadline: deadline}
	alloc := testAlloc(job)
	alloc.DeploymentID = "d1"
	return alloc
}

// updateAlloc changes an alloc on the fake control plane's side.
func (f *fakeCP) updateAlloc(id string, change func(a *structs.Allocation)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.index++
	a := f.allocs[id].Copy()
	change(a)
	a.AllocModifyIndex = f.index
	f.allocs[id] = a
}

func health(a *structs.Allocation) string {
	switch {
	case a.DeploymentStatus.IsHealthy():
		return "healthy"
	case a.DeploymentStatus.IsUnhealthy():
		return "unhealthy"
	}
	return "unset"
}

func hasHealth(want string) func(a *structs.Allocation) bool {
	return func(a *structs.Allocation) bool { return health(a) == want }
}

// TestHealthHealthyAfterMinHealthyTime: healthy only once every task has
// run min_healthy_time; a restart starts the wait over; then joining
// another deployment forgets the verdict and decides again.
func TestHealthHealthyAfterMinHealthyTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	clk := newFakeClock()
	cfg := testConfig(t, dir)
	cfg.Clock = clk
	cfg.DevMode = true // stops the tasks at the end
	startAgent(t, cp, cfg)

	// The first run fails, the second runs on.
	flaky := shTask("flaky", `if [ ! -f "$NOMAD_ALLOC_DIR/data/ran" ]; then touch "$NOMAD_ALLOC_DIR/data/ran"; exit 1; fi
while true; do sleep 0.1; done`)
	steady := shTask("steady", "while true; do sleep 0.1; done")
	alloc := deployedAlloc(10*time.Second, time.Hour, flaky, steady)
	alloc.Job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 3, Interval: time.Hour, Delay: 5 * time.Second, Mode: structs.RestartPolicyModeFail}
	cp.addAlloc(alloc)

	cp.waitReport(t, alloc.ID, "flaky restarting", func(a *structs.Allocation) bool {
		return a.TaskStates["flaky"] != nil && a.TaskStates["flaky"].Restarts == 1 && a.TaskStates["steady"].State == structs.TaskStateRunning
	})
	t0 := clk.Now()
	waitFor(t, 5*time.Second, "restart delay timer", func() bool {
		return clk.hasWaiter(func(at time.Time) bool {
			return !at.Before(t0.Add(5*time.Second)) && !at.After(t0.Add(6250*time.Millisecond))
		})
	})
	clk.Advance(8 * time.Second) // the restart delay (5s + jitter ≤ 6.25s) passes
	rep := cp.waitReport(t, alloc.ID, "both running", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusRunning && a.TaskStates["flaky"].State == structs.TaskStateRunning
	})
	if health(rep) != "unset" {
		t.Fatalf("health decided before min_healthy_time: %+v", rep.DeploymentStatus)
	}
	restartedAt := rep.TaskStates["flaky"].StartedAt
	clk.waitTimer(t, restartedAt.Add(10*time.Second))
	clk.Advance(9 * time.Second)
	time.Sleep(300 * time.Millisecond)
	if r := cp.latest(alloc.ID); health(r) != "unset" {
		t.Fatalf("healthy 9s after the restart: %+v", r.DeploymentStatus)
	}
	clk.Advance(time.Second)
	rep = cp.waitReport(t, alloc.ID, "healthy", hasHealth("healthy"))
	if want := restartedAt.Add(10 * time.Second); !rep.DeploymentStatus.Timestamp.Equal(want) {
		t.Errorf("healthy at %v, want %v (min_healthy_time after the last start)", rep.DeploymentStatus.Timestamp, want)
	}
	// The report names the deployment its health is for, so that the
	// control plane can ignore it once the alloc is in another one.
	if rep.DeploymentID != "d1" {
		t.Errorf("health report names deployment %q, want d1", rep.DeploymentID)
	}

	// The alloc joins another deployment (the server resets its status):
	// the verdict is forgotten and decided again.
	cp.updateAlloc(alloc.ID, func(a *structs.Allocation) { a.DeploymentID = "d2"; a.DeploymentStatus = nil })
	cp.waitReport(t, alloc.ID, "health forgotten in the new deployment", func(a *structs.Allocation) bool { return a.DeploymentStatus == nil })
	clk.waitTimer(t, clk.Now().Add(10*time.Second))
	clk.Advance(10 * time.Second)
	rep = cp.waitReport(t, alloc.ID, "healthy in d2", hasHealth("healthy"))
	if want := restartedAt.Add(20 * time.Second); !rep.DeploymentStatus.Timestamp.Equal(want) {
		t.Errorf("d2 verdict reused d1's: %+v", rep.DeploymentStatus)
	}
	if rep.DeploymentID != "d2" {
		t.Errorf("health report in d2 names deployment %q", rep.DeploymentID)
	}
}

// TestHealthUnhealthyOnFailure: a task that fails makes the alloc
// unhealthy at once.
func TestHealthUnhealthyOnFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	alloc := deployedAlloc(time.Hour, time.Hour, shTask("bad", "sleep 0.2; exit 3"), shTask("other", "while true; do sleep 0.1; done"))
	cp.addAlloc(alloc)
	rep := cp.waitReport(t, alloc.ID, "unhealthy", hasHealth("unhealthy"))
	if rep.ClientStatus != structs.AllocClientStatusFailed || rep.DeploymentID != "d1" {
		t.Errorf("client status %s, deployment %q", rep.ClientStatus, rep.DeploymentID)
	}
	waitFor(t, 5*time.Second, "no process left", func() bool { return len(procsReferencing(dir)) == 0 })
}

// TestHealthKeptWhenFailingAfterHealthy: an alloc judged healthy that
// fails afterwards is reported failed and still healthy (the verdict
// stands, as in Nomad), not unhealthy: its deployment has counted it,
// and only a healthy failed alloc is rescheduled while the deployment
// runs.
func TestHealthKeptWhenFailingAfterHealthy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	alloc := deployedAlloc(100*time.Millisecond, time.Hour, shTask("late", "sleep 1; exit 3"))
	alloc.Job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 0, Interval: time.Hour, Delay: time.Second, Mode: structs.RestartPolicyModeFail}
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "healthy while it runs", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusRunning && health(a) == "healthy"
	})
	rep := cp.waitReport(t, alloc.ID, "failed", func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusFailed })
	if health(rep) != "healthy" || rep.DeploymentID != "d1" {
		t.Errorf("failed after it was healthy: reported %s in deployment %q, want healthy in d1", health(rep), rep.DeploymentID)
	}
	waitFor(t, 5*time.Second, "no process left", func() bool { return len(procsReferencing(dir)) == 0 })
}

// TestHealthUnhealthyAtDeadline: tasks that run but not long enough before
// healthy_deadline make the alloc unhealthy at the deadline; a verdict
// survives an agent restart and is not decided again.
func TestHealthUnhealthyAtDeadline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	clk := newFakeClock()
	cfg := testConfig(t, dir)
	cfg.Clock = clk
	a1 := startAgent(t, cp, cfg)

	alloc := deployedAlloc(2*time.Minute, time.Minute, shTask("server", "while true; do sleep 0.1; done"))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	clk.waitTimer(t, clk.Now().Add(time.Minute))
	clk.waitTimer(t, clk.Now().Add(2*time.Minute))
	clk.Advance(59 * time.Second)
	time.Sleep(200 * time.Millisecond)
	if r := cp.latest(alloc.ID); health(r) != "unset" {
		t.Fatalf("decided before the deadline: %+v", r.DeploymentStatus)
	}
	clk.Advance(time.Second)
	rep := cp.waitReport(t, alloc.ID, "unhealthy at the deadline", hasHealth("unhealthy"))
	if rep.ClientStatus != structs.AllocClientStatusRunning {
		t.Errorf("an unhealthy alloc keeps running: %s", rep.ClientStatus)
	}

	a1.stop(t)
	cp.clearReports()
	a2 := startAgent(t, cp, cfg)
	rep = cp.waitReport(t, alloc.ID, "restored", hasStatus(structs.AllocClientStatusRunning))
	if health(rep) != "unhealthy" {
		t.Errorf("verdict lost across a restart: %+v", rep.DeploymentStatus)
	}
	cp.stopAlloc(alloc.ID)
	cp.waitReport(t, alloc.ID, "stopped", hasStatus(structs.AllocClientStatusComplete))
	a2.stop(t)
}

// TestHealthNotWatched: no deployment, manual health, or a batch job: the
// agent never reports health.
func TestHealthNotWatched(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	cfg := testConfig(t, dir)
	cfg.DevMode = true // stops the tasks at the end
	startAgent(t, cp, cfg)

	plain := testAlloc(testJob(structs.JobTypeService, shTask("s", "while true; do sleep 0.1; done")))
	manual := deployedAlloc(0, time.Hour, shTask("s", "while true; do sleep 0.1; done"))
	manual.Job.TaskGroups[0].Update.HealthCheck = structs.UpdateHealthCheckManual
	watched := deployedAlloc(0, time.Hour, shTask("s", "while true; do sleep 0.1; done"))
	for _, a := range []*structs.Allocation{plain, manual, watched} {
		cp.addAlloc(a)
	}
	cp.waitReport(t, watched.ID, "min_healthy_time 0: healthy once running", hasHealth("healthy"))
	for _, a := range []*structs.Allocation{plain, manual} {
		if r := cp.latest(a.ID); r == nil || r.DeploymentStatus != nil {
			t.Errorf("health reported for %s: %+v", a.ID, r)
		}
	}
}
