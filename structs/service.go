package structs

import (
	"strings"
	"time"
)

// Service providers, as Nomad's. drover registers services in its own
// registry ("nomad", the default); "consul" is refused at submission.
const (
	ServiceProviderNomad  = "nomad"
	ServiceProviderConsul = "consul"
)

// Service address modes, as Nomad's: where the registered address and
// port come from.
const (
	AddressModeAuto   = "auto"   // the host's address and the port's host value
	AddressModeHost   = "host"   // same as auto for host networking
	AddressModeAlloc  = "alloc"  // the allocation's address (host mode: the host's)
	AddressModeDriver = "driver" // the address the driver reports (refused by drover)
)

// Service check types, as Nomad's (grpc is refused by drover).
const (
	ServiceCheckHTTP   = "http"
	ServiceCheckTCP    = "tcp"
	ServiceCheckScript = "script"
	ServiceCheckGRPC   = "grpc"
)

// on_update values, as Nomad's: how a check's result counts while a
// deployment watches the alloc's health.
const (
	OnUpdateRequireHealthy = "require_healthy" // failing or warning checks make the alloc unhealthy
	OnUpdateIgnoreWarn     = "ignore_warnings" // only failing checks count
	OnUpdateIgnore         = "ignore"          // the check does not count
)

// Service is a group's or a task's service block: an instance registered
// in drover's service registry (Nomad's native service discovery,
// provider "nomad") while the task runs. Shape and JSON names follow
// Nomad's structs.Service for the fields drover supports.
type Service struct {
	// Name is the service name; ${JOB}, ${TASKGROUP}, ${TASK} and ${BASE}
	// are replaced at submission, the task's environment (${NOMAD_...},
	// ${NOMAD_META_...}) when the instance is registered. Default
	// "<job>-<group>-<task>" (task services) or "<job>-<group>".
	Name string
	// TaskName is the task a task-level service belongs to; for a group
	// service it is empty or names a task of the group.
	TaskName string `json:",omitempty"`
	// PortLabel is a port label of the group's network, or a port number
	// (with address_mode alloc, or with Address set); empty registers
	// port 0.
	PortLabel string `json:",omitempty"`
	// AddressMode is one of the AddressMode* values (default auto).
	AddressMode string
	// Address, when set, is registered instead of the host's address
	// (address_mode must be auto).
	Address    string            `json:",omitempty"`
	Tags       []string          `json:",omitempty"`
	CanaryTags []string          `json:",omitempty"` // registered instead of Tags while the alloc is an unpromoted canary
	Meta       map[string]string `json:",omitempty"`
	// Checks are run by the node agent against the instance.
	Checks []*ServiceCheck `json:",omitempty"`
	// OnUpdate is the default of the checks' OnUpdate.
	OnUpdate string
	// Provider is ServiceProviderNomad.
	Provider string
}

// ServiceCheck is a check block of a service: the node agent runs it every
// Interval, giving it Timeout. Shape and JSON names follow Nomad's
// structs.ServiceCheck for the http, tcp and script checks drover supports.
type ServiceCheck struct {
	// Name defaults to `service: "<service name>" check`; unique in its service.
	Name string
	// Type is ServiceCheckHTTP, ServiceCheckTCP or ServiceCheckScript.
	Type string
	// Command and Args: the script check's command, run in the task.
	Command string   `json:",omitempty"`
	Args    []string `json:",omitempty"`
	// Path (required for http, relative: "/health"), Protocol ("http" or
	// "https"), Method (default GET), Header and Body shape the http
	// check's request.
	Path     string              `json:",omitempty"`
	Protocol string              `json:",omitempty"`
	Method   string              `json:",omitempty"`
	Header   map[string][]string `json:",omitempty"`
	Body     string              `json:",omitempty"`
	// TLSSkipVerify skips certificate verification of an https check.
	TLSSkipVerify bool `json:",omitempty"`
	// PortLabel is a port label of the group's network or a number;
	// empty uses the service's port.
	PortLabel string `json:",omitempty"`
	// AddressMode is "", host or alloc: the address the check dials.
	AddressMode string `json:",omitempty"`
	// Interval between two runs (≥ 1s) and Timeout of one run (≥ 1s).
	Interval time.Duration
	Timeout  time.Duration
	// InitialStatus is the status before the first run ("", passing,
	// warning or critical).
	InitialStatus string `json:",omitempty"`
	// CheckRestart restarts the task after repeated failures; the
	// service's check_restart merged with the check's own.
	CheckRestart *CheckRestart `json:",omitempty"`
	// TaskName is the task a script check runs in: the service's task for
	// task services; required for script checks of group services.
	TaskName string `json:",omitempty"`
	// OnUpdate is one of the OnUpdate* values (default: the service's).
	OnUpdate string
}

// CheckRestart is a check_restart block, as Nomad's: the task is restarted
// when the check has failed Limit times in a row (0: never), not counting
// failures in the Grace period after the task (re)started. IgnoreWarnings
// counts a warning as passing.
type CheckRestart struct {
	Limit          int
	Grace          time.Duration
	IgnoreWarnings bool
}

// DefaultServiceName is Nomad's default service name: "<job>-<group>-<task>"
// for a task service, "<job>-<group>" for a group service (task empty).
func DefaultServiceName(job, group, task string) string {
	if task == "" {
		return job + "-" + group
	}
	return job + "-" + group + "-" + task
}

// InterpolateServiceName replaces the submission-time variables of a
// service name as Nomad does: ${JOB}, ${TASKGROUP}, ${TASK} and ${BASE}
// ("<job>-<group>-<task>"). Other ${...} references are left for the node
// agent, which resolves them in the task's environment.
func InterpolateServiceName(name, job, group, task string) string {
	if !strings.Contains(name, "${") {
		return name
	}
	return strings.NewReplacer(
		"${JOB}", job,
		"${TASKGROUP}", group,
		"${TASK}", task,
		"${BASE}", job+"-"+group+"-"+task,
	).Replace(name)
}

// AllServices lists every service of a group: the group's own first, then
// each task's in task order.
func (tg *TaskGroup) AllServices() []*Service {
	if tg == nil {
		return nil
	}
	out := append([]*Service(nil), tg.Services...)
	for _, t := range tg.Tasks {
		out = append(out, t.Services...)
	}
	return out
}

// ServiceRegistration is one registered instance of a service in drover's
// registry (Nomad's ServiceRegistration, same shape and JSON names): the
// node agent upserts it when the task runs and deletes it when the task
// stops; the store removes it when its alloc stops being live.
type ServiceRegistration struct {
	// ID is ServiceRegistrationID's: unique per alloc, owner, service and port.
	ID          string
	ServiceName string
	Namespace   string
	NodeID      string
	Datacenter  string
	JobID       string
	AllocID     string
	Tags        []string
	// Address and Port are where the instance is reached (Port 0: none).
	Address     string
	Port        int
	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a deep copy.
func (r *ServiceRegistration) Copy() *ServiceRegistration {
	if r == nil {
		return nil
	}
	c := *r
	c.Tags = append([]string(nil), r.Tags...)
	if r.Tags == nil {
		c.Tags = nil
	}
	return &c
}

// SameInstance reports whether r and o register the same thing (indexes
// aside).
func (r *ServiceRegistration) SameInstance(o *ServiceRegistration) bool {
	if r.ID != o.ID || r.ServiceName != o.ServiceName || r.Namespace != o.Namespace || r.NodeID != o.NodeID ||
		r.Datacenter != o.Datacenter || r.JobID != o.JobID || r.AllocID != o.AllocID || r.Address != o.Address ||
		r.Port != o.Port || len(r.Tags) != len(o.Tags) {
		return false
	}
	for i := range r.Tags {
		if r.Tags[i] != o.Tags[i] {
			return false
		}
	}
	return true
}

// ServiceRegistrationID is Nomad's registration ID:
// "_nomad-task-<alloc>-<owner>-<service>-<port label>", the owner being the
// task, or "group-<group>" for a group service.
func ServiceRegistrationID(allocID, owner, serviceName, portLabel string) string {
	return "_nomad-task-" + allocID + "-" + owner + "-" + serviceName + "-" + portLabel
}

// ServiceRegistrationLive reports whether an alloc's registrations may be
// served: the alloc is not terminal on either side and its node is not
// disconnected (client status unknown).
func ServiceRegistrationLive(a *Allocation) bool {
	return a != nil && !a.TerminalStatus() && a.ClientStatus != AllocClientStatusUnknown
}
