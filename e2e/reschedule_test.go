package e2e

import (
	"sort"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// TestBatchRescheduleDelayAndAttempts: a batch task that exits 1 with
// reschedule { delay = "5s", attempts = 2 } is replaced after at least 5 s,
// twice, and then no more (the reconciler's follow-up evals going through
// the delayed-eval path).
func TestBatchRescheduleDelayAndAttempts(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir+"/data", anyPort)
	c := a.client()
	script := taskScript(t, dir, "fail.sh", "exit 1")
	job := batchJob("flaky", script)
	job.TaskGroups[0].ReschedulePolicy = &api.ReschedulePolicy{
		Attempts: new(2), Interval: new(time.Hour), Delay: new(5 * time.Second),
		DelayFunction: new("constant"), Unlimited: new(false),
	}
	register(t, c, job)

	allocs := func() []*api.Allocation {
		stubs, _, err := c.Jobs().Allocations("flaky", true, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []*api.Allocation
		for _, s := range stubs {
			full, _, err := c.Allocations().Info(s.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, full)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].CreateIndex < out[j].CreateIndex })
		return out
	}
	waitFor(t, 40*time.Second, "three failed allocs (the original and two replacements)", func() bool {
		as := allocs()
		if len(as) != 3 {
			return false
		}
		for _, a := range as {
			if a.ClientStatus != "failed" {
				return false
			}
		}
		return true
	})
	as := allocs()
	for i := 1; i < 3; i++ {
		prev, cur := as[i-1], as[i]
		if cur.PreviousAllocation != prev.ID || prev.NextAllocation != cur.ID {
			t.Fatalf("replacement chain broken at %d: prev.next=%q cur.prev=%q", i, prev.NextAllocation, cur.PreviousAllocation)
		}
		failedAt := prev.TaskStates["main"].FinishedAt
		created := time.Unix(0, cur.CreateTime)
		if gap := created.Sub(failedAt); gap < 5*time.Second {
			t.Fatalf("replacement %d placed %s after the failure, before the 5 s delay", i, gap)
		}
		if cur.RescheduleTracker == nil || len(cur.RescheduleTracker.Events) != i ||
			cur.RescheduleTracker.Events[i-1].PrevAllocID != prev.ID {
			t.Fatalf("replacement %d reschedule tracker: %+v", i, cur.RescheduleTracker)
		}
		// Nomad's Go client has no Delay on RescheduleEvent; read it raw.
		var raw struct {
			RescheduleTracker struct {
				Events []struct{ Delay time.Duration }
			}
		}
		if _, err := c.Raw().Query("/v1/allocation/"+cur.ID, &raw, nil); err != nil {
			t.Fatal(err)
		}
		if d := raw.RescheduleTracker.Events[i-1].Delay; d != 5*time.Second {
			t.Fatalf("replacement %d: reschedule delay %s, want 5s", i, d)
		}
		if prev.FollowupEvalID == "" {
			t.Fatalf("failed alloc %d carries no follow-up eval", i-1)
		}
	}
	// Attempts are used up: nothing more is placed.
	time.Sleep(8 * time.Second)
	if n := len(allocs()); n != 3 {
		t.Fatalf("%d allocs after the attempts ran out, want 3", n)
	}
}

// TestDeploymentVisible: a service job with an update strategy gets a
// deployment, visible at GET /v1/job/:id/deployment.
func TestDeploymentVisible(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir+"/data", anyPort)
	c := a.client()
	script := taskScript(t, dir, "svc.sh", "while true; do sleep 1; done")
	job := serviceJob("rolling", 2, script)
	job.TaskGroups[0].Update = &api.UpdateStrategy{MaxParallel: new(1), MinHealthyTime: new(time.Second),
		HealthyDeadline: new(time.Minute), ProgressDeadline: new(5 * time.Minute)}
	register(t, c, job)
	var d *api.Deployment
	waitFor(t, 20*time.Second, "the job's deployment", func() bool {
		var err error
		d, _, err = c.Jobs().LatestDeployment("rolling", nil)
		return err == nil && d != nil
	})
	g := d.TaskGroups["web"]
	if d.JobID != "rolling" || d.JobVersion != 0 || g == nil || g.DesiredTotal != 2 {
		t.Fatalf("deployment: %+v group %+v", d, g)
	}
	if d.Status != "running" && d.Status != "successful" {
		t.Fatalf("deployment status %q", d.Status)
	}
	waitFor(t, 20*time.Second, "placed allocs counted on the deployment", func() bool {
		d, _, _ = c.Deployments().Info(d.ID, nil)
		return d.TaskGroups["web"].PlacedAllocs == 2
	})
	stubs, _, _ := c.Jobs().Allocations("rolling", false, nil)
	for _, s := range stubs {
		full, _, _ := c.Allocations().Info(s.ID, nil)
		if full.DeploymentID != d.ID {
			t.Fatalf("alloc %s not in the deployment: %q", s.ID, full.DeploymentID)
		}
	}
	list, _, err := c.Jobs().Deployments("rolling", false, nil)
	if err != nil || len(list) != 1 {
		t.Fatalf("job deployments: %d %v", len(list), err)
	}
	// A batch job has no update strategy, hence no deployment: the
	// endpoint answers null. (Service jobs get Nomad's default strategy.)
	plain := batchJob("plain", taskScript(t, dir, "ok.sh", "exit 0"))
	register(t, c, plain)
	time.Sleep(time.Second)
	if d, _, err := c.Jobs().LatestDeployment("plain", nil); err != nil || d != nil {
		t.Fatalf("batch job: %+v %v", d, err)
	}
}

// TestBatchRescheduleInFullCluster is issue 14's batch case: in a full
// cluster, a batch job whose policy allows one reschedule per hour gets
// at most two allocs per name (the original and one replacement, which
// names the original as its previous alloc), however often its
// replacements have to wait for room. Before the fix a failed alloc was
// stopped even when its replacement found no room, the name was placed
// afresh later with an empty tracker, and the names ran again and again.
func TestBatchRescheduleInFullCluster(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir+"/data", anyPort)
	c := a.client()
	nodes, _, err := c.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	node, _, err := c.Nodes().Info(nodes[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	capacity := node.NodeResources.Cpu.CpuShares
	if r := node.ReservedResources; r != nil {
		capacity -= int64(r.Cpu.CpuShares)
	}
	// The filler leaves room for two of the job's four allocs.
	share := int(capacity / 10)
	filler := serviceJob("filler", 1, taskScript(t, dir, "idle.sh", "while true; do sleep 1; done"))
	filler.TaskGroups[0].Tasks[0].Resources.CPU = new(int(capacity) - 2*share)
	register(t, c, filler)
	waitFor(t, 20*time.Second, "the filler running", func() bool {
		return len(allocsByStatus(t, c, "filler")["run/running"]) == 1
	})

	// Each alloc fails 6 s after it starts: longer than the reschedule
	// delay, so a replacement is due while the room is taken by others.
	job := batchJob("crowded", taskScript(t, dir, "fail-later.sh", "sleep 6; exit 1"))
	tg := job.TaskGroups[0]
	tg.Count = new(4)
	tg.Tasks[0].Resources.CPU = new(share)
	tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: new(1), Interval: new(time.Hour), Delay: new(5 * time.Second),
		DelayFunction: new("constant"), Unlimited: new(false)}
	register(t, c, job)

	byName := func() map[string][]*api.Allocation {
		stubs, _, err := c.Jobs().Allocations("crowded", true, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]*api.Allocation{}
		for _, s := range stubs {
			full, _, err := c.Allocations().Info(s.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			out[full.Name] = append(out[full.Name], full)
		}
		for _, as := range out {
			sort.Slice(as, func(i, j int) bool { return as[i].CreateIndex < as[j].CreateIndex })
		}
		return out
	}
	settled := func(m map[string][]*api.Allocation) bool {
		n := 0
		for _, as := range m {
			for _, a := range as {
				if a.ClientStatus != "failed" {
					return false
				}
				n++
			}
		}
		return len(m) == 4 && n == 8
	}
	waitFor(t, 60*time.Second, "every name failed twice (the original and its one replacement)", func() bool {
		m := byName()
		for name, as := range m {
			if len(as) > 2 {
				t.Fatalf("%s has %d allocs, want at most 2", name, len(as))
			}
		}
		return settled(m)
	})
	time.Sleep(4 * time.Second) // nothing more may come
	m := byName()
	if !settled(m) {
		t.Fatalf("more allocs after the job settled: %d names", len(m))
	}
	for name, as := range m {
		first, second := as[0], as[1]
		if first.PreviousAllocation != "" || second.PreviousAllocation != first.ID || first.NextAllocation != second.ID {
			t.Fatalf("%s: chain %q→%q (next %q), want the second to replace the first", name,
				first.PreviousAllocation, second.PreviousAllocation, first.NextAllocation)
		}
		if second.RescheduleTracker == nil || len(second.RescheduleTracker.Events) != 1 {
			t.Fatalf("%s: replacement tracker %+v, want one event", name, second.RescheduleTracker)
		}
	}
}
