// Package acl is drover's ACL system, Nomad's: the policy language
// (ParseRules), the capability sets a token's policies compile into (ACL),
// tokens and policies and the operations on them (Service: bootstrap, the
// one-time reset, policy and token writes, token resolution with the
// anonymous policy and expiration), and the API Gateway authorizer of the
// AWS home (Authorizer). It decides who may do what; the routes' needs are
// declared next to the routes (httpapi's capability table), and the state
// lives behind the small Store interface defined here. It never writes
// HTTP responses and never reads the wall clock except through Service.Now.
package acl

import (
	"sort"
	"strings"
)

// AllNamespaces is the namespace "*" of list requests: an operation on it
// is allowed when it is allowed in any namespace, as Nomad (the items are
// then filtered one by one).
const AllNamespaces = "*"

// ACL is what a token may do: its policies compiled, Nomad's semantics.
// Namespace rules are looked up by exact name first, then the closest
// matching glob (the one with the fewest characters left to the
// wildcards); capabilities of the same name or glob in several policies
// are merged, deny winning. Agent, node and operator levels take the most
// privilege, deny winning. The zero ACL allows nothing.
type ACL struct {
	management bool
	namespaces map[string]capSet
	globs      []globRule
	agent      string
	node       string
	operator   string
}

type globRule struct {
	pattern string
	caps    capSet
}

// ManagementACL allows everything.
func ManagementACL() *ACL { return &ACL{management: true} }

// Compile merges parsed policies into an ACL.
func Compile(policies []*Rules) *ACL {
	a := &ACL{namespaces: map[string]capSet{}}
	globs := map[string]capSet{}
	for _, p := range policies {
		for _, ns := range p.Namespaces {
			target := a.namespaces
			if strings.Contains(ns.Name, "*") {
				target = globs
			}
			set := target[ns.Name]
			if set == nil {
				set = capSet{}
				target[ns.Name] = set
			}
			mergeCaps(set, ns.Capabilities, CapDeny)
		}
		if p.Agent != nil {
			a.agent = maxPrivilege(a.agent, p.Agent.Policy)
		}
		if p.Node != nil {
			a.node = maxPrivilege(a.node, p.Node.Policy)
		}
		if p.Operator != nil {
			a.operator = maxPrivilege(a.operator, p.Operator.Policy)
		}
	}
	for pat, caps := range globs {
		a.globs = append(a.globs, globRule{pattern: pat, caps: caps})
	}
	sort.Slice(a.globs, func(i, j int) bool { return a.globs[i].pattern < a.globs[j].pattern })
	return a
}

// mergeCaps adds caps to set; deny clears the set and stays alone.
func mergeCaps(set capSet, caps []string, deny string) {
	if set.has(deny) {
		return
	}
	for _, c := range caps {
		if c == deny {
			clear(set)
			set[deny] = struct{}{}
			return
		}
		set[c] = struct{}{}
	}
}

// IsManagement reports whether the ACL is a management token's.
func (a *ACL) IsManagement() bool { return a != nil && a.management }

// AllowNamespaceOp reports whether op (a namespace capability) is allowed
// in namespace ns; for AllNamespaces, whether it is allowed in any.
func (a *ACL) AllowNamespaceOp(ns, op string) bool {
	switch {
	case a == nil:
		return false
	case a.management:
		return true
	case ns == AllNamespaces:
		return a.anyNamespace(func(c capSet) bool { return c.has(op) })
	}
	caps, ok := a.namespaceCaps(ns)
	return ok && caps.has(op)
}

// AllowNamespaceAnyOf reports whether any of ops is allowed in ns.
func (a *ACL) AllowNamespaceAnyOf(ns string, ops ...string) bool {
	for _, op := range ops {
		if a.AllowNamespaceOp(ns, op) {
			return true
		}
	}
	return false
}

// AllowNamespace reports whether anything at all is allowed in ns (Nomad's
// AllowNamespace: a matching rule that is not deny).
func (a *ACL) AllowNamespace(ns string) bool {
	switch {
	case a == nil:
		return false
	case a.management:
		return true
	case ns == AllNamespaces:
		return a.anyNamespace(func(c capSet) bool { return len(c) > 0 && !c.has(CapDeny) })
	}
	caps, ok := a.namespaceCaps(ns)
	return ok && len(caps) > 0 && !caps.has(CapDeny)
}

func (a *ACL) anyNamespace(fn func(capSet) bool) bool {
	for _, c := range a.namespaces {
		if fn(c) {
			return true
		}
	}
	for _, g := range a.globs {
		if fn(g.caps) {
			return true
		}
	}
	return false
}

// namespaceCaps is the rule that applies to ns: its exact rule, else the
// closest matching glob.
func (a *ACL) namespaceCaps(ns string) (capSet, bool) {
	if c, ok := a.namespaces[ns]; ok {
		return c, true
	}
	best, bestDiff := -1, 0
	for i, g := range a.globs {
		if !globMatch(g.pattern, ns) {
			continue
		}
		diff := len(ns) - len(g.pattern) + strings.Count(g.pattern, "*")
		if best < 0 || diff < bestDiff {
			best, bestDiff = i, diff
		}
	}
	if best < 0 {
		return nil, false
	}
	return a.globs[best].caps, true
}

// globMatch matches s against pattern, where "*" stands for any run of
// characters (possibly empty) and everything else for itself.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, last)
}

// level reports whether a block's merged level l allows a read (or a
// write): write allows both, read only reads, deny or none nothing.
func (a *ACL) level(l string, write bool) bool {
	switch {
	case a.management, l == PolicyWrite:
		return true
	case l == PolicyRead:
		return !write
	}
	return false
}

// AllowAgentRead reports whether agent reads are allowed (agent:read).
func (a *ACL) AllowAgentRead() bool { return a != nil && a.level(a.agent, false) }

// AllowAgentWrite reports whether agent writes are allowed (agent:write).
func (a *ACL) AllowAgentWrite() bool { return a != nil && a.level(a.agent, true) }

// AllowNodeRead reports whether node reads are allowed (node:read).
func (a *ACL) AllowNodeRead() bool { return a != nil && a.level(a.node, false) }

// AllowNodeWrite reports whether node writes are allowed (node:write).
func (a *ACL) AllowNodeWrite() bool { return a != nil && a.level(a.node, true) }

// AllowOperatorRead reports whether operator reads are allowed
// (operator:read).
func (a *ACL) AllowOperatorRead() bool { return a != nil && a.level(a.operator, false) }

// AllowOperatorWrite reports whether operator writes are allowed
// (operator:write).
func (a *ACL) AllowOperatorWrite() bool { return a != nil && a.level(a.operator, true) }
