package structs

import "time"

// Node statuses, as in Nomad.
const (
	NodeStatusInit         = "initializing"
	NodeStatusReady        = "ready"
	NodeStatusDown         = "down"
	NodeStatusDisconnected = "disconnected"
)

// Node scheduling eligibility, as in Nomad.
const (
	NodeSchedulingEligible   = "eligible"
	NodeSchedulingIneligible = "ineligible"
)

// DefaultDatacenter is the datacenter of a node that names none.
const DefaultDatacenter = "dc1"

// Node is a machine that runs allocations, as registered by its node agent.
// Shape and JSON names as Nomad's.
type Node struct {
	ID         string
	Datacenter string
	Name       string
	HTTPAddr   string
	// TLSEnabled says the node serves its client routes (HTTPAddr) over
	// HTTPS: Nomad's Go client and CLI pick the scheme from it when they
	// call the node directly (alloc logs, fs, exec).
	TLSEnabled bool
	// Attributes are fingerprinted facts: kernel.name, os.name, cpu.arch,
	// cpu.numcores, cpu.totalcompute (MHz), memory.totalbytes,
	// unique.hostname, driver.raw_exec, nomad.version (drover's), ...
	Attributes map[string]string
	// NodeResources is what the node offers for allocations.
	NodeResources *NodeResources
	// ReservedResources is held back for the OS and the agent.
	ReservedResources *NodeReservedResources `json:",omitempty"`
	Meta              map[string]string      `json:",omitempty"`
	NodeClass         string
	NodePool          string
	// Drain is true while the node is draining.
	Drain                 bool
	DrainStrategy         *DrainStrategy `json:",omitempty"`
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	StatusUpdatedAt       int64 // unix seconds, as Nomad
	Drivers               map[string]*DriverInfo
	// HostVolumes are the host volumes the client offers, by name (the
	// agent's -host-volume flags).
	HostVolumes map[string]*ClientHostVolumeConfig `json:",omitempty"`
	// Events are the node's last MaxRetainedNodeEvents events, oldest
	// first (registration, drain, eligibility, status changes).
	Events []*NodeEvent
	// ReactionsPending is the index of the store write that changed the
	// node's status (or registered it) while the control plane's
	// reactions to that change have not all run: the evaluations of its
	// jobs and of the system jobs it may run, and, when it became ready,
	// the blocked evaluations re-queued. 0 when none are pending. The
	// store sets it with the status in one write and clears it when told
	// they ran (storage.Store.NodeReactionsDone), so a control plane that
	// dies in between (a Lambda invocation, a crashed server) leaves a
	// durable mark that the next heartbeat or sweep acts on
	// (controlplane.Service.RedoNodeReactions). Drover's own field, not
	// Nomad's: API clients that do not know it ignore it.
	ReactionsPending uint64 `json:",omitempty"`
	CreateIndex      uint64
	ModifyIndex      uint64
}

// NodeResources is a node's total capacity: CPU in MHz, memory and disk in
// MiB; its networks (the host network: mode "host", the node's address in
// IP, its interface in Device) and the range of ports dynamic ports are
// chosen from (MinDynamicPort..MaxDynamicPort inclusive; 0: Nomad's
// defaults, see DynamicPortRange).
type NodeResources struct {
	Cpu            NodeCpuResources
	Memory         NodeMemoryResources
	Disk           NodeDiskResources
	Networks       []*NetworkResource
	MinDynamicPort int
	MaxDynamicPort int
}

// NodeCpuResources is a node's CPU: total MHz over all cores.
type NodeCpuResources struct {
	CpuShares     int64 // MHz, all cores together
	TotalCpuCores uint16
}

// NodeMemoryResources is a node's memory in MiB.
type NodeMemoryResources struct {
	MemoryMB int64 // MiB
}

// NodeDiskResources is a node's disk for alloc dirs in MiB.
type NodeDiskResources struct {
	DiskMB int64 // MiB
}

// NodeReservedResources is held back from scheduling: CPU, memory, disk
// and host ports (Networks.ReservedHostPorts).
type NodeReservedResources struct {
	Cpu      NodeReservedCpuResources
	Memory   NodeReservedMemoryResources
	Disk     NodeReservedDiskResources
	Networks NodeReservedNetworkResources
}

// NodeReservedCpuResources is reserved CPU in MHz.
type NodeReservedCpuResources struct {
	CpuShares int64 // MHz
}

// NodeReservedMemoryResources is reserved memory in MiB.
type NodeReservedMemoryResources struct {
	MemoryMB int64 // MiB
}

// NodeReservedDiskResources is reserved disk in MiB.
type NodeReservedDiskResources struct {
	DiskMB int64 // MiB
}

// Capacity returns what the node can give to allocations: its resources
// less what is reserved.
func (n *Node) Capacity() ComparableResources {
	var out ComparableResources
	if n.NodeResources != nil {
		out = ComparableResources{
			CPU:      n.NodeResources.Cpu.CpuShares,
			MemoryMB: n.NodeResources.Memory.MemoryMB,
			DiskMB:   n.NodeResources.Disk.DiskMB,
		}
	}
	if r := n.ReservedResources; r != nil {
		out = out.Sub(ComparableResources{CPU: r.Cpu.CpuShares, MemoryMB: r.Memory.MemoryMB, DiskMB: r.Disk.DiskMB})
	}
	return out
}

// DrainStrategy is how a node drains, as Nomad's: Deadline > 0 forces the
// remaining allocs off at ForceDeadline; 0 means no deadline; < 0 forces
// them off at once. IgnoreSystemJobs leaves system jobs running.
type DrainStrategy struct {
	Deadline         time.Duration
	IgnoreSystemJobs bool
	ForceDeadline    time.Time
	StartedAt        time.Time
}

// DriverInfo is a driver's fingerprint on a node.
type DriverInfo struct {
	Attributes        map[string]string `json:",omitempty"`
	Detected          bool
	Healthy           bool
	HealthDescription string
	UpdateTime        time.Time
}

// Ready reports whether the node may receive new placements: status ready,
// eligible, not draining.
func (n *Node) Ready() bool {
	return n.Status == NodeStatusReady && !n.Drain && n.SchedulingEligibility == NodeSchedulingEligible
}

// TerminalStatus reports whether the node is down.
func (n *Node) TerminalStatus() bool {
	return n.Status == NodeStatusDown
}

// Copy returns a deep copy of the node.
func (n *Node) Copy() *Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Attributes = copyStringMap(n.Attributes)
	c.Meta = copyStringMap(n.Meta)
	if n.NodeResources != nil {
		r := *n.NodeResources
		r.Networks = CopyNetworks(n.NodeResources.Networks)
		c.NodeResources = &r
	}
	if n.ReservedResources != nil {
		r := *n.ReservedResources
		c.ReservedResources = &r
	}
	if n.DrainStrategy != nil {
		d := *n.DrainStrategy
		c.DrainStrategy = &d
	}
	if n.Events != nil {
		c.Events = make([]*NodeEvent, len(n.Events))
		for i, e := range n.Events {
			ec := *e
			ec.Details = copyStringMap(e.Details)
			c.Events[i] = &ec
		}
	}
	if n.HostVolumes != nil {
		c.HostVolumes = make(map[string]*ClientHostVolumeConfig, len(n.HostVolumes))
		for k, v := range n.HostVolumes {
			hv := *v
			c.HostVolumes[k] = &hv
		}
	}
	if n.Drivers != nil {
		c.Drivers = make(map[string]*DriverInfo, len(n.Drivers))
		for k, v := range n.Drivers {
			d := *v
			d.Attributes = copyStringMap(v.Attributes)
			c.Drivers[k] = &d
		}
	}
	return &c
}

func copyStringMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// NodeListStub is the summary list endpoints return, as Nomad's.
type NodeListStub struct {
	Address               string
	ID                    string
	Attributes            map[string]string `json:",omitempty"`
	Datacenter            string
	Name                  string
	NodeClass             string
	NodePool              string
	Version               string
	Drain                 bool
	SchedulingEligibility string
	Status                string
	StatusDescription     string
	Drivers               map[string]*DriverInfo
	CreateIndex           uint64
	ModifyIndex           uint64
}

// Stub returns the node's list summary.
func (n *Node) Stub() *NodeListStub {
	return &NodeListStub{
		Address: n.HTTPAddr, ID: n.ID, Datacenter: n.Datacenter, Name: n.Name,
		NodeClass: n.NodeClass, NodePool: n.NodePool, Version: n.Attributes["nomad.version"],
		Drain: n.Drain, SchedulingEligibility: n.SchedulingEligibility, Status: n.Status,
		StatusDescription: n.StatusDescription, Drivers: n.Drivers,
		CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex,
	}
}
