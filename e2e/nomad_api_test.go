package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"
)

// runningCount is how many of the job's allocs run.
func runningCount(t *testing.T, c *api.Client, jobID string) int {
	return count(allocsByStatus(t, c, jobID), "run/running")
}

// TestNomadAPIRoutes drives the routes Nomad's CLI relies on with Nomad's
// own Go client against the real binary: pagination and filters, job plan,
// scale and scale status, prefix and fuzzy search, alloc stop and checks,
// namespaces, the scheduler configuration (pausing the broker), node
// events and reserved resources, the eval's deployment and annotations,
// job sources, and a purged incarnation's allocs.
func TestNomadAPIRoutes(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir+"/data", anyPort)
	c := a.client()
	script := taskScript(t, dir, "api.sh", "while true; do sleep 1; done")
	t.Cleanup(func() { killLeftovers(script) })

	// A job registered with its source; its eval names the deployment.
	web := serviceJob("web", 2, script)
	reg, _, err := c.Jobs().RegisterOpts(web, &api.RegisterOptions{Submission: &api.JobSubmission{
		Source: `job "web" { group "web" { count = 2 } }`, Format: "hcl2", VariableFlags: map[string]string{"x": "1"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "web running", func() bool { return runningCount(t, c, "web") == 2 })
	ev, _, err := c.Evaluations().Info(reg.EvalID, nil)
	if err != nil || ev.DeploymentID == "" || ev.PlanAnnotations == nil || ev.PlanAnnotations.DesiredTGUpdates["web"].Place != 2 {
		t.Fatalf("register eval: %+v %v", ev, err)
	}
	sub, _, err := c.Jobs().Submission("web", 0, nil)
	if err != nil || sub.Format != "hcl2" || !strings.Contains(sub.Source, `job "web"`) || sub.VariableFlags["x"] != "1" {
		t.Fatalf("submission: %+v %v", sub, err)
	}
	big := serviceJob("big", 1, script)
	bigResp, _, err := c.Jobs().RegisterOpts(big, &api.RegisterOptions{Submission: &api.JobSubmission{
		Source: strings.Repeat("#", 1_000_001), Format: "hcl2"}}, nil)
	if err != nil || !strings.Contains(bigResp.Warnings, "exceeds maximum") {
		t.Fatalf("oversized source: %+v %v", bigResp, err)
	}
	if _, _, err := c.Jobs().Submission("big", 0, nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("discarded source still served: %v", err)
	}

	// Pagination and filters.
	stubs, qm, err := c.Jobs().List(&api.QueryOptions{PerPage: 1})
	if err != nil || len(stubs) != 1 || stubs[0].ID != "big" || qm.NextToken != "default.web" {
		t.Fatalf("first page: %v %+v %v", stubs, qm, err)
	}
	stubs, qm, err = c.Jobs().List(&api.QueryOptions{PerPage: 1, NextToken: qm.NextToken})
	if err != nil || len(stubs) != 1 || stubs[0].ID != "web" || qm.NextToken != "" {
		t.Fatalf("second page: %v %+v %v", stubs, qm, err)
	}
	if stubs, _, err = c.Jobs().List(&api.QueryOptions{Filter: `Name == "web"`}); err != nil || len(stubs) != 1 {
		t.Fatalf("job filter: %v %v", stubs, err)
	}
	nodes, _, err := c.Nodes().List(&api.QueryOptions{Filter: `Attributes["kernel.name"] == "linux"`})
	if err != nil || len(nodes) != 1 {
		t.Fatalf("node filter: %v %v", nodes, err)
	}
	allocs, qm, err := c.Allocations().List(&api.QueryOptions{PerPage: 1})
	if err != nil || len(allocs) != 1 || qm.NextToken == "" {
		t.Fatalf("alloc page: %d %+v %v", len(allocs), qm, err)
	}
	if _, _, err := c.Jobs().List(&api.QueryOptions{Filter: `Name ==`}); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("bad filter: %v", err)
	}

	// Nodes: reserved resources and events.
	node, _, err := c.Nodes().Info(nodes[0].ID, nil)
	if err != nil || node.ReservedResources == nil || node.NodeResources == nil || len(node.Events) == 0 ||
		node.Events[0].Message != "Node registered" || node.HTTPAddr == "" {
		t.Fatalf("node: %+v %v", node, err)
	}

	// Plan: a count change, nothing written.
	cur, _, err := c.Jobs().Info("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	web3 := serviceJob("web", 3, script)
	plan, _, err := c.Jobs().Plan(web3, true, nil)
	// As Nomad: one to create, the two running ones moved in place to
	// the new version.
	if err != nil || plan.Diff == nil || plan.Diff.Type != "Edited" || plan.JobModifyIndex != *cur.JobModifyIndex {
		t.Fatalf("plan: %+v %v", plan, err)
	}
	if u := plan.Annotations.DesiredTGUpdates["web"]; u.Place != 1 || u.InPlaceUpdate != 2 || plan.Diff.TaskGroups[0].Updates["create"] != 1 {
		t.Fatalf("plan annotations: %+v, group updates %v", u, plan.Diff.TaskGroups[0].Updates)
	}
	if plan, _, err = c.Jobs().Plan(web3, false, nil); err != nil || plan.Diff != nil {
		t.Fatalf("plan without diff: %+v %v", plan, err)
	}
	if j, _, _ := c.Jobs().Info("web", nil); *j.TaskGroups[0].Count != 2 || *j.Version != 0 {
		t.Fatalf("a plan changed the job: count %d version %d", *j.TaskGroups[0].Count, *j.Version)
	}

	// Scale, with its event.
	three := 3
	sr, _, err := c.Jobs().Scale("web", "web", &three, "three, please", false, nil, nil)
	if err != nil || sr.EvalID == "" {
		t.Fatalf("scale: %+v %v", sr, err)
	}
	waitFor(t, 20*time.Second, "web at 3", func() bool { return runningCount(t, c, "web") == 3 })
	if sub, _, err := c.Jobs().Submission("web", 1, nil); err != nil || !strings.Contains(sub.Source, `job "web"`) {
		t.Fatalf("the scaled version's source (kept from version 0, as Nomad): %+v %v", sub, err)
	}
	st, _, err := c.Jobs().ScaleStatus("web", nil)
	if err != nil || st.TaskGroups["web"].Desired != 3 || st.TaskGroups["web"].Running != 3 ||
		len(st.TaskGroups["web"].Events) != 1 || st.TaskGroups["web"].Events[0].Message != "three, please" {
		t.Fatalf("scale status: %+v %v", st, err)
	}

	// Search.
	found, _, err := c.Search().PrefixSearch("we", contexts.Jobs, nil)
	if err != nil || len(found.Matches[contexts.Jobs]) != 1 || found.Matches[contexts.Jobs][0] != "web" {
		t.Fatalf("prefix search: %+v %v", found, err)
	}
	fuzzy, _, err := c.Search().FuzzySearch("serv", contexts.All, nil)
	if err != nil || len(fuzzy.Matches[contexts.Tasks]) != 2 {
		t.Fatalf("fuzzy search: %+v %v", fuzzy, err)
	}

	// Alloc stop: the alloc is replaced; checks answer empty.
	stubsWeb, _, _ := c.Jobs().Allocations("web", false, nil)
	victim := stubsWeb[0].ID
	full, _, err := c.Allocations().Info(victim, nil)
	if err != nil {
		t.Fatal(err)
	}
	checks, err := c.Allocations().Checks(victim, nil)
	if err != nil || len(checks) != 0 {
		t.Fatalf("checks: %v %v", checks, err)
	}
	stop, err := c.Allocations().Stop(full, nil)
	if err != nil || stop.EvalID == "" {
		t.Fatalf("alloc stop: %+v %v", stop, err)
	}
	waitFor(t, 20*time.Second, "the stopped alloc replaced", func() bool {
		a, _, err := c.Allocations().Info(victim, nil)
		return err == nil && a.DesiredStatus == "stop" && runningCount(t, c, "web") == 3
	})

	// Namespaces.
	if _, _, err := c.Jobs().Register(serviceJob("elsewhere", 1, script), &api.WriteOptions{Namespace: "team"}); err == nil ||
		!strings.Contains(err.Error(), "nonexistent namespace") {
		t.Fatalf("job in an unknown namespace: %v", err)
	}
	if _, err := c.Namespaces().Register(&api.Namespace{Name: "team", Description: "the team"}, nil); err != nil {
		t.Fatal(err)
	}
	nss, _, err := c.Namespaces().List(nil)
	// Nomad's client sorts them newest first.
	if err != nil || len(nss) != 2 || nss[0].Name != "team" || nss[0].Description != "the team" || nss[1].Name != "default" {
		t.Fatalf("namespaces: %+v %v", nss, err)
	}
	if _, err := c.Namespaces().Delete("default", nil); err == nil {
		t.Fatal("deleted the default namespace")
	}

	// Scheduler configuration: a paused broker leaves evals pending.
	cfg, _, err := c.Operator().SchedulerGetConfiguration(nil)
	if err != nil || cfg.SchedulerConfig.SchedulerAlgorithm != api.SchedulerAlgorithmBinpack {
		t.Fatalf("scheduler config: %+v %v", cfg, err)
	}
	set, _, err := c.Operator().SchedulerSetConfiguration(&api.SchedulerConfiguration{SchedulerAlgorithm: api.SchedulerAlgorithmBinpack, PauseEvalBroker: true}, nil)
	if err != nil || !set.Updated {
		t.Fatalf("pause: %+v %v", set, err)
	}
	held := register(t, c, batchJob("held", script))
	time.Sleep(time.Second) // long enough for an unpaused evaluator to have run it

	if e, _, err := c.Evaluations().Info(held, nil); err != nil || e.Status != "pending" {
		t.Fatalf("eval while paused: %+v %v", e, err)
	}
	if _, _, err := c.Operator().SchedulerSetConfiguration(&api.SchedulerConfiguration{SchedulerAlgorithm: api.SchedulerAlgorithmBinpack}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the held eval after resuming", func() bool {
		e, _, err := c.Evaluations().Info(held, nil)
		return err == nil && e.Status == "complete"
	})

	// A purged incarnation's allocs are not the new one's.
	if _, _, err := c.Jobs().Deregister("big", true, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "big purged", func() bool {
		_, _, err := c.Jobs().Info("big", nil)
		return err != nil
	})
	register(t, c, serviceJob("big", 1, script))
	waitFor(t, 20*time.Second, "big again", func() bool {
		stubs, _, err := c.Jobs().Allocations("big", true, nil)
		return err == nil && len(stubs) == 1 && stubs[0].ClientStatus == "running"
	})
}
