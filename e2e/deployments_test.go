package e2e

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// rollingJob is a service job whose task runs script with version as its
// argument, with a rolling update of max_parallel 1 and a short
// min_healthy_time.
func rollingJob(id string, count int, script, version string, update *api.UpdateStrategy) *api.Job {
	job := serviceJob(id, count, script, version)
	if update == nil {
		update = &api.UpdateStrategy{}
	}
	if update.MaxParallel == nil {
		update.MaxParallel = new(1)
	}
	update.MinHealthyTime = new(time.Second)
	if update.HealthyDeadline == nil {
		update.HealthyDeadline = new(30 * time.Second)
	}
	if update.ProgressDeadline == nil {
		update.ProgressDeadline = new(time.Minute)
	}
	update.HealthCheck = new("task_states")
	job.TaskGroups[0].Update = update
	return job
}

// latestDeployment waits for the job's deployment of version v to reach
// status and returns it.
func (cl *cluster) waitDeployment(job string, version uint64, status string, within time.Duration) *api.Deployment {
	cl.t.Helper()
	var d *api.Deployment
	waitFor(cl.t, within, fmt.Sprintf("deployment of %s version %d %s", job, version, status), func() bool {
		var err error
		d, _, err = cl.c.Jobs().LatestDeployment(job, nil)
		return err == nil && d != nil && d.JobVersion == version && d.Status == status
	})
	return d
}

// versions counts the job's running allocs by the job version they run.
func (cl *cluster) versions(job string) map[uint64]int {
	out := map[uint64]int{}
	for _, a := range cl.allocs(job) {
		if a.DesiredStatus == "run" && a.ClientStatus == "running" {
			out[a.JobVersion]++
		}
	}
	return out
}

// TestRollingUpdate: count 3, max_parallel 1, new args: never more than
// one old alloc is stopped before its replacement is healthy, and the
// deployment ends successful with every alloc on the new version.
func TestRollingUpdate(t *testing.T) {
	cl := newCluster(t, time.Second)
	cl.addClient("alpha")
	cl.addClient("beta")
	script := taskScript(t, cl.dir, "svc.sh", "while true; do sleep 1; done")
	register(t, cl.c, rollingJob("roll", 3, script, "v1", nil))
	cl.waitDeployment("roll", 0, "successful", 60*time.Second)

	// Watch the rollout: old allocs told to stop minus new allocs healthy
	// must never exceed max_parallel.
	stop := make(chan struct{})
	worst := make(chan int, 1)
	go func() {
		high := 0
		for {
			select {
			case <-stop:
				worst <- high
				return
			case <-time.After(50 * time.Millisecond):
			}
			stubs, _, err := cl.c.Jobs().Allocations("roll", true, nil)
			if err != nil {
				continue
			}
			oldStopped, newHealthy := 0, 0
			for _, a := range stubs {
				if a.JobVersion == 0 && a.DesiredStatus == "stop" {
					oldStopped++
				}
				if a.JobVersion == 1 && a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil && *a.DeploymentStatus.Healthy {
					newHealthy++
				}
			}
			if d := oldStopped - newHealthy; d > high {
				high = d
			}
		}
	}()
	register(t, cl.c, rollingJob("roll", 3, script, "v2", nil))
	cl.waitDeployment("roll", 1, "successful", 90*time.Second)
	close(stop)
	if high := <-worst; high > 1 {
		t.Fatalf("%d old allocs were stopped ahead of healthy replacements (max_parallel is 1)", high)
	}
	waitFor(t, 20*time.Second, "3 allocs of version 1 and no old process", func() bool {
		v := cl.versions("roll")
		return v[1] == 3 && v[0] == 0 && len(procsWith(script+" v1")) == 0 && len(procsWith(script+" v2")) == 3
	})
	job, _, _ := cl.c.Jobs().Info("roll", nil)
	if job.Stable == nil || !*job.Stable {
		t.Fatal("a successful deployment must mark its job version stable")
	}
}

// TestCanaryPromotion: canary = 1 runs beside the old allocs until
// `drover deployment promote`; then the rest is rolled. With auto_promote
// no command is needed.
func TestCanaryPromotion(t *testing.T) {
	cl := newCluster(t, time.Second)
	cl.addClient("alpha")
	cl.addClient("beta")
	script := taskScript(t, cl.dir, "svc.sh", "while true; do sleep 1; done")
	canary := func(version string, auto bool) *api.Job {
		return rollingJob("canary", 2, script, version, &api.UpdateStrategy{Canary: new(1), AutoPromote: new(auto)})
	}
	register(t, cl.c, canary("v1", false))
	cl.waitDeployment("canary", 0, "successful", 60*time.Second)

	register(t, cl.c, canary("v2", false))
	waitFor(t, 60*time.Second, "a healthy canary beside both old allocs", func() bool {
		d, _, err := cl.c.Jobs().LatestDeployment("canary", nil)
		if err != nil || d == nil || d.JobVersion != 1 {
			return false
		}
		g := d.TaskGroups["web"]
		v := cl.versions("canary")
		return g != nil && len(g.PlacedCanaries) == 1 && g.HealthyAllocs == 1 && v[0] == 2 && v[1] == 1
	})
	// It stays that way: the deployment waits for the promotion.
	time.Sleep(3 * time.Second)
	d, _, _ := cl.c.Jobs().LatestDeployment("canary", nil)
	if v := cl.versions("canary"); d.Status != "running" || d.TaskGroups["web"].Promoted || v[0] != 2 || v[1] != 1 {
		t.Fatalf("before promotion: deployment %s promoted %v versions %v", d.Status, d.TaskGroups["web"].Promoted, v)
	}
	out, code := cli(t, cl.server.addr, "deployment", "promote", "-detach", d.ID[:8])
	if code != 0 {
		t.Fatalf("deployment promote: %d\n%s", code, out)
	}
	mustContain(t, out, "promoted")
	cl.waitDeployment("canary", 1, "successful", 60*time.Second)
	waitFor(t, 20*time.Second, "both allocs on version 1", func() bool {
		v := cl.versions("canary")
		return v[1] == 2 && v[0] == 0
	})

	// auto_promote: no command needed.
	register(t, cl.c, canary("v3", true))
	cl.waitDeployment("canary", 2, "successful", 90*time.Second)
	waitFor(t, 20*time.Second, "both allocs on version 2", func() bool {
		v := cl.versions("canary")
		return v[2] == 2 && v[1] == 0
	})
}

// TestAutoRevert: a new version whose task exits at once, with
// auto_revert: the deployment fails, the job goes back to the previous
// version, and processes of the old version run.
func TestAutoRevert(t *testing.T) {
	cl := newCluster(t, time.Second)
	cl.addClient("alpha")
	good := taskScript(t, cl.dir, "good.sh", "while true; do sleep 1; done")
	bad := taskScript(t, cl.dir, "bad.sh", "exit 1")
	job := func(script, version string) *api.Job {
		j := rollingJob("revert", 2, script, version, &api.UpdateStrategy{AutoRevert: new(true),
			HealthyDeadline: new(5 * time.Second), ProgressDeadline: new(10 * time.Second)})
		j.TaskGroups[0].RestartPolicy = &api.RestartPolicy{Attempts: new(0), Mode: new("fail"), Interval: new(time.Minute), Delay: new(time.Second)}
		return j
	}
	register(t, cl.c, job(good, "v1"))
	cl.waitDeployment("revert", 0, "successful", 60*time.Second)

	register(t, cl.c, job(bad, "v2"))
	// The revert registers a new version with its own deployment, so look
	// for version 1's among all of the job's deployments.
	var failed *api.Deployment
	waitFor(t, 60*time.Second, "version 1's deployment failed", func() bool {
		ds, _, err := cl.c.Jobs().Deployments("revert", false, nil)
		if err != nil {
			return false
		}
		for _, d := range ds {
			if d.JobVersion == 1 && d.Status == "failed" {
				failed = d
				return true
			}
		}
		return false
	})
	if !regexp.MustCompile(`rolling back to job version 0`).MatchString(failed.StatusDescription) {
		t.Fatalf("failed deployment description %q", failed.StatusDescription)
	}
	waitFor(t, 60*time.Second, "the job back on version 0's spec with its processes running", func() bool {
		j, _, err := cl.c.Jobs().Info("revert", nil)
		if err != nil || *j.Version < 2 {
			return false
		}
		args := j.TaskGroups[0].Tasks[0].Config["args"].([]any)
		running := 0
		for v, n := range cl.versions("revert") {
			if v == *j.Version {
				running += n
			}
		}
		return args[0] == good && running == 2 && len(procsWith(good+" v1")) == 2
	})
}

// TestFailingAllocRescheduledDuringDeployment: with a progress deadline
// (Nomad's default update strategy has one), an alloc that fails its
// health does not fail the deployment: it is rescheduled after its delay,
// as Nomad's deployment watcher allows.
func TestFailingAllocRescheduledDuringDeployment(t *testing.T) {
	cl := newCluster(t, time.Second)
	cl.addClient("alpha")
	bad := taskScript(t, cl.dir, "bad.sh", "exit 7")
	job := rollingJob("flaky-svc", 1, bad, "v1", &api.UpdateStrategy{ProgressDeadline: new(5 * time.Minute)})
	job.TaskGroups[0].RestartPolicy = &api.RestartPolicy{Attempts: new(0), Mode: new("fail"), Interval: new(time.Minute), Delay: new(time.Second)}
	job.TaskGroups[0].ReschedulePolicy = &api.ReschedulePolicy{Unlimited: new(true), Delay: new(5 * time.Second), DelayFunction: new("constant")}
	register(t, cl.c, job)
	var first *api.AllocationListStub
	waitFor(t, 30*time.Second, "the first alloc failed", func() bool {
		for _, a := range cl.allocs("flaky-svc") {
			if a.ClientStatus == "failed" {
				first = a
				return true
			}
		}
		return false
	})
	waitFor(t, 30*time.Second, "a replacement of the failed alloc", func() bool {
		for _, a := range cl.allocs("flaky-svc") {
			if a.ID != first.ID {
				full, _, err := cl.c.Allocations().Info(a.ID, nil)
				return err == nil && full.PreviousAllocation == first.ID
			}
		}
		return false
	})
	if d, _, err := cl.c.Jobs().LatestDeployment("flaky-svc", nil); err != nil || d == nil || d.Status != "running" {
		t.Fatalf("the deployment must wait for its progress deadline: %+v %v", d, err)
	}
}
