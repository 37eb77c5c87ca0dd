package structs

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Network modes of a group network block: host (the tasks share the
// node's network stack and listen on host ports) and bridge (the group's
// tasks share a network namespace of their own, the alloc's host ports
// forwarded into it; docker tasks only). Nomad's CNI modes are refused at
// submission.
const (
	NetworkModeHost   = "host"
	NetworkModeBridge = "bridge"
)

// DefaultHostNetwork is the host network every port is on: drover nodes
// have one, the node's address (Nomad's "default" host network).
const DefaultHostNetwork = "default"

// Nomad's default range of dynamic ports (client min_dynamic_port and
// max_dynamic_port), inclusive, and the highest port number.
const (
	DefaultMinDynamicPort = 20000
	DefaultMaxDynamicPort = 32000
	MaxValidPort          = 65535
)

// NetworkResource is a network in Nomad's shape. As a group's ask (the
// network block) it holds the mode and the ports wanted: ReservedPorts
// are static ports (Value is the host port), DynamicPorts are ports the
// scheduler picks (Value 0). As what an alloc was given
// (AllocatedSharedResources.Networks) it also holds the node's IP and
// Device, and every port has its host port in Value. As what a node
// offers (NodeResources.Networks) it holds the node's address.
type NetworkResource struct {
	Mode          string `cbor:"1,keyasint,omitempty"` // "host" (also "" in asks)
	Device        string `cbor:"2,keyasint,omitempty"` // the node's interface, if known
	CIDR          string `cbor:"3,keyasint,omitempty"`
	IP            string `cbor:"4,keyasint,omitempty"`
	Hostname      string `cbor:"5,keyasint,omitempty"`
	MBits         int    `cbor:"6,keyasint,omitempty"` // deprecated in Nomad; kept as given
	ReservedPorts []Port `cbor:"7,keyasint,omitempty"`
	DynamicPorts  []Port `cbor:"8,keyasint,omitempty"`
	// DNS is the alloc's resolver configuration (the dns block; bridge
	// mode only), nil for the node's.
	DNS *DNSConfig `cbor:"9,keyasint,omitempty"`
}

// DNSConfig is a group network's dns block, Nomad's DNSConfig: name
// servers (IP addresses), search domains and resolver options, written to
// the resolv.conf of the alloc's network namespace.
type DNSConfig struct {
	Servers  []string `cbor:"1,keyasint,omitempty"`
	Searches []string `cbor:"2,keyasint,omitempty"`
	Options  []string `cbor:"3,keyasint,omitempty"`
}

// Equal reports whether two dns blocks are the same (nil: none).
func (d *DNSConfig) Equal(o *DNSConfig) bool {
	if d == nil || o == nil {
		return d == o
	}
	return slices.Equal(d.Servers, o.Servers) && slices.Equal(d.Searches, o.Searches) && slices.Equal(d.Options, o.Options)
}

// Port is one port of a network: Label names it (NOMAD_PORT_<label>),
// Value is the host port (the static port asked, or the one assigned),
// To the port a driver maps it to inside the task (docker; 0: the same as
// Value), HostNetwork the host network it is on ("default").
type Port struct {
	Label       string `cbor:"1,keyasint,omitempty"`
	Value       int    `cbor:"2,keyasint,omitempty"`
	To          int    `cbor:"3,keyasint,omitempty"`
	HostNetwork string `cbor:"4,keyasint,omitempty"`
}

// AllocatedPortMapping is one port an alloc holds on its node, Nomad's
// AllocatedPortMapping: the host port Value on HostIP, mapped to To inside
// the task (0: not mapped).
type AllocatedPortMapping struct {
	Label  string `cbor:"1,keyasint,omitempty"`
	Value  int    `cbor:"2,keyasint,omitempty"`
	To     int    `cbor:"3,keyasint,omitempty"`
	HostIP string `cbor:"4,keyasint,omitempty"`
}

// NodeReservedNetworkResources is what a node keeps from scheduling on its
// network: ReservedHostPorts is a port spec such as "22,80,8000-8010"
// (Nomad's client reserved.reserved_ports).
type NodeReservedNetworkResources struct {
	ReservedHostPorts string
}

// Copy returns a deep copy of the network.
func (n *NetworkResource) Copy() *NetworkResource {
	if n == nil {
		return nil
	}
	c := *n
	c.ReservedPorts = append([]Port(nil), n.ReservedPorts...)
	c.DynamicPorts = append([]Port(nil), n.DynamicPorts...)
	if n.ReservedPorts == nil {
		c.ReservedPorts = nil
	}
	if n.DynamicPorts == nil {
		c.DynamicPorts = nil
	}
	if n.DNS != nil {
		c.DNS = &DNSConfig{Servers: slices.Clone(n.DNS.Servers), Searches: slices.Clone(n.DNS.Searches), Options: slices.Clone(n.DNS.Options)}
	}
	return &c
}

// HasPorts reports whether the network asks for or holds any port.
func (n *NetworkResource) HasPorts() bool {
	return n != nil && len(n.ReservedPorts)+len(n.DynamicPorts) > 0
}

// Equal reports whether two network asks are the same (mode and ports,
// in order).
func (n *NetworkResource) Equal(o *NetworkResource) bool {
	if n == nil || o == nil {
		return n == o
	}
	if n.Mode != o.Mode || n.Device != o.Device || n.CIDR != o.CIDR || n.IP != o.IP || n.Hostname != o.Hostname || n.MBits != o.MBits || !n.DNS.Equal(o.DNS) {
		return false
	}
	return portsEqual(n.ReservedPorts, o.ReservedPorts) && portsEqual(n.DynamicPorts, o.DynamicPorts)
}

func portsEqual(a, b []Port) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// NetworksEqual reports whether two groups' network asks are the same: a
// change is destructive, as in Nomad (the ports a task was started with
// change).
func NetworksEqual(a, b []*NetworkResource) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// CopyNetworks returns a deep copy of a list of networks.
func CopyNetworks(ns []*NetworkResource) []*NetworkResource {
	if ns == nil {
		return nil
	}
	out := make([]*NetworkResource, len(ns))
	for i, n := range ns {
		out[i] = n.Copy()
	}
	return out
}

// HostPorts returns the host ports the alloc holds on its node, sorted.
func (a *AllocatedResources) HostPorts() []int {
	if a == nil || len(a.Shared.Ports) == 0 {
		return nil
	}
	out := make([]int, 0, len(a.Shared.Ports))
	for _, p := range a.Shared.Ports {
		if p.Value > 0 {
			out = append(out, p.Value)
		}
	}
	sort.Ints(out)
	return out
}

// DynamicPortRange is the node's range of dynamic ports, inclusive:
// NodeResources.MinDynamicPort and MaxDynamicPort, or Nomad's defaults
// (20000–32000) where they are 0.
func (n *Node) DynamicPortRange() (lo, hi int) {
	lo, hi = DefaultMinDynamicPort, DefaultMaxDynamicPort
	if r := n.NodeResources; r != nil {
		if r.MinDynamicPort > 0 {
			lo = r.MinDynamicPort
		}
		if r.MaxDynamicPort > 0 {
			hi = r.MaxDynamicPort
		}
	}
	return lo, hi
}

// HostNetwork returns the node's host network (its first network with an
// address), or nil when the node fingerprinted none: such a node cannot
// take allocs that ask for ports.
func (n *Node) HostNetwork() *NetworkResource {
	if n.NodeResources == nil {
		return nil
	}
	for _, nw := range n.NodeResources.Networks {
		if nw != nil && nw.IP != "" {
			return nw
		}
	}
	return nil
}

// ReservedHostPorts returns the node's reserved host ports
// (ReservedResources.Networks.ReservedHostPorts), sorted; a spec that does
// not parse reserves nothing (agents check theirs at start).
func (n *Node) ReservedHostPorts() []int {
	if n.ReservedResources == nil || n.ReservedResources.Networks.ReservedHostPorts == "" {
		return nil
	}
	ports, err := ParsePortSpec(n.ReservedResources.Networks.ReservedHostPorts)
	if err != nil {
		return nil
	}
	return ports
}

// ParsePortSpec parses a list of ports and ranges, "22,80,8000-8010", as
// Nomad's reserved_ports: comma-separated, each a port or lo-hi
// (inclusive, lo <= hi), every port in 1..65535. It returns the ports
// sorted, without duplicates. An empty spec is no ports.
func ParsePortSpec(spec string) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi := part, part
		if a, b, ok := strings.Cut(part, "-"); ok {
			lo, hi = strings.TrimSpace(a), strings.TrimSpace(b)
		}
		l, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("port %q: not a number", lo)
		}
		h, err := strconv.Atoi(hi)
		if err != nil {
			return nil, fmt.Errorf("port %q: not a number", hi)
		}
		if l < 1 || h > MaxValidPort {
			return nil, fmt.Errorf("port range %q: ports must be between 1 and %d", part, MaxValidPort)
		}
		if l > h {
			return nil, fmt.Errorf("port range %q: start is above its end", part)
		}
		for p := l; p <= h; p++ {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// EnvLabel turns a port label into the suffix of its environment
// variables (NOMAD_PORT_<label>): every character other than an ASCII
// letter, digit or underscore becomes an underscore, as Nomad cleans them.
func EnvLabel(label string) string {
	b := []byte(label)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		default:
			b[i] = '_'
		}
	}
	return string(b)
}
