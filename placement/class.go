package placement

import (
	"hash/maphash"
	"strings"

	"github.com/drover-sched/drover/structs"
)

// Feasibility by node class, as Nomad's computed node classes: nodes whose
// datacenter, pool, node class, drivers (detected and healthy) and
// attributes and meta (outside the "unique." namespace) are equal pass or
// fail the same constraints, so a group's constraints are evaluated once
// per class per evaluation, not once per placement and node. Constraints
// that read a unique value (${node.unique.*}, ${attr.unique.*},
// ${meta.unique.*}) "escape" the class and are evaluated per node, as in
// Nomad. distinct_hosts and distinct_property depend on placements, not
// on the node, and are checked on every visit.
//
// drover's nodes carry no computed class, so a Placer computes each
// node's class the first time it looks at the node: an order-independent
// hash of those fields, confirmed by comparing them with the class's
// first node (a hash collision makes a new class, never a wrong one).

// uniqueNamespace prefixes the attribute and meta keys that identify one
// node and are left out of its class (Nomad's NodeUniqueNamespace).
const uniqueNamespace = "unique."

// nodeClasses numbers the classes of the nodes a Placer has looked at.
type nodeClasses struct {
	seed   maphash.Seed
	byHash map[uint64][]int // class IDs with that hash
	first  []*structs.Node  // by class ID: the node that made the class
}

func newNodeClasses() *nodeClasses {
	return &nodeClasses{seed: maphash.MakeSeed(), byHash: map[uint64][]int{}}
}

// of returns n's class ID (from 0).
func (c *nodeClasses) of(n *structs.Node) int {
	h := c.hash(n)
	for _, id := range c.byHash[h] {
		if sameClass(c.first[id], n) {
			return id
		}
	}
	id := len(c.first)
	c.first = append(c.first, n)
	c.byHash[h] = append(c.byHash[h], id)
	return id
}

// hash sums a hash per map entry, so the maps' order does not matter.
func (c *nodeClasses) hash(n *structs.Node) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	field := func(domain byte, s string) uint64 {
		h.Reset()
		h.WriteByte(domain)
		h.WriteString(s)
		return h.Sum64()
	}
	entry := func(domain byte, k, v string) uint64 {
		h.Reset()
		h.WriteByte(domain)
		h.WriteString(k)
		h.WriteByte(0)
		h.WriteString(v)
		return h.Sum64()
	}
	sum := field('d', n.Datacenter) ^ field('p', n.NodePool)*3 ^ field('c', n.NodeClass)*5
	for k, v := range n.Attributes {
		if !strings.HasPrefix(k, uniqueNamespace) {
			sum += entry('a', k, v)
		}
	}
	for k, v := range n.Meta {
		if !strings.HasPrefix(k, uniqueNamespace) {
			sum += entry('m', k, v)
		}
	}
	for name, d := range n.Drivers {
		if d != nil && d.Detected && d.Healthy {
			sum += field('r', name)
		}
	}
	return sum
}

// sameClass reports whether a and b agree on every field of the class.
func sameClass(a, b *structs.Node) bool {
	return a.Datacenter == b.Datacenter && a.NodePool == b.NodePool && a.NodeClass == b.NodeClass &&
		sameOutsideUnique(a.Attributes, b.Attributes) && sameOutsideUnique(a.Meta, b.Meta) &&
		sameUsableDrivers(a.Drivers, b.Drivers)
}

func sameOutsideUnique(a, b map[string]string) bool {
	na := 0
	for k, v := range a {
		if strings.HasPrefix(k, uniqueNamespace) {
			continue
		}
		na++
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	nb := 0
	for k := range b {
		if !strings.HasPrefix(k, uniqueNamespace) {
			nb++
		}
	}
	return na == nb
}

func sameUsableDrivers(a, b map[string]*structs.DriverInfo) bool {
	usable := func(d *structs.DriverInfo) bool { return d != nil && d.Detected && d.Healthy }
	for name, d := range a {
		if usable(d) != usable(b[name]) {
			return false
		}
	}
	for name, d := range b {
		if usable(d) != usable(a[name]) {
			return false
		}
	}
	return true
}

// escapesClass reports whether a constraint target reads a value unique to
// one node.
func escapesClass(target string) bool {
	return strings.HasPrefix(target, "${node.unique.") || strings.HasPrefix(target, "${attr."+uniqueNamespace) ||
		strings.HasPrefix(target, "${meta."+uniqueNamespace)
}

// Per class, the first check of a group that fails: drivers, then the
// constraints in order.
const (
	classUnknown  = 0 // not evaluated yet
	classFeasible = 1
	classNoDriver = 2
	// classFailsAt + i: constraint i of the group fails.
	classFailsAt = 3
)

// classCheck returns the group's verdict for the class of node ns,
// evaluating it on ns the first time.
func (p *Placer) classCheck(g *groupPlan, ns *nodeState) int32 {
	if ns.class < 0 {
		ns.class = p.classes.of(ns.node)
	}
	for len(g.byClass) <= ns.class {
		g.byClass = append(g.byClass, classUnknown)
	}
	if v := g.byClass[ns.class]; v != classUnknown {
		return v
	}
	v := int32(classFeasible)
	if missingDriver(g.tg, ns.node) != "" {
		v = classNoDriver
	} else {
		for i, c := range g.constraints {
			if !g.escapes[i] && !p.cc.meets(c, ns.node) {
				v = classFailsAt + int32(i)
				break
			}
		}
	}
	g.byClass[ns.class] = v
	return v
}
