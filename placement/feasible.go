// Package placement decides where new allocations go (feasibility, then
// ranking over the ready nodes) and builds the plan an evaluation commits
// from the reconciler's result. It does no I/O: nodes and their usage come
// in, a plan and placement metrics come out.
package placement

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	version "github.com/hashicorp/go-version"

	"github.com/drover-sched/drover/structs"
)

// resolveTarget interpolates a constraint target against a node, as Nomad
// does: ${attr.K}, ${meta.K}, ${node.unique.id}, ${node.unique.name},
// ${node.datacenter}, ${node.class}, ${node.pool}; anything else is a
// literal. found is false for an unknown attribute or meta key.
func resolveTarget(target string, n *structs.Node) (string, bool) {
	if !strings.HasPrefix(target, "${") || !strings.HasSuffix(target, "}") {
		return target, true
	}
	ref := target[2 : len(target)-1]
	switch {
	case ref == "node.unique.id":
		return n.ID, true
	case ref == "node.unique.name":
		return n.Name, true
	case ref == "node.datacenter":
		return n.Datacenter, true
	case ref == "node.class":
		return n.NodeClass, n.NodeClass != ""
	case ref == "node.pool":
		return n.NodePool, true
	case strings.HasPrefix(ref, "attr."):
		v, ok := n.Attributes[strings.TrimPrefix(ref, "attr.")]
		return v, ok
	case strings.HasPrefix(ref, "meta."):
		v, ok := n.Meta[strings.TrimPrefix(ref, "meta.")]
		return v, ok
	}
	return "", false
}

// constraintChecker evaluates constraints, caching compiled regexps and
// version constraints across nodes.
type constraintChecker struct {
	regexps  map[string]*regexp.Regexp
	versions map[string]version.Constraints
	// evaluated counts the constraints checked against a node.
	evaluated int
}

func newConstraintChecker() *constraintChecker {
	return &constraintChecker{regexps: map[string]*regexp.Regexp{}, versions: map[string]version.Constraints{}}
}

// meets reports whether node n satisfies c. distinct_hosts and
// distinct_property are placement-wide and checked elsewhere; they pass
// here.
func (cc *constraintChecker) meets(c *structs.Constraint, n *structs.Node) bool {
	switch c.Operand {
	case structs.ConstraintDistinctHosts, structs.ConstraintDistinctProp:
		return true
	}
	cc.evaluated++
	l, lok := resolveTarget(c.LTarget, n)
	r, rok := resolveTarget(c.RTarget, n)
	switch c.Operand {
	case structs.ConstraintAttributeIsSet:
		return lok
	case structs.ConstraintAttributeNotSet:
		return !lok
	case structs.ConstraintEqual, structs.ConstraintEqualAlt, structs.ConstraintIs, "":
		return lok && rok && l == r
	case structs.ConstraintNotEqual, structs.ConstraintNot:
		return !(lok && rok && l == r) && !(!lok && !rok)
	case structs.ConstraintLess, structs.ConstraintLessEqual, structs.ConstraintGreater, structs.ConstraintGreaterEqual:
		return lok && rok && checkOrder(c.Operand, l, r)
	case structs.ConstraintRegex:
		return lok && rok && cc.matchRegexp(r, l)
	case structs.ConstraintVersion, structs.ConstraintSemver:
		return lok && rok && cc.matchVersion(c.Operand, r, l)
	case structs.ConstraintSetContains, structs.ConstraintSetContainsAll:
		return lok && rok && setContains(l, r, true)
	case structs.ConstraintSetContainsAny:
		return lok && rok && setContains(l, r, false)
	}
	return false
}

// checkOrder compares numerically when both sides are numbers, else
// lexically, as Nomad.
func checkOrder(op, l, r string) bool {
	var cmp int
	lf, lerr := strconv.ParseFloat(l, 64)
	rf, rerr := strconv.ParseFloat(r, 64)
	if lerr == nil && rerr == nil {
		switch {
		case lf < rf:
			cmp = -1
		case lf > rf:
			cmp = 1
		}
	} else {
		cmp = strings.Compare(l, r)
	}
	switch op {
	case structs.ConstraintLess:
		return cmp < 0
	case structs.ConstraintLessEqual:
		return cmp <= 0
	case structs.ConstraintGreater:
		return cmp > 0
	default:
		return cmp >= 0
	}
}

func (cc *constraintChecker) matchRegexp(pattern, value string) bool {
	re, ok := cc.regexps[pattern]
	if !ok {
		var err error
		re, err = regexp.Compile(pattern)
		if err != nil {
			re = nil
		}
		cc.regexps[pattern] = re
	}
	return re != nil && re.MatchString(value)
}

func (cc *constraintChecker) matchVersion(op, constraint, value string) bool {
	key := op + "\x00" + constraint
	cs, ok := cc.versions[key]
	if !ok {
		var err error
		cs, err = version.NewConstraint(constraint)
		if err != nil {
			cs = nil
		}
		cc.versions[key] = cs
	}
	if cs == nil {
		return false
	}
	var v *version.Version
	var err error
	if op == structs.ConstraintSemver {
		v, err = version.NewSemver(value)
	} else {
		v, err = version.NewVersion(value)
	}
	return err == nil && cs.Check(v)
}

// setContains checks the comma-separated set l against the wanted items
// of r: all of them (set_contains, set_contains_all) or any.
func setContains(l, r string, all bool) bool {
	have := map[string]bool{}
	for _, x := range strings.Split(l, ",") {
		have[strings.TrimSpace(x)] = true
	}
	for _, want := range strings.Split(r, ",") {
		ok := have[strings.TrimSpace(want)]
		if all && !ok {
			return false
		}
		if !all && ok {
			return true
		}
	}
	return all
}

// inDatacenters reports whether dc matches one of the job's datacenter
// patterns (globs; none, or "*", means every datacenter, as Nomad ≥ 1.5).
func inDatacenters(dc string, patterns []string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if ok, err := path.Match(p, dc); err == nil && ok {
			return true
		}
	}
	return false
}

// inNodePool reports whether the node belongs to the job's pool ("all"
// matches every node; "" means the default pool).
func inNodePool(n *structs.Node, pool string) bool {
	if pool == "" {
		pool = structs.DefaultNodePool
	}
	np := n.NodePool
	if np == "" {
		np = structs.DefaultNodePool
	}
	return pool == structs.NodePoolAll || np == pool
}

// missingDriver returns the first driver of tg's tasks the node lacks (not
// detected or unhealthy), or "".
func missingDriver(tg *structs.TaskGroup, n *structs.Node) string {
	for _, t := range tg.Tasks {
		d, ok := n.Drivers[t.Driver]
		if !ok || !d.Detected || !d.Healthy {
			return t.Driver
		}
	}
	return ""
}

// groupConstraints returns the job's, the group's and its tasks'
// constraints, in that order.
func groupConstraints(job *structs.Job, tg *structs.TaskGroup) []*structs.Constraint {
	out := append([]*structs.Constraint(nil), job.Constraints...)
	out = append(out, tg.Constraints...)
	for _, t := range tg.Tasks {
		out = append(out, t.Constraints...)
	}
	return out
}

// distinctHostsScope returns whether distinct_hosts applies, and whether at
// job level (every group) rather than only within the group.
func distinctHostsScope(job *structs.Job, tg *structs.TaskGroup) (applies, jobLevel bool) {
	for _, c := range job.Constraints {
		if c.Operand == structs.ConstraintDistinctHosts && c.RTarget != "false" {
			return true, true
		}
	}
	for _, c := range tg.Constraints {
		if c.Operand == structs.ConstraintDistinctHosts && c.RTarget != "false" {
			return true, false
		}
	}
	return false, false
}

// distinctPropertyLimits returns the group's distinct_property constraints
// (job and group level) with their allowed count per value (RTarget, or
// 1), each tied to its tally among counts.
func distinctPropertyLimits(job *structs.Job, tg *structs.TaskGroup, counts []*propertyCount) []propertyLimit {
	var out []propertyLimit
	add := func(cs []*structs.Constraint, group string) {
		for _, c := range cs {
			if c.Operand != structs.ConstraintDistinctProp {
				continue
			}
			limit := 1
			if c.RTarget != "" {
				if n, err := strconv.Atoi(c.RTarget); err == nil && n > 0 {
					limit = n
				}
			}
			for _, pc := range counts {
				if pc.target == c.LTarget && pc.group == group {
					out = append(out, propertyLimit{count: pc, limit: limit,
						label: fmt.Sprintf("distinct_property: %s", c.LTarget)})
					break
				}
			}
		}
	}
	add(job.Constraints, "")
	add(tg.Constraints, tg.Name)
	return out
}

type propertyLimit struct {
	count *propertyCount
	limit int
	label string
}

// propertyCount tallies the job's live allocs (existing and placed by the
// plan) per value of one distinct_property target, over the whole job
// (group "") or one task group, so that checking a node costs one lookup
// rather than a walk over every node. Nodes without the property hold
// none: they never take an alloc under the constraint.
type propertyCount struct {
	target     string
	group      string
	groupIndex int // of group in the job's groups; -1 for the whole job
	byValue    map[string]int
}

// newPropertyCounts returns one empty tally per distinct target of the
// job's distinct_property constraints, job-level and per group.
func newPropertyCounts(job *structs.Job, groupIndex map[string]int) []*propertyCount {
	var out []*propertyCount
	add := func(cs []*structs.Constraint, group string, gi int) {
		for _, c := range cs {
			if c.Operand != structs.ConstraintDistinctProp {
				continue
			}
			if slices.ContainsFunc(out, func(pc *propertyCount) bool { return pc.target == c.LTarget && pc.group == group }) {
				continue
			}
			out = append(out, &propertyCount{target: c.LTarget, group: group, groupIndex: gi, byValue: map[string]int{}})
		}
	}
	add(job.Constraints, "", -1)
	for _, tg := range job.TaskGroups {
		add(tg.Constraints, tg.Name, groupIndex[tg.Name])
	}
	return out
}

// add counts delta allocs of the group with index gi (known: one of the
// job's groups) on node n.
func (pc *propertyCount) add(n *structs.Node, gi int, known bool, delta int) {
	if pc.groupIndex >= 0 && (!known || gi != pc.groupIndex) {
		return
	}
	if v, ok := resolveTarget(pc.target, n); ok {
		pc.byValue[v] += delta
	}
}

// of returns the count for node n's value of the property, or MaxInt32
// when the node lacks it.
func (pc *propertyCount) of(n *structs.Node) int {
	v, ok := resolveTarget(pc.target, n)
	if !ok {
		return math.MaxInt32
	}
	return pc.byValue[v]
}
