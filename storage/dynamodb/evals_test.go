package dynamodb_test

import (
	"testing"

	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

// TestEvalAttempts: StartEvalAttempt counts real attempts in the eval's
// item, only while the eval exists and is not terminal, and a write of
// the eval (its status at the end of an evaluation, an unblock) starts the
// count again.
func TestEvalAttempts(t *testing.T) {
	t.Parallel()
	s := newStore(t, ddb.Config{})
	ev := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "web", Status: structs.EvalStatusPending}
	count := func() int {
		t.Helper()
		n, err := s.StartEvalAttempt(ctx, ev.Namespace, ev.JobID, ev.ID)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("an unknown eval: %d attempts, want 0 (nothing counted)", n)
	}
	if _, err := s.UpsertEvals(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if a, b := count(), count(); a != 1 || b != 2 {
		t.Fatalf("attempts %d, %d; want 1, 2", a, b)
	}
	cur, err := s.Eval(ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	blocked := cur.Copy()
	blocked.Status = structs.EvalStatusBlocked
	if _, err := s.UpsertEvals(ctx, blocked); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("after the eval was written: %d attempts, want 1", n)
	}
	cur, _ = s.Eval(ctx, ev.ID)
	done := cur.Copy()
	done.Status = structs.EvalStatusComplete
	if _, err := s.UpsertEvals(ctx, done); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("a terminal eval: %d attempts, want 0", n)
	}
}
