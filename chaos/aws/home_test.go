package awschaos_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/drover-sched/drover/chaos"
	awschaos "github.com/drover-sched/drover/chaos/aws"
	"github.com/drover-sched/drover/internal/awstest"
	"github.com/drover-sched/drover/structs"
)

// TestSweepResendsEvalWrittenDuringRun: an eval written pending during the
// run (its ModifyTime on the store's wall clock, ahead of the run's clock)
// and never sent, as when the write of a registration landed and its
// answer was lost, is re-sent by the sweep a quiet cluster runs.
func TestSweepResendsEvalWrittenDuringRun(t *testing.T) {
	ctx := context.Background()
	env := chaos.NewEnv()
	h, err := awschaos.New(ctx, awstest.Config(t), fmt.Sprintf("%s-%d", awstest.Name("chaos"), tables.Add(1)), env, awschaos.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ev := &structs.Evaluation{ID: "7205b201-a53c-4d88-a00a-0f6572955233", Namespace: "default", JobID: "job3",
		Type: structs.JobTypeService, Priority: 50, TriggeredBy: structs.EvalTriggerJobRegister, Status: structs.EvalStatusPending}
	if _, err := h.Store().UpsertEvals(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if n := env.Queue.Len(); n != 0 {
		t.Fatalf("queue holds %d evals before the sweep, want 0", n)
	}
	h.Sweep(ctx)
	if n := env.Queue.Len(); n != 1 {
		t.Fatalf("after the sweep the queue holds %d evals, want the pending one re-sent (1)", n)
	}
}
