package jobspec

import (
	"slices"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/structs"
)

// AffinityOperands are the operators an affinity may use: the constraint
// operators but distinct_hosts and distinct_property, which express no
// preference about one node.
var AffinityOperands = slices.DeleteFunc(slices.Clone(ConstraintOperands), func(op string) bool {
	return op == structs.ConstraintDistinctHosts || op == structs.ConstraintDistinctProp
})

// Affinity weights are -100..100 and never 0; spread weights 1..100; spread
// target percentages sum to at most 100 (Nomad's rules).
const (
	maxAffinityWeight = 100
	maxSpreadWeight   = 100
	maxSpreadPercent  = 100
)

// validateAffinities checks the affinity blocks at path (Job.Affinities,
// ...). System and sysbatch jobs may have none: their placements go to
// every eligible node, with no preference to honour (Nomad refuses them
// too).
func validateAffinities(as []*structs.Affinity, path, jobType string, errs *errorList) {
	if len(as) > 0 && isSystem(jobType) {
		errs.add(path, "affinity blocks are not allowed in %s jobs (they place on every eligible node)", jobType)
		return
	}
	for i, a := range as {
		validateAffinity(a, indexed(path, i), errs)
	}
}

func validateAffinity(a *structs.Affinity, path string, errs *errorList) {
	if a == nil {
		errs.add(path, "must not be null")
		return
	}
	switch {
	case a.Operand == "":
		errs.add(join(path, "Operand"), "is required (one of %s)", strings.Join(AffinityOperands, ", "))
	case !slices.Contains(AffinityOperands, a.Operand):
		errs.add(join(path, "Operand"), "unknown affinity operator %q (one of %s)", a.Operand, strings.Join(AffinityOperands, ", "))
	default:
		validateConstraint(a.Constraint(), path, false, errs)
	}
	switch {
	case a.Weight == 0:
		errs.add(join(path, "Weight"), "must not be 0 (-%d..%d: positive prefers matching nodes, negative avoids them)", maxAffinityWeight, maxAffinityWeight)
	case a.Weight < -maxAffinityWeight || a.Weight > maxAffinityWeight:
		errs.add(join(path, "Weight"), "must be between -%d and %d (got %d)", maxAffinityWeight, maxAffinityWeight, a.Weight)
	}
}

// validateSpreads checks the spread blocks at path (Job.Spreads, ...);
// system and sysbatch jobs may have none, as affinities.
func validateSpreads(ss []*structs.Spread, path, jobType string, errs *errorList) {
	if len(ss) > 0 && isSystem(jobType) {
		errs.add(path, "spread blocks are not allowed in %s jobs (they place on every eligible node)", jobType)
		return
	}
	for i, s := range ss {
		validateSpread(s, indexed(path, i), errs)
	}
}

func validateSpread(s *structs.Spread, path string, errs *errorList) {
	if s == nil {
		errs.add(path, "must not be null")
		return
	}
	if s.Attribute == "" {
		errs.add(join(path, "Attribute"), "is required (the node attribute to spread over, like ${node.datacenter})")
	} else if err := checkTarget(s.Attribute); err != nil {
		errs.add(join(path, "Attribute"), "%v", err)
	}
	if s.Weight <= 0 || s.Weight > maxSpreadWeight {
		errs.add(join(path, "Weight"), "must be between 1 and %d (got %d)", maxSpreadWeight, s.Weight)
	}
	seen := map[string]bool{}
	sum := 0
	for i, t := range s.SpreadTarget {
		tp := indexed(join(path, "SpreadTarget"), i)
		if t == nil {
			errs.add(tp, "must not be null")
			continue
		}
		switch {
		case t.Value == "":
			errs.add(join(tp, "Value"), "must not be empty (the attribute value the percentage is for)")
		case seen[t.Value]:
			errs.add(join(tp, "Value"), "target %q is already defined in this spread", t.Value)
		}
		seen[t.Value] = true
		if t.Percent > maxSpreadPercent {
			errs.add(join(tp, "Percent"), "must be between 0 and %d (got %d)", maxSpreadPercent, t.Percent)
		}
		sum += int(t.Percent)
	}
	if sum > maxSpreadPercent {
		errs.add(join(path, "SpreadTarget"), "percentages must sum to at most %d (got %d)", maxSpreadPercent, sum)
	}
}

// checkPreferencesNotNull rejects null affinity and spread entries before
// Canonicalize, which would crash on them.
func checkPreferencesNotNull(as []*api.Affinity, ss []*api.Spread, path string, errs *errorList) {
	for i, a := range as {
		if a == nil {
			errs.add(indexed(join(path, "Affinities"), i), "must not be null")
		}
	}
	for i, s := range ss {
		if s == nil {
			errs.add(indexed(join(path, "Spreads"), i), "must not be null")
		}
	}
}

func convertAffinities(as []*api.Affinity) []*structs.Affinity {
	if len(as) == 0 {
		return nil
	}
	out := make([]*structs.Affinity, len(as))
	for i, a := range as {
		out[i] = &structs.Affinity{LTarget: a.LTarget, RTarget: a.RTarget, Operand: a.Operand, Weight: deref(a.Weight)}
	}
	return out
}

func convertSpreads(ss []*api.Spread) []*structs.Spread {
	if len(ss) == 0 {
		return nil
	}
	out := make([]*structs.Spread, len(ss))
	for i, s := range ss {
		cs := &structs.Spread{Attribute: s.Attribute, Weight: deref(s.Weight)}
		for _, t := range s.SpreadTarget {
			if t == nil {
				cs.SpreadTarget = append(cs.SpreadTarget, nil) // validation names it
				continue
			}
			cs.SpreadTarget = append(cs.SpreadTarget, &structs.SpreadTarget{Value: t.Value, Percent: t.Percent})
		}
		out[i] = cs
	}
	return out
}
