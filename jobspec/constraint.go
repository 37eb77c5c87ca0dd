package jobspec

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	version "github.com/hashicorp/go-version"

	"github.com/drover-sched/drover/structs"
)

// ConstraintOperands are the constraint operators a job may use: Nomad's
// full set, as declared in package structs.
var ConstraintOperands = []string{
	structs.ConstraintEqual, structs.ConstraintEqualAlt, structs.ConstraintIs,
	structs.ConstraintNotEqual, structs.ConstraintNot,
	structs.ConstraintLess, structs.ConstraintLessEqual,
	structs.ConstraintGreater, structs.ConstraintGreaterEqual,
	structs.ConstraintRegex, structs.ConstraintVersion, structs.ConstraintSemver,
	structs.ConstraintSetContains, structs.ConstraintSetContainsAll, structs.ConstraintSetContainsAny,
	structs.ConstraintAttributeIsSet, structs.ConstraintAttributeNotSet,
	structs.ConstraintDistinctHosts, structs.ConstraintDistinctProp,
}

// Interpolated constraint targets a node can resolve: exact ones, and
// prefixes of attribute, meta and device lookups.
var (
	exactTargets  = []string{"${node.unique.id}", "${node.datacenter}", "${node.unique.name}", "${node.class}", "${node.pool}"}
	prefixTargets = []string{"${attr.", "${meta.", "${device."}
)

// validateConstraint checks one constraint at path (Job.Constraints[0] ...).
// taskLevel forbids the operators that only make sense for a group.
func validateConstraint(c *structs.Constraint, path string, taskLevel bool, errs *errorList) {
	if c == nil {
		errs.add(path, "must not be null")
		return
	}
	op := c.Operand
	needLTarget := true
	switch op {
	case "":
		errs.add(join(path, "Operand"), "is required (one of %s)", strings.Join(ConstraintOperands, ", "))
	case structs.ConstraintEqual, structs.ConstraintEqualAlt, structs.ConstraintIs,
		structs.ConstraintNotEqual, structs.ConstraintNot,
		structs.ConstraintLess, structs.ConstraintLessEqual,
		structs.ConstraintGreater, structs.ConstraintGreaterEqual:
		if c.RTarget == "" {
			errs.add(join(path, "RTarget"), "is required by operator %q", op)
		}
	case structs.ConstraintRegex:
		if _, err := regexp.Compile(c.RTarget); err != nil {
			errs.add(join(path, "RTarget"), "must be a valid regular expression: %v", err)
		}
	case structs.ConstraintVersion:
		if _, err := version.NewConstraint(c.RTarget); err != nil {
			errs.add(join(path, "RTarget"), "must be a valid version constraint (like \">= 1.2, < 2\"): %v", err)
		}
	case structs.ConstraintSemver:
		if err := checkSemverConstraint(c.RTarget); err != nil {
			errs.add(join(path, "RTarget"), "must be a valid semver constraint (like \">= 1.2.0, < 2.0.0\"): %v", err)
		}
	case structs.ConstraintSetContains, structs.ConstraintSetContainsAll, structs.ConstraintSetContainsAny:
		if c.RTarget == "" {
			errs.add(join(path, "RTarget"), "is required by operator %q (the values the set must contain)", op)
		}
	case structs.ConstraintAttributeIsSet, structs.ConstraintAttributeNotSet:
		if c.RTarget != "" {
			errs.add(join(path, "RTarget"), "must be empty for operator %q (got %q)", op, c.RTarget)
		}
	case structs.ConstraintDistinctHosts:
		needLTarget = false
		if c.RTarget != "" {
			if _, err := strconv.ParseBool(c.RTarget); err != nil {
				errs.add(join(path, "RTarget"), "must be \"true\" or \"false\" for distinct_hosts (got %q)", c.RTarget)
			}
		}
	case structs.ConstraintDistinctProp:
		if c.RTarget != "" {
			n, err := strconv.ParseUint(c.RTarget, 10, 64)
			switch {
			case err != nil:
				errs.add(join(path, "RTarget"), "must be the number of allocations allowed per property value (got %q)", c.RTarget)
			case n < 1:
				errs.add(join(path, "RTarget"), "must allow at least 1 allocation per property value (got %d)", n)
			}
		}
	default:
		errs.add(join(path, "Operand"), "unknown operator %q (one of %s)", op, strings.Join(ConstraintOperands, ", "))
	}
	if taskLevel && (op == structs.ConstraintDistinctHosts || op == structs.ConstraintDistinctProp) {
		errs.add(join(path, "Operand"), "operator %q is only allowed on a job or group, not on a task", op)
	}
	if needLTarget && c.LTarget == "" && op != "" {
		errs.add(join(path, "LTarget"), "is required by operator %q (the attribute to compare, like ${attr.kernel.name})", op)
	}
	if err := checkTarget(c.LTarget); err != nil {
		errs.add(join(path, "LTarget"), "%v", err)
	}
}

// checkTarget checks the interpolation syntax of a constraint target: a
// literal, or one of the ${...} forms a node can resolve.
func checkTarget(t string) error {
	if !strings.HasPrefix(t, "$") {
		return nil
	}
	if !strings.HasPrefix(t, "${") {
		return fmt.Errorf("%q is missing the opening brace of ${...}", t)
	}
	if !strings.HasSuffix(t, "}") {
		return fmt.Errorf("%q is missing the closing brace of ${...}", t)
	}
	if slices.Contains(exactTargets, t) {
		return nil
	}
	for _, p := range prefixTargets {
		if strings.HasPrefix(t, p) && len(t) > len(p)+1 {
			return nil
		}
	}
	return fmt.Errorf("%q is not an attribute a node has (use ${attr.*}, ${meta.*}, ${node.unique.id}, ${node.unique.name}, ${node.datacenter}, ${node.class} or ${node.pool})", t)
}

// semverOperators are the operators of a semver constraint: Nomad's semver
// constraints are strict, without go-version's pessimistic "~>".
var semverOperators = []string{">=", "<=", "!=", "=", ">", "<"}

// checkSemverConstraint parses a comma-separated list of "op version" terms
// whose versions are Semantic Versioning 2.0 versions.
func checkSemverConstraint(s string) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("empty constraint")
	}
	for term := range strings.SplitSeq(s, ",") {
		term = strings.TrimSpace(term)
		v := term
		for _, op := range semverOperators {
			if rest, ok := strings.CutPrefix(term, op); ok {
				v = strings.TrimSpace(rest)
				break
			}
		}
		if v == "" {
			return fmt.Errorf("term %q has no version", term)
		}
		if _, err := version.NewSemver(v); err != nil {
			return fmt.Errorf("term %q: %v", term, err)
		}
	}
	return nil
}
