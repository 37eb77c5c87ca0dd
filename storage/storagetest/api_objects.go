package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Conformance of the API objects outside the scheduling flow: job
// sources, node events, namespaces, the scheduler configuration.

func testJobSubmissions(t *testing.T, s storage.Store) {
	job := testJob("web")
	sub := &structs.JobSubmission{Source: `job "web" {}`, Format: "hcl2", VariableFlags: map[string]string{"n": "1"}, Variables: "n = 1"}
	res := must(s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, Eval: testEval(job, structs.EvalTriggerJobRegister), Submission: sub}))
	got := must(s.JobSubmission(ctx, job.Namespace, job.ID, res.Job.Version))
	if got.Source != sub.Source || got.Format != "hcl2" || got.VariableFlags["n"] != "1" || got.Variables != "n = 1" ||
		got.JobID != "web" || got.Version != res.Job.Version || got.JobModifyIndex != res.Job.JobModifyIndex {
		t.Fatalf("submission read back: %+v", got)
	}
	// A new version without a source has none; the old one keeps its own.
	job2 := testJob("web")
	job2.TaskGroups[0].Count = 3
	res2 := register(t, s, job2)
	if _, err := s.JobSubmission(ctx, job.Namespace, job.ID, res2.Job.Version); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("version without a source: %v", err)
	}
	if _, err := s.JobSubmission(ctx, job.Namespace, job.ID, res.Job.Version); err != nil {
		t.Fatalf("older source: %v", err)
	}
}

func testNodeEvents(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 1000, 1000))
	at := time.Unix(1700000000, 0).UTC()
	n := must(s.AppendNodeEvents(ctx, "n1", structs.NewNodeEvent(structs.NodeEventSubsystemCluster, structs.NodeEventRegistered, at)))
	if len(n.Events) != 1 || n.Events[0].Message != structs.NodeEventRegistered || n.Events[0].CreateIndex != n.ModifyIndex {
		t.Fatalf("events: %+v", n.Events)
	}
	for i := 0; i < structs.MaxRetainedNodeEvents+3; i++ {
		must(s.AppendNodeEvents(ctx, "n1", structs.NewNodeEvent(structs.NodeEventSubsystemDrain, structs.NodeEventDrainSet, at)))
	}
	n = must(s.Node(ctx, "n1"))
	if len(n.Events) != structs.MaxRetainedNodeEvents || n.Events[0].Message != structs.NodeEventDrainSet {
		t.Fatalf("bounded events: %d, first %q", len(n.Events), n.Events[0].Message)
	}
	// A re-registration (the agent sends no events) keeps them.
	must(s.UpsertNode(ctx, testNode("n1", 1000, 1000)))
	if n = must(s.Node(ctx, "n1")); len(n.Events) != structs.MaxRetainedNodeEvents {
		t.Fatalf("events after re-registration: %d", len(n.Events))
	}
	if _, err := s.AppendNodeEvents(ctx, "nope", structs.NewNodeEvent("x", "y", at)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown node: %v", err)
	}
}

func testNamespaces(t *testing.T, s storage.Store) {
	if _, err := s.Namespace(ctx, "prod"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("absent namespace: %v", err)
	}
	a := must(s.UpsertNamespace(ctx, &structs.Namespace{Name: "prod", Description: "production", Meta: map[string]string{"team": "a"}}))
	must(s.UpsertNamespace(ctx, &structs.Namespace{Name: "dev"}))
	b := must(s.UpsertNamespace(ctx, &structs.Namespace{Name: "prod", Description: "prod v2"}))
	if b.CreateIndex != a.CreateIndex || b.ModifyIndex <= a.ModifyIndex {
		t.Fatalf("indexes: %+v then %+v", a, b)
	}
	got := must(s.Namespace(ctx, "prod"))
	if got.Description != "prod v2" || got.Meta != nil {
		t.Fatalf("replaced namespace: %+v", got)
	}
	all := must(s.Namespaces(ctx))
	if len(all) != 2 || all[0].Name != "dev" || all[1].Name != "prod" {
		t.Fatalf("listing: %+v", all)
	}
	if idx := must(s.Index(ctx, storage.TableNamespaces)); idx < b.ModifyIndex {
		t.Fatalf("namespaces index %d < %d", idx, b.ModifyIndex)
	}
	if err := s.DeleteNamespace(ctx, "dev"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteNamespace(ctx, "dev"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if all = must(s.Namespaces(ctx)); len(all) != 1 {
		t.Fatalf("after delete: %+v", all)
	}
}

func testSchedulerConfig(t *testing.T, s storage.Store) {
	c := must(s.SchedulerConfig(ctx))
	if c.SchedulerAlgorithm != structs.SchedulerAlgorithmBinpack || c.PauseEvalBroker || c.ModifyIndex != 0 {
		t.Fatalf("default: %+v", c)
	}
	stale := uint64(99)
	if ok, _, err := s.SetSchedulerConfig(ctx, &structs.SchedulerConfiguration{PauseEvalBroker: true}, &stale); err != nil || ok {
		t.Fatalf("cas against a never-set config with index 99: %v %v", ok, err)
	}
	zero := uint64(0)
	ok, idx, err := s.SetSchedulerConfig(ctx, &structs.SchedulerConfiguration{SchedulerAlgorithm: structs.SchedulerAlgorithmSpread, PauseEvalBroker: true}, &zero)
	if err != nil || !ok {
		t.Fatalf("cas 0 on a never-set config: %v %v", ok, err)
	}
	c = must(s.SchedulerConfig(ctx))
	if c.SchedulerAlgorithm != structs.SchedulerAlgorithmSpread || !c.PauseEvalBroker || c.ModifyIndex != idx {
		t.Fatalf("read back: %+v (index %d)", c, idx)
	}
	if ok, _, _ := s.SetSchedulerConfig(ctx, &structs.SchedulerConfiguration{}, &zero); ok {
		t.Fatal("a stale cas wrote")
	}
	if ok, _, err := s.SetSchedulerConfig(ctx, &structs.SchedulerConfiguration{SchedulerAlgorithm: structs.SchedulerAlgorithmBinpack}, nil); err != nil || !ok {
		t.Fatalf("unconditional set: %v %v", ok, err)
	}
	if c2 := must(s.SchedulerConfig(ctx)); c2.PauseEvalBroker || c2.CreateIndex != c.CreateIndex {
		t.Fatalf("after unconditional set: %+v", c2)
	}
}
