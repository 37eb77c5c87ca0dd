package placement

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"

	"github.com/drover-sched/drover/structs"
)

// Host ports as a resource, as Nomad's NetworkIndex: a node's host ports
// are taken by its reservation (reserved_ports) and by the allocs that
// hold resources there, and every port of an alloc's group network is a
// host port (host networking). A static port fits a node when no one
// holds it; dynamic ports are picked from the node's dynamic range
// (20000–32000 unless the node says otherwise) among the ports no one
// holds, by a generator seeded from the eval ID, so that a replay of the
// same evaluation over the same state picks the same ports. Ports are
// tracked per node, not per address: drover nodes have one host network.
// The commit checks them again (storage: no two live allocs of a node hold
// the same host port).

// Filter and exhaustion reasons, Nomad's words.
const (
	reasonMissingNetwork   = "missing network"
	reasonDynamicExhausted = "network: dynamic port selection failed"
)

// maxRandomPortTries is how many random picks a dynamic port gets before
// the range is scanned for a free one (Nomad tries 20 as well).
const maxRandomPortTries = 20

// groupPorts is what a group's network asks of a node, prepared once.
type groupPorts struct {
	network *structs.NetworkResource // the group's network block (the first)
	dynamic int                      // dynamic ports wanted
}

func newGroupPorts(tg *structs.TaskGroup) *groupPorts {
	if len(tg.Networks) == 0 || tg.Networks[0] == nil {
		return nil
	}
	n := tg.Networks[0]
	return &groupPorts{network: n, dynamic: len(n.DynamicPorts)}
}

// nodePorts is one node's host ports as the plan sees them: the node's
// reservation and its allocs' ports (less those the plan stops), plus the
// ports its placements take. Built the first time a group with a network
// looks at the node.
type nodePorts struct {
	used   map[int]int32 // port → holders (the reservation counts as one)
	lo, hi int           // the dynamic range, inclusive
	// freeDynamic counts the ports of [lo, hi] no one holds.
	freeDynamic int
}

func newNodePorts(n *structs.Node, held []int) *nodePorts {
	np := &nodePorts{used: make(map[int]int32, len(held))}
	np.lo, np.hi = n.DynamicPortRange()
	if np.hi < np.lo {
		np.hi = np.lo - 1
	}
	np.freeDynamic = np.hi - np.lo + 1
	for _, p := range n.ReservedHostPorts() {
		np.take(p)
	}
	for _, p := range held {
		np.take(p)
	}
	return np
}

func (np *nodePorts) take(p int) {
	np.used[p]++
	if np.used[p] == 1 && p >= np.lo && p <= np.hi {
		np.freeDynamic--
	}
}

func (np *nodePorts) give(p int) {
	c, ok := np.used[p]
	if !ok {
		return
	}
	if c <= 1 {
		delete(np.used, p)
		if p >= np.lo && p <= np.hi {
			np.freeDynamic++
		}
		return
	}
	np.used[p] = c - 1
}

// fits reports whether the group's ports fit the node, or why not in
// Nomad's words ("network: reserved port collision http=8080", "network:
// dynamic port selection failed").
func (np *nodePorts) fits(g *groupPorts) (bool, string) {
	free := np.freeDynamic
	for _, p := range g.network.ReservedPorts {
		if np.used[p.Value] > 0 {
			return false, "network: reserved port collision " + p.Label + "=" + strconv.Itoa(p.Value)
		}
		if p.Value >= np.lo && p.Value <= np.hi {
			free-- // the static port is taken from the range too
		}
	}
	if free < g.dynamic {
		return false, reasonDynamicExhausted
	}
	return true, ""
}

// assign takes the group's ports on the node (fits must have said yes) and
// returns them as the alloc's network and port mappings.
func (np *nodePorts) assign(g *groupPorts, n *structs.Node, rng *rand.Rand) ([]*structs.NetworkResource, []structs.AllocatedPortMapping) {
	host := n.HostNetwork()
	ip, device := "", ""
	if host != nil {
		ip, device = host.IP, host.Device
	}
	mode := g.network.Mode
	if mode == "" {
		mode = structs.NetworkModeHost
	}
	out := &structs.NetworkResource{Mode: mode, Device: device, IP: ip, MBits: g.network.MBits, Hostname: g.network.Hostname}
	var ports []structs.AllocatedPortMapping
	for _, p := range g.network.ReservedPorts {
		np.take(p.Value)
		out.ReservedPorts = append(out.ReservedPorts, structs.Port{Label: p.Label, Value: p.Value, To: p.To, HostNetwork: structs.DefaultHostNetwork})
		ports = append(ports, structs.AllocatedPortMapping{Label: p.Label, Value: p.Value, To: p.To, HostIP: ip})
	}
	for _, p := range g.network.DynamicPorts {
		v := np.pickDynamic(rng)
		np.take(v)
		to := p.To
		if to == -1 { // Nomad: map to the same port as the host's
			to = v
		}
		out.DynamicPorts = append(out.DynamicPorts, structs.Port{Label: p.Label, Value: v, To: to, HostNetwork: structs.DefaultHostNetwork})
		ports = append(ports, structs.AllocatedPortMapping{Label: p.Label, Value: v, To: to, HostIP: ip})
	}
	return []*structs.NetworkResource{out}, ports
}

// pickDynamic returns a free port of the dynamic range: a few random
// picks, then a scan from a random start (so a crowded range still finds
// its last free ports). The range has a free port (fits said so).
func (np *nodePorts) pickDynamic(rng *rand.Rand) int {
	size := np.hi - np.lo + 1
	for range maxRandomPortTries {
		p := np.lo + rng.IntN(size)
		if np.used[p] == 0 {
			return p
		}
	}
	start := rng.IntN(size)
	for i := range size {
		p := np.lo + (start+i)%size
		if np.used[p] == 0 {
			return p
		}
	}
	panic(fmt.Sprintf("placement: no free dynamic port in %d-%d although %d were counted free", np.lo, np.hi, np.freeDynamic))
}

// portsOf returns node ns's port book, building it on first use.
func (p *Placer) portsOf(ns *nodeState) *nodePorts {
	if ns.ports == nil {
		ns.ports = newNodePorts(ns.node, ns.heldPorts)
	}
	return ns.ports
}

// portRNG is the generator dynamic ports are drawn from, seeded from the
// eval ID.
func (p *Placer) portRNG() *rand.Rand {
	if p.rng == nil {
		h := fnv.New64a()
		h.Write([]byte("ports\x00" + p.opts.EvalID))
		seed := h.Sum64()
		p.rng = rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909))
	}
	return p.rng
}

// releasePorts and reservePorts move an alloc's host ports out of and back
// into its node's book (a stop in the plan, and its undoing).
func (p *Placer) releasePorts(ns *nodeState, a *structs.Allocation) {
	ports := a.AllocatedResources.HostPorts()
	if len(ports) == 0 {
		return
	}
	book := p.portsOf(ns)
	for _, port := range ports {
		book.give(port)
	}
}

func (p *Placer) reservePorts(ns *nodeState, a *structs.Allocation) {
	ports := a.AllocatedResources.HostPorts()
	if len(ports) == 0 {
		return
	}
	book := p.portsOf(ns)
	for _, port := range ports {
		book.take(port)
	}
}
