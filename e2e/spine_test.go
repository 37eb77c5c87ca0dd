package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/internal/testjobs"
)

// serviceJob and batchJob are the shared test jobs (internal/testjobs).
var (
	serviceJob = testjobs.Service
	batchJob   = testjobs.Batch
)

func register(t *testing.T, c *api.Client, job *api.Job) string {
	t.Helper()
	resp, _, err := c.Jobs().Register(job, nil)
	if err != nil {
		t.Fatalf("register %s: %v", *job.ID, err)
	}
	return resp.EvalID
}

// allocsByStatus returns the job's allocs as "desired/client" → IDs.
func allocsByStatus(t *testing.T, c *api.Client, jobID string) map[string][]string {
	t.Helper()
	stubs, _, err := c.Jobs().Allocations(jobID, true, nil)
	if err != nil {
		t.Fatalf("allocations of %s: %v", jobID, err)
	}
	out := map[string][]string{}
	for _, s := range stubs {
		k := s.DesiredStatus + "/" + s.ClientStatus
		out[k] = append(out[k], s.ID)
	}
	for k := range out {
		sort.Strings(out[k])
	}
	return out
}

func count(m map[string][]string, key string) int { return len(m[key]) }

// TestDevAgentEndToEnd is issue 2's end-to-end scenario on the embedded
// home: scale, replace, survive an agent crash, stop; batch complete and
// failed.
func TestDevAgentEndToEnd(t *testing.T) {
	dir := t.TempDir()
	data := dir + "/data"
	a := startAgent(t, data, anyPort)
	c := a.client()
	script := taskScript(t, dir, "service.sh", "while true; do sleep 1; done")

	// Count 3: three allocs running, three processes alive.
	register(t, c, serviceJob("web", 3, script, "v1"))
	waitFor(t, 30*time.Second, "3 running allocs and 3 processes", func() bool {
		return count(allocsByStatus(t, c, "web"), "run/running") == 3 && len(procsWith(script+" v1")) == 3
	})

	// Count 1: two stopped, their processes gone.
	register(t, c, serviceJob("web", 1, script, "v1"))
	waitFor(t, 30*time.Second, "2 stopped allocs and 1 process", func() bool {
		m := allocsByStatus(t, c, "web")
		return count(m, "run/running") == 1 && count(m, "stop/complete") == 2 && len(procsWith(script+" v1")) == 1
	})
	before := allocsByStatus(t, c, "web")["run/running"][0]

	// Changed args: the alloc is replaced.
	register(t, c, serviceJob("web", 1, script, "v2"))
	var replacement string
	waitFor(t, 30*time.Second, "the alloc replaced by one running the new args", func() bool {
		m := allocsByStatus(t, c, "web")
		if count(m, "run/running") != 1 || m["run/running"][0] == before {
			return false
		}
		replacement = m["run/running"][0]
		return len(procsWith(script+" v1")) == 0 && len(procsWith(script+" v2")) == 1
	})
	alloc, _, err := c.Allocations().Info(replacement, nil)
	if err != nil {
		t.Fatal(err)
	}
	if alloc.PreviousAllocation != before {
		t.Fatalf("replacement's previous alloc %q, want %q", alloc.PreviousAllocation, before)
	}
	pidsBefore := procsWith(script + " v2")

	// The agent crashes and comes back: same job, same allocs, the task
	// not started twice.
	statusBefore := allocsByStatus(t, c, "web")
	a.kill()
	if got := procsWith(script + " v2"); len(got) != 1 {
		t.Fatalf("task processes after the agent crash: %v (tasks run under their supervisors)", got)
	}
	a = startAgent(t, data, anyPort)
	c = a.client()
	job, _, err := c.Jobs().Info("web", nil)
	if err != nil || *job.Version != 2 {
		t.Fatalf("job after restart: %v %v", job, err)
	}
	waitFor(t, 15*time.Second, "the same allocs after restart", func() bool {
		return fmt.Sprint(allocsByStatus(t, c, "web")) == fmt.Sprint(statusBefore)
	})
	time.Sleep(2 * time.Second) // give a wrong restore the time to start a second copy
	if got := procsWith(script + " v2"); len(got) != 1 || got[0] != pidsBefore[0] {
		t.Fatalf("task processes after restart: %v, want the same single pid %v", got, pidsBefore)
	}

	// Stop: no process left.
	if _, _, err := c.Jobs().Deregister("web", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "every alloc stopped and no process left", func() bool {
		m := allocsByStatus(t, c, "web")
		return count(m, "run/running") == 0 && len(procsWith(script)) == 0
	})
	job, _, _ = c.Jobs().Info("web", nil)
	if !*job.Stop || *job.Status != "dead" {
		t.Fatalf("stopped job: stop %v status %s", *job.Stop, *job.Status)
	}

	// Batch: exit 0 → complete, exit 1 → failed.
	ok := taskScript(t, dir, "ok.sh", "echo done; exit 0")
	bad := taskScript(t, dir, "bad.sh", "echo failing >&2; exit 1")
	register(t, c, batchJob("batch-ok", ok))
	register(t, c, batchJob("batch-bad", bad))
	waitFor(t, 30*time.Second, "batch allocs to finish", func() bool {
		return count(allocsByStatus(t, c, "batch-ok"), "run/complete") == 1 && count(allocsByStatus(t, c, "batch-bad"), "run/failed") == 1
	})
	failed := allocsByStatus(t, c, "batch-bad")["run/failed"][0]
	fa, _, err := c.Allocations().Info(failed, nil)
	if err != nil {
		t.Fatal(err)
	}
	var terminated *api.TaskEvent
	for _, e := range fa.TaskStates["main"].Events {
		if e.Type == api.TaskTerminated {
			terminated = e
		}
	}
	if terminated == nil || !strings.Contains(terminated.DisplayMessage+fmt.Sprint(terminated.ExitCode), "1") || terminated.ExitCode != 1 {
		t.Fatalf("failed batch task events: %+v", fa.TaskStates["main"].Events)
	}
	okJob, _, _ := c.Jobs().Info("batch-ok", nil)
	if *okJob.Status != "dead" {
		t.Fatalf("completed batch job status %s", *okJob.Status)
	}
	// A failed alloc of a wanted job creates an alloc-failure evaluation.
	evals, _, err := c.Jobs().Evaluations("batch-bad", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evals {
		found = found || e.TriggeredBy == "alloc-failure"
	}
	if !found {
		t.Fatalf("no alloc-failure evaluation among %d evals", len(evals))
	}
}

// TestNomadGoClient: Nomad's own Go API client registers a job, reads its
// allocations and evaluation, and stops it against the dev agent.
func TestNomadGoClient(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir+"/data", anyPort)
	c := a.client()
	script := taskScript(t, dir, "svc.sh", "while true; do sleep 1; done")

	resp, wm, err := c.Jobs().Register(serviceJob("nomad-client", 2, script), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID == "" || resp.JobModifyIndex == 0 || wm.LastIndex == 0 {
		t.Fatalf("register response %+v, write meta %+v", resp, wm)
	}
	var ev *api.Evaluation
	waitFor(t, 20*time.Second, "the evaluation to complete", func() bool {
		var err error
		ev, _, err = c.Evaluations().Info(resp.EvalID, nil)
		return err == nil && ev.Status == "complete"
	})
	if ev.JobID != "nomad-client" || ev.TriggeredBy != "job-register" {
		t.Fatalf("eval: %+v", ev)
	}
	evAllocs, _, err := c.Evaluations().Allocations(resp.EvalID, nil)
	if err != nil || len(evAllocs) != 2 {
		t.Fatalf("eval allocations: %d %v", len(evAllocs), err)
	}
	// A blocking query on the job's allocations returns when they change.
	allocs, qm, err := c.Jobs().Allocations("nomad-client", false, nil)
	if err != nil || len(allocs) != 2 || qm.LastIndex == 0 || !qm.KnownLeader {
		t.Fatalf("allocations: %d %+v %v", len(allocs), qm, err)
	}
	waitFor(t, 20*time.Second, "allocs running", func() bool {
		allocs, _, _ = c.Jobs().Allocations("nomad-client", false, nil)
		return len(allocs) == 2 && allocs[0].ClientStatus == "running" && allocs[1].ClientStatus == "running"
	})
	full, _, err := c.Allocations().Info(allocs[0].ID, nil)
	if err != nil || full.Job == nil || *full.Job.ID != "nomad-client" || full.TaskStates["server"].State != "running" {
		t.Fatalf("alloc info: %+v %v", full, err)
	}
	sum, _, err := c.Jobs().Summary("nomad-client", nil)
	if err != nil || sum.Summary["web"].Running != 2 {
		t.Fatalf("summary: %+v %v", sum, err)
	}
	nodes, _, err := c.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	node, _, err := c.Nodes().Info(nodes[0].ID, nil)
	if err != nil || node.Attributes["kernel.name"] != "linux" || node.NodeResources.Cpu.CpuShares == 0 || node.Drivers["raw_exec"] == nil {
		t.Fatalf("node: %+v %v", node, err)
	}
	self, err := c.Agent().Self()
	if err != nil || self.Config["Region"] != "global" {
		t.Fatalf("agent self: %+v %v", self, err)
	}
	// `nomad node status -self` reads the node's ID from the stats.
	if self.Stats["client"]["node_id"] != nodes[0].ID || self.Stats["nomad"]["leader"] != "true" {
		t.Fatalf("agent self stats: %+v", self.Stats)
	}
	evalID, _, err := c.Jobs().Deregister("nomad-client", true, nil)
	if err != nil || evalID == "" {
		t.Fatalf("deregister: %v", err)
	}
	waitFor(t, 20*time.Second, "no process left", func() bool { return len(procsWith(script)) == 0 })
	if _, _, err := c.Jobs().Info("nomad-client", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("purged job: %v", err)
	}
}
