package structs

import "fmt"

// Affinity is a placement preference, Nomad's affinity block: nodes whose
// LTarget (an interpolated node attribute such as ${node.class}) compares
// to RTarget by Operand (the constraint operators but distinct_hosts and
// distinct_property) score higher when Weight is positive and lower when
// it is negative. Weight is -100..100 and never 0. A job's, a group's and
// the group's tasks' affinities add up for the group's placements.
type Affinity struct {
	LTarget string
	RTarget string
	Operand string
	Weight  int8
}

// String renders the affinity as Nomad does: "LTarget Operand RTarget Weight".
func (a *Affinity) String() string {
	return fmt.Sprintf("%s %s %s %d", a.LTarget, a.Operand, a.RTarget, a.Weight)
}

// Constraint returns the affinity's comparison as a constraint, to be
// evaluated against a node as constraints are.
func (a *Affinity) Constraint() *Constraint {
	return &Constraint{LTarget: a.LTarget, RTarget: a.RTarget, Operand: a.Operand}
}

// Spread is a placement preference, Nomad's spread block: a group's
// allocations spread over the values of Attribute (an interpolated node
// attribute such as ${node.datacenter}), in the proportions of
// SpreadTarget (percentages summing to at most 100; values not listed
// share the rest), or evenly over the values seen when there are no
// targets. Weight (1..100) weighs it against the group's other spreads.
// Job-level spreads apply to every group, counted per group.
type Spread struct {
	Attribute    string
	Weight       int8
	SpreadTarget []*SpreadTarget `json:",omitempty"`
}

// SpreadTarget is the share (Percent, 0..100) of a group's allocations
// wanted on nodes whose spread attribute is Value.
type SpreadTarget struct {
	Value   string
	Percent uint8
}
