package jobspec

import (
	"maps"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/structs"
)

// convertScaling maps a canonicalized group scaling block (Enabled
// defaults to true, Min to the group's count, Type to horizontal); a
// missing max becomes -1, which validateScaling refuses, as Nomad's
// conversion does.
func convertScaling(p *api.ScalingPolicy) *structs.ScalingPolicy {
	if p == nil {
		return nil
	}
	out := &structs.ScalingPolicy{Type: p.Type, Min: deref(p.Min), Max: -1, Enabled: deref(p.Enabled), Policy: maps.Clone(p.Policy)}
	if p.Max != nil {
		out.Max = *p.Max
	}
	return out
}

// validateScaling applies Nomad's rules on a group's scaling block
// (ScalingPolicy.Validate and TaskGroup.validateScalingPolicy): type
// horizontal, max set and non-negative, min non-negative and not above
// max, and the group's count within min..max.
func validateScaling(tg *structs.TaskGroup, gp string, errs *errorList) {
	p := tg.Scaling
	if p == nil {
		return
	}
	sp := join(gp, "Scaling")
	if p.Type != structs.ScalingPolicyTypeHorizontal {
		errs.add(join(sp, "Type"), "scaling policy type %q is not supported on a group (only %q)", p.Type, structs.ScalingPolicyTypeHorizontal)
	}
	switch {
	case p.Max < 0:
		errs.add(join(sp, "Max"), "maximum count must be specified and non-negative")
	case p.Max < p.Min:
		errs.add(join(sp, "Max"), "maximum count must not be less than minimum count (%d < %d)", p.Max, p.Min)
	}
	if p.Min < 0 {
		errs.add(join(sp, "Min"), "minimum count must be specified and non-negative (got %d)", p.Min)
	}
	if p.Max >= 0 && int64(tg.Count) > p.Max {
		errs.add(join(gp, "Count"), "task group count must not be greater than maximum count in scaling policy (%d > %d)", tg.Count, p.Max)
	}
	if int64(tg.Count) < p.Min {
		errs.add(join(gp, "Count"), "task group count must not be less than minimum count in scaling policy (%d < %d)", tg.Count, p.Min)
	}
}
