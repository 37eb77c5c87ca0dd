package e2e

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/structs"
)

// children returns the launch times of a periodic job's children.
func children(t *testing.T, c *api.Client, parent string) []time.Time {
	t.Helper()
	stubs, _, err := c.Jobs().PrefixList(parent + "/periodic-")
	if err != nil {
		t.Fatalf("children of %s: %v", parent, err)
	}
	var out []time.Time
	for _, s := range stubs {
		if at, ok := structs.PeriodicLaunchTime(parent, s.ID); ok && s.ParentID == parent {
			out = append(out, at)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// TestPeriodicAndDispatchEndToEnd: with the real binary, a periodic job
// (Nomad's 7-field cron, every 2 s) launches children that run to
// completion; after the agent was down for a while it launches at most one
// child for the launches it missed, then goes on; a parameterized job
// dispatched with a payload runs a task that prints its payload file.
func TestPeriodicAndDispatchEndToEnd(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir, anyPort)
	c := a.client()

	cron := api.NewBatchJob("tick", "tick", "global", 50)
	cron.Periodic = &api.PeriodicConfig{Spec: ptr("*/2 * * * * * *"), ProhibitOverlap: ptr(true)}
	cron.AddTaskGroup(noRestartGroup("g", rawExecTask("t", `echo tick`)))
	register(t, c, cron)

	proc := api.NewBatchJob("proc", "proc", "global", 50)
	proc.ParameterizedJob = &api.ParameterizedJobConfig{Payload: "required", MetaRequired: []string{"who"}}
	catTask := rawExecTask("cat", `cat local/in.txt; echo " to $NOMAD_META_who"`)
	catTask.DispatchPayload = &api.DispatchPayloadConfig{File: "in.txt"}
	proc.AddTaskGroup(noRestartGroup("g", catTask))
	register(t, c, proc)
	if _, _, err := c.Jobs().Dispatch("proc", map[string]string{"who": "you"}, nil, "", nil); err == nil ||
		!strings.Contains(err.Error(), "Payload") {
		t.Fatalf("dispatch without the required payload: %v", err)
	}
	resp, _, err := c.Jobs().Dispatch("proc", map[string]string{"who": "you"}, []byte("hello"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	child := resp.DispatchedJobID
	waitFor(t, 60*time.Second, "the dispatched child complete", func() bool { return count(allocsByStatus(t, c, child), "run/complete") == 1 })
	if out := taskLog(dir, onlyAlloc(t, c, child, "run/complete").ID, "cat"); out != "hello to you\n" {
		t.Fatalf("dispatched task printed %q", out)
	}

	waitFor(t, 60*time.Second, "two periodic children", func() bool { return len(children(t, c, "tick")) >= 2 })
	first := children(t, c, "tick")[0]
	kid := structs.PeriodicChildID("tick", first)
	waitFor(t, 60*time.Second, "the first child complete", func() bool { return count(allocsByStatus(t, c, kid), "run/complete") == 1 })
	if out := taskLog(dir, onlyAlloc(t, c, kid, "run/complete").ID, "t"); out != "tick\n" {
		t.Fatalf("periodic child printed %q", out)
	}
	if got := children(t, c, "tick"); got[1].Sub(got[0])%(2*time.Second) != 0 {
		t.Fatalf("launch times %v are not on the cron", got)
	}

	// Down for about 8 s (four launch times): after the restart, at most
	// one child for the missed ones, then launches go on.
	before := children(t, c, "tick")
	a.stop()
	down := time.Now()
	time.Sleep(8 * time.Second)
	up := time.Now()
	a = startAgent(t, dir, anyPort)
	c = a.client()
	waitFor(t, 60*time.Second, "launches after the restart", func() bool {
		return len(children(t, c, "tick")) >= len(before)+2
	})
	missed := 0
	for _, at := range children(t, c, "tick") {
		if at.After(down) && at.Before(up.Add(-time.Second)) {
			missed++
		}
	}
	if missed > 1 {
		t.Fatalf("%d launches replayed for the downtime %s..%s: %v", missed, down, up, children(t, c, "tick"))
	}
	sum, _, err := c.Jobs().Summary("tick", nil)
	if err != nil || sum.Children == nil || sum.Children.Sum() < len(before)+2 {
		t.Fatalf("children summary %+v %v", sum, err)
	}
}
