package storagetest

import (
	"slices"
	"testing"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// testSystemJobs: SystemJobs lists the current system and sysbatch jobs of
// every namespace (stopped ones too) and no other job, following
// registrations, a change of type, a stop and a purge.
func testSystemJobs(t *testing.T, s storage.Store) {
	typed := func(ns, id, jobType string) *structs.Job {
		j := testJob(id)
		j.Namespace, j.Type = ns, jobType
		return j
	}
	listed := func(when string, want ...string) []*structs.Job {
		t.Helper()
		jobs := must(s.SystemJobs(ctx))
		var got []string
		for _, j := range jobs {
			got = append(got, j.Namespace+"/"+j.ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: system jobs %v, want %v", when, got, want)
		}
		return jobs
	}
	listed("with no jobs")
	register(t, s, typed("default", "web", structs.JobTypeService))
	register(t, s, typed("default", "batch", structs.JobTypeBatch))
	register(t, s, typed("default", "agent", structs.JobTypeSystem))
	register(t, s, typed("default", "scan", structs.JobTypeSysBatch))
	register(t, s, typed("prod", "agent", structs.JobTypeSystem))
	listed("after registrations", "default/agent", "default/scan", "prod/agent")

	// A new version is what is listed.
	v2 := typed("default", "agent", structs.JobTypeSystem)
	v2.Priority = 70
	register(t, s, v2)
	if j := listed("after a new version", "default/agent", "default/scan", "prod/agent")[0]; j.Version != 1 || j.Priority != 70 {
		t.Fatalf("listed version %d priority %d, want the current version 1, priority 70", j.Version, j.Priority)
	}

	// A change of type moves a job in or out of the list.
	register(t, s, typed("prod", "agent", structs.JobTypeService))
	register(t, s, typed("default", "web", structs.JobTypeSysBatch))
	listed("after changes of type", "default/agent", "default/scan", "default/web")

	// A stopped system job is still one (its allocs must stop); a purged
	// one is gone.
	must(s.DeregisterJob(ctx, &storage.DeregisterJobRequest{Namespace: "default", JobID: "agent", Eval: testEval(v2, structs.EvalTriggerJobDeregister)}))
	if j := listed("after a stop", "default/agent", "default/scan", "default/web")[0]; !j.Stop {
		t.Fatalf("the stopped job is listed without its stop flag: %+v", j)
	}
	must(s.DeregisterJob(ctx, &storage.DeregisterJobRequest{Namespace: "default", JobID: "scan", Purge: true, Eval: testEval(v2, structs.EvalTriggerJobDeregister)}))
	listed("after a purge", "default/agent", "default/web")
	// Registered again after the purge: listed again.
	register(t, s, typed("default", "scan", structs.JobTypeSysBatch))
	listed("after registering the purged job again", "default/agent", "default/scan", "default/web")
}
