package nodeagent

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// ServiceRegistry is what the node agent asks of the control plane for
// Nomad's native service discovery; a ControlPlane that offers it gets
// its tasks' services registered and its templates' nomadService and
// nomadServices answered. Implemented by the HTTP client (cpclient), the
// AWS control plane (through the API) and the in-process service.
type ServiceRegistry interface {
	// UpsertServiceRegistrations registers service instances of the
	// node's running tasks (replacing those with the same ID).
	UpsertServiceRegistrations(ctx context.Context, nodeID string, regs []*structs.ServiceRegistration) error
	// DeleteServiceRegistrations removes the node's registrations by ID.
	DeleteServiceRegistrations(ctx context.Context, nodeID string, ids []string) error
	// ServiceRegistrations reads the registrations of namespace (of one
	// service when name is set) and the registry's index; with
	// minIndex > 0 it blocks until the index passes it or wait ends.
	ServiceRegistrations(ctx context.Context, nodeID, namespace, name string, minIndex uint64, wait time.Duration) ([]*structs.ServiceRegistration, uint64, error)
}

// serviceRegisterTries is how often a (de)registration is tried before
// it is given up (logged); the store drops a stale one by itself.
const serviceRegisterTries = 3

// serviceHook registers a task's services in drover's registry while the
// task runs, as Nomad's service hook does for provider "nomad": after each
// start (Poststart) and when the task is re-attached after an agent
// restart, and deregisters them when the task exits, before its shutdown
// delay when it is killed, and when it stops. The group's services belong
// to one task of the group (see groupServiceOwner) and follow its life.
// Names and tags are interpolated in the task's environment; addresses
// and ports come from the alloc's network (address_mode auto, host or
// alloc: the host's address and the port's host value, or for alloc its
// mapped port).
type serviceHook struct {
	logger   *zap.Logger
	registry ServiceRegistry
	nodeID   string
	services []ownedService

	// regMu orders registrations and deregistrations (an update's
	// re-registration runs on its own goroutine).
	regMu      sync.Mutex
	mu         sync.Mutex
	env        *taskEnv
	alloc      *structs.Allocation
	node       *structs.Node
	running    bool     // between a start and the task's exit or stop
	registered []string // IDs of what is registered now
	// last is what was registered last: an update that changes none of
	// it sends nothing.
	last []*structs.ServiceRegistration
}

// ownedService is a service and the owner part of its registration ID:
// the task's name, or "group-<group>".
type ownedService struct {
	svc   *structs.Service
	owner string
}

func newServiceHook(logger *zap.Logger, registry ServiceRegistry, nodeID string, services []ownedService) *serviceHook {
	return &serviceHook{logger: logger.With(zap.String("hook", "service")), registry: registry, nodeID: nodeID, services: services}
}

func (*serviceHook) Name() string { return "service" }

// taskServices lists the services a task registers: its own, and the
// group's when it is the group services' owner.
func taskServices(tg *structs.TaskGroup, task *structs.Task) []ownedService {
	var out []ownedService
	if tg != nil {
		for _, s := range tg.Services {
			if groupServiceOwner(tg, s) == task.Name {
				out = append(out, ownedService{s, "group-" + tg.Name})
			}
		}
	}
	for _, s := range task.Services {
		out = append(out, ownedService{s, task.Name})
	}
	return out
}

// groupServiceOwner is the task whose life a group service follows: the
// task it names, else the group's first main task (no lifecycle hook),
// else its first task.
func groupServiceOwner(tg *structs.TaskGroup, s *structs.Service) string {
	if s.TaskName != "" {
		return s.TaskName
	}
	for _, t := range tg.Tasks {
		if t.Lifecycle == nil || t.Lifecycle.Hook == "" {
			return t.Name
		}
	}
	if len(tg.Tasks) > 0 {
		return tg.Tasks[0].Name
	}
	return ""
}

// Prestart keeps the task's environment (built by the hooks before this
// one) for the registrations.
func (h *serviceHook) Prestart(req *taskPrestartRequest, resp *taskPrestartResponse) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.env, h.alloc, h.node = resp.Env, req.Alloc, req.Node
	return nil
}

// Restore registers the services of a task re-attached after an agent
// restart (the upsert is idempotent).
func (h *serviceHook) Restore(req *taskPrestartRequest, resp *taskPrestartResponse) error {
	h.mu.Lock()
	h.env, h.alloc, h.node = resp.Env, req.Alloc, req.Node
	h.running = true
	h.mu.Unlock()
	h.register()
	return nil
}

// Poststart registers the services after each start.
func (h *serviceHook) Poststart(*structs.Task, *drivers.TaskHandle) error {
	h.mu.Lock()
	h.running = true
	h.mu.Unlock()
	h.register()
	return nil
}

// Update takes in an in-place update, as Nomad updates services without
// replacing the alloc: the new version's services are registered (tags,
// names, ports) and those it no longer has deregistered.
func (h *serviceHook) Update(alloc *structs.Allocation, task *structs.Task) {
	h.mu.Lock()
	if h.alloc != nil && h.alloc.ClientStatus == structs.AllocClientStatusUnknown && alloc.ClientStatus != structs.AllocClientStatusUnknown {
		h.last = nil // reconnected: the control plane dropped them while unknown
	}
	h.alloc = alloc
	if alloc.Job != nil {
		h.services = taskServices(alloc.Job.LookupTaskGroup(alloc.TaskGroup), task)
	}
	running := h.running
	h.mu.Unlock()
	if running {
		go h.register()
	}
}

// Exited deregisters: the task is not running (a restart registers again).
func (h *serviceHook) Exited(*structs.Task, *drivers.ExitResult) error {
	h.deregister()
	return nil
}

// PreKill deregisters before the shutdown delay, so that clients stop
// sending to the task while it drains (Nomad's shutdown_delay).
func (h *serviceHook) PreKill(*structs.Task) { h.deregister() }

// Stop deregisters whatever is still registered.
func (h *serviceHook) Stop(*structs.Task) error {
	h.deregister()
	return nil
}

// register upserts the current registrations and deregisters those
// registered before that are no longer among them.
func (h *serviceHook) register() {
	h.regMu.Lock()
	defer h.regMu.Unlock()
	h.mu.Lock()
	if !h.running {
		h.mu.Unlock()
		return // stopped meanwhile
	}
	regs := h.registrations()
	var stale []string
	for _, id := range h.registered {
		if !slices.ContainsFunc(regs, func(r *structs.ServiceRegistration) bool { return r.ID == id }) {
			stale = append(stale, id)
		}
	}
	unchanged := len(stale) == 0 && len(regs) == len(h.last) &&
		slices.EqualFunc(regs, h.last, func(a, b *structs.ServiceRegistration) bool { return a.SameInstance(b) })
	h.mu.Unlock()
	if unchanged {
		return
	}
	if len(regs) > 0 {
		err := h.retry(func(ctx context.Context) error { return h.registry.UpsertServiceRegistrations(ctx, h.nodeID, regs) })
		if err != nil {
			h.logger.Warn("service registration failed", zap.Error(err))
			return
		}
	}
	if len(stale) > 0 {
		if err := h.retry(func(ctx context.Context) error { return h.registry.DeleteServiceRegistrations(ctx, h.nodeID, stale) }); err != nil {
			h.logger.Warn("deregistration of removed services failed", zap.Error(err))
		}
	}
	h.mu.Lock()
	h.registered = h.registered[:0]
	for _, r := range regs {
		h.registered = append(h.registered, r.ID)
	}
	h.last = regs
	h.mu.Unlock()
	h.logger.Debug("services registered", zap.Int("count", len(regs)), zap.Int("removed", len(stale)))
}

func (h *serviceHook) deregister() {
	h.regMu.Lock()
	defer h.regMu.Unlock()
	h.mu.Lock()
	h.running = false
	ids := h.registered
	h.registered, h.last = nil, nil
	if len(ids) == 0 {
		// Nothing known registered; ask anyway when the task may have
		// registered in an earlier agent (the IDs are deterministic).
		for _, r := range h.registrations() {
			ids = append(ids, r.ID)
		}
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	if err := h.retry(func(ctx context.Context) error { return h.registry.DeleteServiceRegistrations(ctx, h.nodeID, ids) }); err != nil {
		h.logger.Warn("service deregistration failed (the control plane drops them when the alloc stops)", zap.Error(err))
	}
}

func (h *serviceHook) retry(fn func(ctx context.Context) error) error {
	var err error
	for i := range serviceRegisterTries {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = fn(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if i+1 < serviceRegisterTries {
			time.Sleep(time.Duration(i+1) * 500 * time.Millisecond)
		}
	}
	return err
}

// registrations builds the task's registrations from the alloc, its
// environment and the node (h.mu held).
func (h *serviceHook) registrations() []*structs.ServiceRegistration {
	a := h.alloc
	if a == nil || h.env == nil {
		return nil
	}
	dc := ""
	if h.node != nil {
		dc = h.node.Datacenter
	}
	canary := a.DeploymentStatus != nil && a.DeploymentStatus.Canary
	out := make([]*structs.ServiceRegistration, 0, len(h.services))
	for _, os := range h.services {
		s := os.svc
		name := h.env.interpolate(s.Name)
		tags := s.Tags
		if canary && len(s.CanaryTags) > 0 {
			tags = s.CanaryTags
		}
		itags := make([]string, 0, len(tags))
		for _, t := range tags {
			itags = append(itags, h.env.interpolate(t))
		}
		addr, port := serviceAddress(s, a, h.node, h.env)
		out = append(out, &structs.ServiceRegistration{
			ID:          structs.ServiceRegistrationID(a.ID, os.owner, name, s.PortLabel),
			ServiceName: name, Namespace: a.Namespace, NodeID: h.nodeID, Datacenter: dc,
			JobID: a.JobID, AllocID: a.ID, Tags: itags, Address: addr, Port: port,
		})
	}
	return out
}

// serviceAddress resolves where a service instance is reached: its port
// label's mapping in the alloc (the host's address and port; with
// address_mode alloc the mapped port when set), or a port number, and the
// service's own address when set.
func serviceAddress(s *structs.Service, a *structs.Allocation, node *structs.Node, env *taskEnv) (string, int) {
	addr := ""
	if node != nil {
		addr = node.Attributes["unique.network.ip-address"]
	}
	if addr == "" {
		addr = "127.0.0.1"
	}
	port := 0
	if n, err := strconv.Atoi(s.PortLabel); err == nil {
		port = n
	} else if s.PortLabel != "" && a.AllocatedResources != nil {
		shared := a.AllocatedResources.Shared
		if i := slices.IndexFunc(shared.Ports, func(p structs.AllocatedPortMapping) bool { return p.Label == s.PortLabel }); i >= 0 {
			p := shared.Ports[i]
			port = p.Value
			if s.AddressMode == structs.AddressModeAlloc && p.To > 0 {
				port = p.To
			}
			if p.HostIP != "" {
				addr = p.HostIP
			}
		} else {
			for _, n := range shared.Networks {
				for _, p := range append(append([]structs.Port(nil), n.ReservedPorts...), n.DynamicPorts...) {
					if p.Label == s.PortLabel {
						port = p.Value
					}
				}
			}
		}
	}
	if s.Address != "" {
		addr = env.interpolate(s.Address)
	}
	return addr, port
}
