package nodeagent

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
	"github.com/drover-sched/drover/tasktemplate"
)

// IndexOnly, as the service name of a ServiceRegistrations read, asks for
// the registry's index alone (no registrations): what the watcher of
// template subscriptions blocks on.
const IndexOnly = "*"

// serviceWatchWait is how long one blocking read of the registry's index
// waits (under the HTTP client's timeout and API Gateway's).
const serviceWatchWait = 20 * time.Second

// servicePollPaced is how often the registry's index is read, without
// blocking, where each request is paid for (a ControlPlane that is a
// Pacer: AWS, where a blocking read would keep an API function running
// for its whole wait).
const servicePollPaced = 10 * time.Second

// serviceLookup answers templates' nomadService and nomadServices from the
// control plane's registry (a fresh read each render) and tells
// subscribers when the registry changed: one goroutine, running while
// anyone subscribes, blocks on the registry's index and wakes them when
// it moves.
type serviceLookup struct {
	logger   *zap.Logger
	registry ServiceRegistry
	nodeID   func() string
	// pollEvery, when set, replaces blocking reads by a plain read of
	// the index this often.
	pollEvery time.Duration

	mu     sync.Mutex
	subs   map[int]chan struct{}
	next   int
	cancel context.CancelFunc
}

var _ ServiceSubscriber = (*serviceLookup)(nil)

func newServiceLookup(logger *zap.Logger, registry ServiceRegistry, nodeID func() string, pollEvery time.Duration) *serviceLookup {
	return &serviceLookup{logger: logger.Named("services"), registry: registry, nodeID: nodeID, pollEvery: pollEvery,
		subs: map[int]chan struct{}{}}
}

// Service implements tasktemplate.ServiceLookup: the service's instances
// with every tag of tags, sorted by ID.
func (l *serviceLookup) Service(namespace, name string, tags []string) ([]*tasktemplate.ServiceInstance, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	regs, _, err := l.registry.ServiceRegistrations(ctx, l.nodeID(), namespace, name, 0, 0)
	if err != nil {
		return nil, err
	}
	out := []*tasktemplate.ServiceInstance{}
	for _, r := range regs {
		if !hasTags(r.Tags, tags) {
			continue
		}
		out = append(out, &tasktemplate.ServiceInstance{ID: r.ID, ServiceName: r.ServiceName, Namespace: r.Namespace,
			NodeID: r.NodeID, Datacenter: r.Datacenter, JobID: r.JobID, AllocID: r.AllocID,
			Tags: slices.Clone(r.Tags), Address: r.Address, Port: r.Port})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func hasTags(have, want []string) bool {
	for _, t := range want {
		if !slices.Contains(have, t) {
			return false
		}
	}
	return true
}

// Services implements tasktemplate.ServiceLookup: the namespace's service
// names with the union of their tags, sorted by name.
func (l *serviceLookup) Services(namespace string) ([]*tasktemplate.ServiceSummary, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	regs, _, err := l.registry.ServiceRegistrations(ctx, l.nodeID(), namespace, "", 0, 0)
	if err != nil {
		return nil, err
	}
	byName := map[string]*tasktemplate.ServiceSummary{}
	for _, r := range regs {
		s := byName[r.ServiceName]
		if s == nil {
			s = &tasktemplate.ServiceSummary{Name: r.ServiceName, Tags: []string{}}
			byName[r.ServiceName] = s
		}
		for _, t := range r.Tags {
			if !slices.Contains(s.Tags, t) {
				s.Tags = append(s.Tags, t)
			}
		}
	}
	out := make([]*tasktemplate.ServiceSummary, 0, len(byName))
	for _, s := range byName {
		sort.Strings(s.Tags)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Subscribe implements ServiceSubscriber. The channel receives once at
// once: a subscriber rendered before it subscribed, and the registry may
// have changed in between.
func (l *serviceLookup) Subscribe() (<-chan struct{}, func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{}, 1)
	ch <- struct{}{}
	id := l.next
	l.next++
	l.subs[id] = ch
	if l.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel = cancel
		go l.watch(ctx)
	}
	return ch, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.subs, id)
		if len(l.subs) == 0 && l.cancel != nil {
			l.cancel()
			l.cancel = nil
		}
	}
}

// watch blocks on the registry's index and wakes the subscribers each
// time it moves, until ctx ends. Its first read wakes them too: what they
// rendered may be older than the index it starts from.
func (l *serviceLookup) watch(ctx context.Context) {
	var index uint64
	for ctx.Err() == nil {
		min, wait := index, serviceWatchWait
		if l.pollEvery > 0 {
			min, wait = 0, 0
		}
		_, idx, err := l.registry.ServiceRegistrations(ctx, l.nodeID(), structs.DefaultNamespace, IndexOnly, min, wait)
		if err != nil {
			if ctx.Err() == nil {
				l.logger.Debug("watch the service registry", zap.Error(err))
				select {
				case <-ctx.Done():
				case <-time.After(2 * time.Second):
				}
			}
			continue
		}
		if index == 0 || idx != index {
			l.mu.Lock()
			for _, ch := range l.subs {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			l.mu.Unlock()
		}
		index = idx
		if l.pollEvery > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(l.pollEvery):
			}
		}
	}
}

// templatesReadServices reports whether templates may read the service
// registry: one calls nomadService or nomadServices, or is read from a
// file (whose text is only known when rendered).
func templatesReadServices(ts []*structs.Template) bool {
	for _, t := range ts {
		if t.SourcePath != "" || strings.Contains(t.EmbeddedTmpl, "nomadService") {
			return true
		}
	}
	return false
}
