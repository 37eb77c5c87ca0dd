package storagetest

import (
	"testing"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// testActiveDeployments: the watcher's listing holds exactly the
// deployments not yet terminal, following their status changes.
func testActiveDeployments(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	web := register(t, s, testJob("web")).Job
	api := register(t, s, testJob("api")).Job
	for _, j := range []*structs.Job{web, api} {
		p := planFor(j, "eval-"+j.ID)
		p.Deployment = &structs.Deployment{ID: "dep-" + j.ID, Namespace: j.Namespace, JobID: j.ID, JobVersion: j.Version,
			Status: structs.DeploymentStatusRunning, TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 1}}}
		must(s.CommitPlan(ctx, p))
	}
	ids := func() string {
		out := ""
		for _, d := range must(s.ActiveDeployments(ctx)) {
			out += d.ID + " "
		}
		return out
	}
	if got := ids(); got != "dep-api dep-web " {
		t.Fatalf("active deployments: %q, want newest first", got)
	}
	must(s.UpdateDeploymentStatus(ctx, &structs.DeploymentStatusUpdate{DeploymentID: "dep-web", Status: structs.DeploymentStatusFailed}))
	if got := ids(); got != "dep-api " {
		t.Fatalf("after one failed: %q", got)
	}
	must(s.UpdateDeploymentStatus(ctx, &structs.DeploymentStatusUpdate{DeploymentID: "dep-api", Status: structs.DeploymentStatusPaused}))
	if got := ids(); got != "dep-api " {
		t.Fatalf("a paused deployment is still active: %q", got)
	}
	must(s.UpdateDeploymentStatus(ctx, &structs.DeploymentStatusUpdate{DeploymentID: "dep-api", Status: structs.DeploymentStatusSuccessful}))
	if got := ids(); got != "" {
		t.Fatalf("after both finished: %q", got)
	}
}
