package storagetest

import (
	"testing"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// testEvalStatusFilter: a listing by status follows each eval's status
// changes (stores may answer it from a status index).
func testEvalStatusFilter(t *testing.T, s storage.Store) {
	job := register(t, s, testJob("web"))
	e := testEval(job.Job, structs.EvalTriggerQueuedAllocs)
	e.Status = structs.EvalStatusBlocked
	must(s.UpsertEvals(ctx, e))
	ids := func(status string) []string {
		var out []string
		for _, ev := range must(s.Evals(ctx, storage.EvalFilter{Status: status, JobID: "web"})) {
			out = append(out, ev.ID)
		}
		return out
	}
	if got := ids(structs.EvalStatusBlocked); len(got) != 1 || got[0] != e.ID {
		t.Fatalf("blocked: %v", got)
	}
	e.Status = structs.EvalStatusPending
	must(s.UpsertEvals(ctx, e))
	if got := ids(structs.EvalStatusBlocked); len(got) != 0 {
		t.Fatalf("blocked after the eval became pending: %v", got)
	}
	if got := ids(structs.EvalStatusPending); len(got) != 2 { // the registration's eval and e
		t.Fatalf("pending: %v", got)
	}
	e.Status = structs.EvalStatusComplete
	must(s.UpsertEvals(ctx, e))
	if got := ids(structs.EvalStatusPending); len(got) != 1 || got[0] != job.Eval.ID {
		t.Fatalf("pending after one completed: %v", got)
	}
}
