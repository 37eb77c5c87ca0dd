package nodeagent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// networkHook gives an alloc whose group network is in bridge mode its
// network namespace before any task starts, from the driver of the
// group's tasks (drivers.NetworkManager; submission made sure they all use
// one that has it), and removes it once the alloc's tasks are dead, as
// Nomad's network hook does. Host-mode groups are left alone. A restarted agent
// gets the existing namespace back (CreateNetwork is idempotent).
type networkHook struct {
	ar *allocRunner
}

func newNetworkHook(ar *allocRunner) *networkHook { return &networkHook{ar: ar} }

func (*networkHook) Name() string { return "network" }

// networkTeardownTimeout bounds removing an alloc's namespace.
const networkTeardownTimeout = 30 * time.Second

// bridgeGroup returns the alloc's group when its network is in bridge
// mode, else nil.
func bridgeGroup(alloc *structs.Allocation) *structs.TaskGroup {
	if alloc == nil || alloc.Job == nil {
		return nil
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil || len(tg.Networks) == 0 || tg.Networks[0] == nil || tg.Networks[0].Mode != structs.NetworkModeBridge {
		return nil
	}
	return tg
}

// manager returns the network manager of the group's tasks' driver.
func (h *networkHook) manager(tg *structs.TaskGroup) (drivers.NetworkManager, error) {
	var name string
	for _, t := range tg.Tasks {
		switch {
		case name == "":
			name = t.Driver
		case t.Driver != name:
			return nil, fmt.Errorf("bridge network: the group's tasks use drivers %q and %q; one namespace needs one driver", name, t.Driver)
		}
	}
	d := h.ar.agent.drivers[name]
	if d == nil {
		return nil, fmt.Errorf("bridge network: driver %q is not enabled on this node", name)
	}
	m, ok := d.(drivers.NetworkManager)
	if !ok {
		return nil, fmt.Errorf("bridge network: driver %q cannot make a network namespace", name)
	}
	return m, nil
}

// Prerun makes the namespace and hands it to the alloc's tasks.
func (h *networkHook) Prerun(ctx context.Context) error {
	alloc := h.ar.Alloc()
	tg := bridgeGroup(alloc)
	if tg == nil {
		return nil
	}
	m, err := h.manager(tg)
	if err != nil {
		return err
	}
	req := &drivers.NetworkCreateRequest{AllocID: alloc.ID, Namespace: alloc.Namespace, JobID: alloc.JobID, TaskGroup: alloc.TaskGroup,
		Hostname: h.hostname(alloc, tg.Networks[0].Hostname), DNS: tg.Networks[0].DNS}
	if ar := alloc.AllocatedResources; ar != nil {
		req.Ports = append(req.Ports, ar.Shared.Ports...)
	}
	iso, err := m.CreateNetwork(ctx, req)
	if err != nil {
		return fmt.Errorf("create the alloc's bridge network: %w", err)
	}
	h.ar.setNetwork(iso)
	h.ar.logger.Info("alloc network ready", zap.String("mode", structs.NetworkModeBridge), zap.String("ip", iso.IP))
	return nil
}

// hostname interpolates the network's hostname as Nomad does (it may name
// ${NOMAD_ALLOC_INDEX}, ${NOMAD_JOB_NAME}, ${node.unique.name}, ...),
// with the alloc's variables and the node's.
func (h *networkHook) hostname(alloc *structs.Allocation, hostname string) string {
	if !strings.Contains(hostname, "${") {
		return hostname
	}
	env := buildTaskEnv(alloc, &structs.Task{}, h.ar.allocDir, TaskDir{}, h.ar.agent.Node(), nil, drivers.FSIsolationImage, nil)
	return env.interpolate(hostname)
}

// Postrun removes the namespace once the alloc's tasks are all dead, as
// Nomad's network hook does: nothing of a stopped alloc keeps its ports.
func (h *networkHook) Postrun() error { return h.teardown() }

// Destroy removes the namespace if Postrun did not (an alloc destroyed
// before its tasks ran, or restored terminal).
func (h *networkHook) Destroy() error { return h.teardown() }

func (h *networkHook) teardown() error {
	tg := bridgeGroup(h.ar.Alloc())
	if tg == nil {
		return nil
	}
	m, err := h.manager(tg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), networkTeardownTimeout)
	defer cancel()
	return m.DestroyNetwork(ctx, h.ar.id)
}
