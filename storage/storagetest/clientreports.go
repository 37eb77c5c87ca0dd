package storagetest

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// testHealthOfAnotherDeployment: a node's health report counts only for
// the deployment it names, and only while that is the alloc's. A late
// report from before the alloc moved to a new deployment (an in-place
// update), or one that names no deployment, is not health in the new one.
func testHealthOfAnotherDeployment(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	job := register(t, s, testJob("web")).Job
	a0 := placement(job, "eval-1", 0, "n1")
	a0.DeploymentID = "dep-1"
	p := planFor(job, "eval-1", a0)
	p.Deployment = &structs.Deployment{ID: "dep-1", Namespace: "default", JobID: "web", JobVersion: job.Version,
		Status: structs.DeploymentStatusRunning, TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 1}}}
	must(s.CommitPlan(ctx, p))
	// The alloc joins dep-2 in place.
	dep2 := "dep-2"
	p2 := planFor(job, "eval-2")
	p2.Updates = []*structs.AllocUpdate{{AllocID: a0.ID, NodeID: "n1", DeploymentID: &dep2}}
	p2.Deployment = &structs.Deployment{ID: dep2, Namespace: "default", JobID: "web", JobVersion: job.Version,
		Status: structs.DeploymentStatusRunning, TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 1}}}
	must(s.CommitPlan(ctx, p2))

	healthy := true
	at := time.Now().UTC().Truncate(time.Second)
	report := func(deploymentID string) {
		t.Helper()
		must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{{ID: a0.ID, ClientStatus: structs.AllocClientStatusRunning,
			DeploymentID: deploymentID, DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: at}}}))
	}
	counts := func(id string) int { return must(s.Deployment(ctx, id)).TaskGroups["web"].HealthyAllocs }

	report("dep-1") // late: decided while the alloc was in dep-1
	report("")      // names no deployment
	if got := must(s.Alloc(ctx, a0.ID)); got.DeploymentStatus.HasHealth() || got.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("a report for another deployment set the alloc's health (%+v) or lost its status (%s)", got.DeploymentStatus, got.ClientStatus)
	}
	if counts("dep-2") != 0 || counts("dep-1") != 0 {
		t.Fatalf("healthy counted: dep-1 %d, dep-2 %d; want 0 and 0", counts("dep-1"), counts("dep-2"))
	}
	report("dep-2")
	if got := must(s.Alloc(ctx, a0.ID)); !got.DeploymentStatus.IsHealthy() || counts("dep-2") != 1 {
		t.Fatalf("a report for the alloc's deployment: alloc %+v, dep-2 healthy %d", got.DeploymentStatus, counts("dep-2"))
	}
}

// testTerminalReportReplacesLost: the control plane marks an alloc lost
// (its node went down); when the node comes back, its report of how the
// alloc ended (complete, failed) replaces "lost", as Nomad's state store
// takes the client's status (the job summary then counts it there, not
// under Lost). A non-terminal report does not bring it back to life. The
// alloc's room was released once, when it was marked lost.
func testTerminalReportReplacesLost(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	job := register(t, s, testJob("web")).Job
	a0, a1 := placement(job, "eval-1", 0, "n1"), placement(job, "eval-1", 1, "n1")
	must(s.CommitPlan(ctx, planFor(job, "eval-1", a0, a1)))
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{
		{ID: a0.ID, ClientStatus: structs.AllocClientStatusRunning}, {ID: a1.ID, ClientStatus: structs.AllocClientStatusRunning}}))
	p := planFor(job, "eval-2")
	for _, a := range []*structs.Allocation{a0, a1} {
		p.Stops = append(p.Stops, &structs.AllocStop{AllocID: a.ID, NodeID: "n1", DesiredStatus: structs.AllocDesiredStatusStop,
			DesiredDescription: "alloc is lost since its node is down", ClientStatus: structs.AllocClientStatusLost})
	}
	must(s.CommitPlan(ctx, p))
	usage := func() structs.ComparableResources {
		t.Helper()
		for _, u := range must(s.NodesWithUsage(ctx)) {
			if u.Node.ID == "n1" {
				return u.Used
			}
		}
		t.Fatal("node n1 missing")
		return structs.ComparableResources{}
	}
	if u := usage(); u.CPU != 0 {
		t.Fatalf("lost allocs still hold %d MHz", u.CPU)
	}

	dead := map[string]*structs.TaskState{"server": {State: structs.TaskStateDead, FinishedAt: time.Now().UTC()}}
	changes := must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{
		{ID: a0.ID, ClientStatus: structs.AllocClientStatusComplete, TaskStates: dead},
		{ID: a1.ID, ClientStatus: structs.AllocClientStatusRunning},
	}))
	if got := must(s.Alloc(ctx, a0.ID)); got.ClientStatus != structs.AllocClientStatusComplete || got.DesiredStatus != structs.AllocDesiredStatusStop {
		t.Fatalf("terminal report over lost: %s/%s, want stop/complete", got.DesiredStatus, got.ClientStatus)
	}
	if got := must(s.Alloc(ctx, a1.ID)); got.ClientStatus != structs.AllocClientStatusLost {
		t.Fatalf("running report over lost: %s, want lost kept", got.ClientStatus)
	}
	for _, c := range changes {
		if c.Alloc.ID == a0.ID && c.PrevClientStatus != structs.AllocClientStatusLost {
			t.Fatalf("change of %s: previous status %q, want lost", a0.ID, c.PrevClientStatus)
		}
	}
	if u := usage(); u.CPU != 0 {
		t.Fatalf("after the reports the node holds %d MHz, want 0 (released once)", u.CPU)
	}
}
