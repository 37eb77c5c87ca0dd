package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// testParentJobs: a periodic or parameterized parent, which has no allocs
// and whose evals all end, is kept by garbage collection until it is
// stopped (Nomad reports such a job running), while a plain batch job in
// the same state is collected; a child registered only if absent (how a
// periodic launch is made once) conflicts when it exists.
func testParentJobs(t *testing.T, s storage.Store) {
	finish := func(res *storage.RegisterJobResult) {
		t.Helper()
		e := res.Eval.Copy()
		e.Status = structs.EvalStatusComplete
		must(s.UpsertEvals(ctx, e))
	}
	batch := func(id string) *structs.Job {
		j := testJob(id)
		j.Type = structs.JobTypeBatch
		return j
	}
	param := batch("param")
	param.ParameterizedJob = &structs.ParameterizedJobConfig{Payload: structs.DispatchPayloadOptional}
	cron := batch("cron")
	cron.Periodic = &structs.PeriodicConfig{Enabled: true, Spec: "@daily", SpecType: structs.PeriodicSpecCron, TimeZone: "UTC"}
	for _, j := range []*structs.Job{param, cron, batch("plain")} {
		finish(register(t, s, j))
	}
	child := structs.NewPeriodicChild(must(s.Job(ctx, "default", "cron")), time.Unix(1700000000, 0))
	req := &storage.RegisterJobRequest{Job: child, Eval: testEval(child, structs.EvalTriggerPeriodicJob), EnforceIndex: true, SubmitTime: time.Now().UnixNano()}
	finish(must(s.RegisterJob(ctx, req)))
	again := *req
	again.Eval = testEval(child, structs.EvalTriggerPeriodicJob)
	if _, err := s.RegisterJob(ctx, &again); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("registering an existing child only-if-absent: %v, want a conflict", err)
	}
	if kids := must(s.Jobs(ctx, "default", "cron/")); len(kids) != 1 || kids[0].ParentID != "cron" || kids[0].Periodic != nil {
		t.Fatalf("children %+v", kids)
	}

	must(s.GarbageCollect(ctx, time.Now().Add(time.Second)))
	for _, id := range []string{"param", "cron"} {
		if _, err := s.Job(ctx, "default", id); err != nil {
			t.Fatalf("parent %s collected: %v", id, err)
		}
	}
	if _, err := s.Job(ctx, "default", "plain"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a finished batch job was not collected: %v", err)
	}
	if _, err := s.Job(ctx, "default", child.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a finished child was not collected: %v", err)
	}
	finish(must(s.DeregisterJob(ctx, &storage.DeregisterJobRequest{Namespace: "default", JobID: "param",
		Eval: testEval(param, structs.EvalTriggerJobDeregister)})))
	must(s.GarbageCollect(ctx, time.Now().Add(time.Second)))
	if _, err := s.Job(ctx, "default", "param"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a stopped parent was not collected: %v", err)
	}
}
