package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/structs"
)

// TestEvalRecordsDeploymentAndAnnotations: an evaluation that creates a
// deployment names it in DeploymentID (so `nomad job run` follows the
// deployment), and carries the reconciler's decisions as PlanAnnotations;
// the next evaluation of the same version names the deployment it
// continues.
func TestEvalRecordsDeploymentAndAnnotations(t *testing.T) {
	h := newHarness(t)
	h.node("n1", 4000, 4096)
	ctx := context.Background()
	j := job("web", 2, 100)
	j.TaskGroups[0].Update = &structs.UpdateStrategy{MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckTaskStates,
		MinHealthyTime: time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 2 * time.Minute}
	resp, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: j})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.eval.Process(ctx, resp.EvalID); err != nil {
		t.Fatal(err)
	}
	ev, _ := h.store.Eval(ctx, resp.EvalID)
	d, err := h.store.LatestDeployment(ctx, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if ev.DeploymentID == "" || ev.DeploymentID != d.ID {
		t.Fatalf("eval DeploymentID %q, deployment %q", ev.DeploymentID, d.ID)
	}
	u := ev.PlanAnnotations.DesiredTGUpdates["web"]
	if u == nil || u.Place != 2 {
		t.Fatalf("plan annotations: %+v", ev.PlanAnnotations)
	}
	again, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: j})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.eval.Process(ctx, again.EvalID); err != nil {
		t.Fatal(err)
	}
	if ev2, _ := h.store.Eval(ctx, again.EvalID); ev2.DeploymentID != d.ID || ev2.PlanAnnotations.DesiredTGUpdates["web"].Ignore != 2 {
		t.Fatalf("continuing eval: deployment %q annotations %+v", ev2.DeploymentID, ev2.PlanAnnotations)
	}
}
