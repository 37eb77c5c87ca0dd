package placement

import (
	"testing"

	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/structs"
)

// TestSpreadAlgorithmPrefersEmptierNode: with the scheduler configuration's
// spread algorithm, BuildPlan places on the emptiest fitting node, where
// binpack picks the fullest.
func TestSpreadAlgorithmPrefersEmptierNode(t *testing.T) {
	j := job(1, 500, 256)
	busy := NodeCandidate{Node: node("busy", 2000, 2048, nil), Used: structs.ComparableResources{CPU: 1000, MemoryMB: 1024}}
	idle := NodeCandidate{Node: node("idle", 2000, 2048, nil)}
	for alg, want := range map[string]string{structs.SchedulerAlgorithmBinpack: "busy", structs.SchedulerAlgorithmSpread: "idle", "": "busy"} {
		res := &reconcile.Result{Place: []*reconcile.Placement{{Name: "web.g[0]", TaskGroup: j.TaskGroups[0]}}}
		out := BuildPlan(&PlanRequest{Eval: &structs.Evaluation{ID: "e1", Namespace: "default", JobID: "web"}, Job: j,
			Result: res, Nodes: []NodeCandidate{idle, busy}, SchedulerAlgorithm: alg})
		if len(out.Plan.Placements) != 1 || out.Plan.Placements[0].NodeID != want {
			t.Errorf("algorithm %q: placed on %v, want %s", alg, out.Plan.Placements, want)
		}
	}
}
