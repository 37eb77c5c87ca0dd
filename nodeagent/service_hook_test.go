package nodeagent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/drover-sched/drover/structs"
)

// registryCP is the fake control plane with an in-memory service
// registry (nodeagent.ServiceRegistry).
type registryCP struct {
	*fakeCP
	rmu   sync.Mutex
	regs  map[string]*structs.ServiceRegistration
	index uint64
}

func newRegistryCP() *registryCP {
	return &registryCP{fakeCP: newFakeCP(), regs: map[string]*structs.ServiceRegistration{}, index: 1}
}

var _ ServiceRegistry = (*registryCP)(nil)

func (r *registryCP) UpsertServiceRegistrations(_ context.Context, nodeID string, regs []*structs.ServiceRegistration) error {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	for _, x := range regs {
		if x.NodeID != nodeID {
			return errors.New("wrong node")
		}
		r.regs[x.ID] = x.Copy()
	}
	r.index++
	return nil
}

func (r *registryCP) DeleteServiceRegistrations(_ context.Context, _ string, ids []string) error {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	for _, id := range ids {
		delete(r.regs, id)
	}
	r.index++
	return nil
}

func (r *registryCP) ServiceRegistrations(ctx context.Context, _, namespace, name string, minIndex uint64, wait time.Duration) ([]*structs.ServiceRegistration, uint64, error) {
	deadline := time.Now().Add(wait)
	for {
		r.rmu.Lock()
		idx := r.index
		if minIndex == 0 || idx > minIndex || time.Now().After(deadline) {
			var out []*structs.ServiceRegistration
			for _, x := range r.regs {
				if name != IndexOnly && x.Namespace == namespace && (name == "" || x.ServiceName == name) {
					out = append(out, x.Copy())
				}
			}
			r.rmu.Unlock()
			sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
			return out, idx, nil
		}
		r.rmu.Unlock()
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (r *registryCP) registered() map[string]*structs.ServiceRegistration {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	out := map[string]*structs.ServiceRegistration{}
	for k, v := range r.regs {
		out[k] = v.Copy()
	}
	return out
}

func withHostPort(a *structs.Allocation, label string, port int) {
	a.AllocatedResources.Shared.Ports = []structs.AllocatedPortMapping{{Label: label, Value: port, HostIP: "127.0.0.1"}}
}

// TestServicesRegisterWhileTaskRuns: a running task's services (its own
// and the group's, which the group's main task owns) are registered with
// Nomad's IDs, names interpolated in the task's environment, the port's
// host address and value and the tags; stopping the alloc deregisters
// them.
func TestServicesRegisterWhileTaskRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newRegistryCP()
	startAgent(t, cp, testConfig(t, dir))
	task := shTask("server", "sleep 300")
	task.Services = []*structs.Service{{Name: "${NOMAD_JOB_NAME}-api", TaskName: "server", PortLabel: "http",
		AddressMode: structs.AddressModeAuto, Tags: []string{"v1", "idx-${NOMAD_ALLOC_INDEX}"}, Provider: structs.ServiceProviderNomad}}
	job := testJob(structs.JobTypeService, task)
	tg := job.TaskGroups[0]
	tg.Services = []*structs.Service{{Name: "front", PortLabel: "http", AddressMode: structs.AddressModeAuto, Provider: structs.ServiceProviderNomad}}
	alloc := testAlloc(job)
	withHostPort(alloc, "http", 25123)
	cp.addAlloc(alloc)

	taskID := structs.ServiceRegistrationID(alloc.ID, "server", job.Name+"-api", "http")
	groupID := structs.ServiceRegistrationID(alloc.ID, "group-web", "front", "http")
	var regs map[string]*structs.ServiceRegistration
	waitFor(t, 20*time.Second, "both services registered", func() bool {
		regs = cp.registered()
		return regs[taskID] != nil && regs[groupID] != nil
	})
	r := regs[taskID]
	if r.ServiceName != job.Name+"-api" || r.Address != "127.0.0.1" || r.Port != 25123 || !slices.Equal(r.Tags, []string{"v1", "idx-0"}) ||
		r.AllocID != alloc.ID || r.JobID != job.ID || r.Namespace != "default" || r.NodeID == "" {
		t.Fatalf("task service registered as %+v", r)
	}

	cp.stopAlloc(alloc.ID)
	waitFor(t, 30*time.Second, "services deregistered", func() bool { return len(cp.registered()) == 0 })
}

// TestTemplateListsServiceInstances: a template reading nomadService is
// rendered from the registry and again when the service's instances
// change.
func TestTemplateListsServiceInstances(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newRegistryCP()
	ta := startAgent(t, cp, testConfig(t, dir))
	nodeID := ta.NodeID()
	backend := func(id string, port int) *structs.ServiceRegistration {
		return &structs.ServiceRegistration{ID: id, ServiceName: "backend", Namespace: "default", NodeID: nodeID,
			AllocID: id, JobID: "b", Address: "10.0.0.1", Port: port}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cp.UpsertServiceRegistrations(context.Background(), nodeID, []*structs.ServiceRegistration{backend("a", 1001)}))

	task := shTask("front", "sleep 300")
	task.Templates = []*structs.Template{tmplBlock("local/upstreams",
		`{{ range nomadService "backend" }}{{ .Address }}:{{ .Port }} {{ end }}`, structs.TemplateChangeModeNoop)}
	job := testJob(structs.JobTypeService, task)
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	out := filepath.Join(NewAllocDir(filepath.Join(dir, "alloc"), alloc.ID).TaskDir("front").LocalDir, "upstreams")
	content := func() string { b, _ := os.ReadFile(out); return string(b) }
	waitFor(t, 20*time.Second, "first render", func() bool { return content() == "10.0.0.1:1001 " })

	must(cp.UpsertServiceRegistrations(context.Background(), nodeID, []*structs.ServiceRegistration{backend("b", 1002)}))
	waitFor(t, 20*time.Second, "re-render with two instances", func() bool { return content() == "10.0.0.1:1001 10.0.0.1:1002 " })
	must(cp.DeleteServiceRegistrations(context.Background(), nodeID, []string{"a"}))
	waitFor(t, 20*time.Second, "re-render with one instance", func() bool { return content() == "10.0.0.1:1002 " })
	cp.stopAlloc(alloc.ID)
	cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
}

// countingRegistry counts the registry reads and whether any blocked.
type countingRegistry struct {
	*registryCP
	mu       sync.Mutex
	reads    int
	blocking int
}

func (c *countingRegistry) ServiceRegistrations(ctx context.Context, nodeID, ns, name string, minIndex uint64, wait time.Duration) ([]*structs.ServiceRegistration, uint64, error) {
	c.mu.Lock()
	c.reads++
	if minIndex > 0 && wait > 0 {
		c.blocking++
	}
	c.mu.Unlock()
	return c.registryCP.ServiceRegistrations(ctx, nodeID, ns, name, minIndex, wait)
}

// TestServiceWatchPacedPolls: where requests are paid for, the watch reads
// the registry's index without blocking, at its pace, and still wakes
// subscribers when it moves.
func TestServiceWatchPacedPolls(t *testing.T) {
	t.Parallel()
	reg := &countingRegistry{registryCP: newRegistryCP()}
	l := newServiceLookup(zaptest.NewLogger(t), reg, func() string { return "n1" }, 50*time.Millisecond)
	ch, cancel := l.Subscribe()
	defer cancel()
	// The second read comes after the first one's wake: drain both.
	waitFor(t, 10*time.Second, "the second index read", func() bool { reg.mu.Lock(); defer reg.mu.Unlock(); return reg.reads > 1 })
	select {
	case <-ch:
	default:
	}
	if err := reg.UpsertServiceRegistrations(context.Background(), "n1", []*structs.ServiceRegistration{{ID: "x", ServiceName: "s", Namespace: "default", NodeID: "n1"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake after the registry changed")
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.blocking != 0 {
		t.Fatalf("%d blocking reads, want none when paced", reg.blocking)
	}
}

// gatedRegistry holds the first index read until gate closes.
type gatedRegistry struct {
	*registryCP
	gate chan struct{}
	once sync.Once
}

func (g *gatedRegistry) ServiceRegistrations(ctx context.Context, nodeID, ns, name string, minIndex uint64, wait time.Duration) ([]*structs.ServiceRegistration, uint64, error) {
	if name == IndexOnly {
		g.once.Do(func() { <-g.gate })
	}
	return g.registryCP.ServiceRegistrations(ctx, nodeID, ns, name, minIndex, wait)
}

// TestServiceSubscriberSeesEarlierChanges: a template renders before it
// subscribes, and the watch's first index read may come after a change;
// neither gap loses the change: a new subscriber is woken at once, and
// again by the watch's first read.
func TestServiceSubscriberSeesEarlierChanges(t *testing.T) {
	t.Parallel()
	reg := &gatedRegistry{registryCP: newRegistryCP(), gate: make(chan struct{})}
	l := newServiceLookup(zaptest.NewLogger(t), reg, func() string { return "n1" }, 0)
	ch, cancel := l.Subscribe()
	defer cancel()
	select {
	case <-ch:
	default:
		t.Fatal("a new subscriber was not woken at once")
	}
	// The change lands while the watch's first read is held back.
	if err := reg.UpsertServiceRegistrations(context.Background(), "n1", []*structs.ServiceRegistration{{ID: "x", ServiceName: "s", Namespace: "default", NodeID: "n1"}}); err != nil {
		t.Fatal(err)
	}
	close(reg.gate)
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake from the watch's first read")
	}
}

// TestServicesFollowInPlaceUpdate: an in-place update re-registers the
// task's services as the new version has them (Nomad updates services
// without replacing the alloc): changed tags, an added service, and a
// removed one deregistered; the task keeps running.
func TestServicesFollowInPlaceUpdate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newRegistryCP()
	startAgent(t, cp, testConfig(t, dir))
	task := shTask("server", "sleep 300")
	task.Services = []*structs.Service{{Name: "a", TaskName: "server", Tags: []string{"v1"}, Provider: structs.ServiceProviderNomad}}
	job := testJob(structs.JobTypeService, task)
	alloc := testAlloc(job)
	base := alloc.Copy()
	cp.addAlloc(alloc)
	aID := structs.ServiceRegistrationID(alloc.ID, "server", "a", "")
	bID := structs.ServiceRegistrationID(alloc.ID, "server", "b", "")
	waitFor(t, 20*time.Second, "a registered", func() bool { return cp.registered()[aID] != nil })

	update := func(svcs ...*structs.Service) {
		upd := base.Copy()
		upd.Job = job.Copy()
		upd.Job.Version++
		job = upd.Job
		upd.Job.TaskGroups[0].Tasks[0].Services = svcs
		cp.addAlloc(upd)
	}
	update(&structs.Service{Name: "a", TaskName: "server", Tags: []string{"v2"}, Provider: structs.ServiceProviderNomad},
		&structs.Service{Name: "b", TaskName: "server", Provider: structs.ServiceProviderNomad})
	waitFor(t, 20*time.Second, "a with v2 and b registered", func() bool {
		r := cp.registered()
		return r[aID] != nil && slices.Equal(r[aID].Tags, []string{"v2"}) && r[bID] != nil
	})
	update(&structs.Service{Name: "a", TaskName: "server", Tags: []string{"v2"}, Provider: structs.ServiceProviderNomad})
	waitFor(t, 20*time.Second, "b deregistered", func() bool { r := cp.registered(); return r[bID] == nil && r[aID] != nil })
	if st := cp.latest(alloc.ID); st == nil || st.TaskStates["server"] == nil || st.TaskStates["server"].Restarts != 0 {
		t.Fatalf("the task was restarted by a service change: %+v", st)
	}
	cp.stopAlloc(alloc.ID)
	cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
}
