package main

import (
	"fmt"

	"github.com/hashicorp/nomad/api"
)

// placementFailureLines explains failed placements as Nomad's CLI does
// (formatAllocMetrics): one line per reason, in a stable order.
func placementFailureLines(m *api.AllocationMetric) []string {
	var out []string
	if m.NodesEvaluated == 0 {
		if m.NodesInPool == 0 {
			out = append(out, fmt.Sprintf("No nodes were eligible for evaluation (node pool %q has no nodes)", m.NodePool))
		} else {
			out = append(out, "No nodes were eligible for evaluation")
		}
	}
	for _, dc := range sortedKeys(m.NodesAvailable) {
		if m.NodesAvailable[dc] == 0 {
			out = append(out, fmt.Sprintf("No nodes are available in datacenter %q", dc))
		}
	}
	for _, c := range sortedKeys(m.ClassFiltered) {
		n := m.ClassFiltered[c]
		out = append(out, fmt.Sprintf("Class %q: %d node%s excluded by filter", c, n, plural(n)))
	}
	for _, c := range sortedKeys(m.ConstraintFiltered) {
		n := m.ConstraintFiltered[c]
		out = append(out, fmt.Sprintf("Constraint %q: %d node%s excluded by filter", c, n, plural(n)))
	}
	for _, d := range sortedKeys(m.DimensionExhausted) {
		n := m.DimensionExhausted[d]
		out = append(out, fmt.Sprintf("Resources exhausted on %d node%s", n, plural(n)))
		out = append(out, fmt.Sprintf("Dimension %q exhausted on %d node%s", d, n, plural(n)))
	}
	return out
}

// failedPlacementLines are the "Task Group ... (failed to place N
// allocations)" paragraphs of an evaluation's FailedTGAllocs, each reason
// indented by indent.
func failedPlacementLines(failed map[string]*api.AllocationMetric, indent string) []string {
	var out []string
	for _, tg := range sortedKeys(failed) {
		m := failed[tg]
		n := 1 + m.CoalescedFailures
		out = append(out, fmt.Sprintf("Task Group %q (failed to place %d allocation%s):", tg, n, plural(n)))
		for _, line := range placementFailureLines(m) {
			out = append(out, indent+"* "+line)
		}
	}
	return out
}
