package drivers

import (
	"context"

	"github.com/drover-sched/drover/structs"
)

// A group whose network block has mode "bridge" gives its tasks one
// network namespace of their own, shared by the group's tasks (they reach
// each other on localhost), with the alloc's host ports forwarded into it,
// as Nomad's bridge networking does. The driver of the group's tasks makes
// the namespace before any task starts (NetworkManager) and its tasks join
// it (TaskConfig.Network).

// NetworkIsolationModeGroup is the mode of a namespace shared by the
// tasks of an alloc (Nomad's NetIsolationModeGroup).
const NetworkIsolationModeGroup = "group"

// NetworkIsolation is the network namespace a task joins, as its driver
// made it (Nomad's NetworkIsolationSpec).
type NetworkIsolation struct {
	// Mode is NetworkIsolationModeGroup.
	Mode string
	// Driver is the name of the driver that made the namespace.
	Driver string
	// SandboxID names what holds the namespace for that driver (docker:
	// the ID of the alloc's pause container, which task containers join
	// with network_mode container:<id>).
	SandboxID string
	// IP is the alloc's address inside the namespace (NOMAD_ALLOC_IP_*),
	// empty when the driver does not know it.
	IP string `json:",omitempty"`
	// Hostname is the namespace's host name, when the group set one.
	Hostname string `json:",omitempty"`
}

// NetworkCreateRequest asks for the network namespace of one alloc.
type NetworkCreateRequest struct {
	// AllocID, Namespace, JobID and TaskGroup name the alloc.
	AllocID   string
	Namespace string
	JobID     string
	TaskGroup string
	// Hostname is the group network's hostname ("" leaves the driver's
	// default).
	Hostname string
	// DNS is the group network's dns block: the namespace's resolver
	// (nil: the driver's default).
	DNS *structs.DNSConfig
	// Ports are the alloc's host ports (AllocatedResources.Shared.Ports):
	// each one's host port Value on HostIP is forwarded to To inside the
	// namespace (To <= 0: the same number).
	Ports []structs.AllocatedPortMapping
}

// NetworkManager is implemented by drivers that can make an alloc's
// shared network namespace (Nomad's DriverNetworkManager). Both methods
// are idempotent: CreateNetwork of an alloc whose namespace exists (an
// agent restarted, say) returns it, DestroyNetwork of one that is gone
// does nothing; both find the namespace by the alloc's ID alone.
type NetworkManager interface {
	CreateNetwork(ctx context.Context, req *NetworkCreateRequest) (*NetworkIsolation, error)
	DestroyNetwork(ctx context.Context, allocID string) error
}
