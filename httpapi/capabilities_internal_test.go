package httpapi

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/drover-sched/drover/controlplane"
	evqueue "github.com/drover-sched/drover/events/embedded"
	"github.com/drover-sched/drover/storage/embedded"
)

// allRoutesServer is a Server with every optional part set, so that every
// route is registered.
func allRoutesServer(t *testing.T) *Server {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	broker := evqueue.New(evqueue.Config{})
	t.Cleanup(broker.Close)
	svc := controlplane.New(controlplane.Config{Store: store, Queue: broker})
	seed, err := NewForwardKeySeed()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := NewForwardSigner(seed)
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{State: store, Jobs: svc, NodeAgents: svc, Services: store, Operator: svc, Plans: svc, Scaler: svc, Launcher: svc, Allocs: svc,
		Namespaces: svc, Scheduler: svc, NodeSecrets: store, ForwardSigner: signer})
}

// TestEveryRouteDeclaresItsNeed: every pattern the API registers has a row
// in the capability table (a new route that forgets one fails here; with
// ACLs on it would be refused to all but management tokens), and every
// row names a registered route (no stale rows).
func TestEveryRouteDeclaresItsNeed(t *testing.T) {
	s := allRoutesServer(t)
	registered := map[string]bool{}
	var missing []string
	for _, p := range s.mux.patterns {
		registered[p] = true
		if _, ok := routeNeeds[p]; !ok {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	for _, p := range missing {
		t.Errorf("route %q has no row in the capability table (httpapi/capabilities.go, routeNeeds): declare what its caller needs, as Nomad checks it", p)
	}
	var stale []string
	for p := range routeNeeds {
		if !registered[p] {
			stale = append(stale, p)
		}
	}
	sort.Strings(stale)
	for _, p := range stale {
		t.Errorf("the capability table has a row for %q, which is not a registered route", p)
	}
	if len(s.mux.patterns) < 60 {
		t.Fatalf("only %d routes registered: the server under test lacks parts", len(s.mux.patterns))
	}
}

// TestNamespaceRowsNameCapabilities: every namespace-scoped row lists at
// least one capability (an empty list would allow nothing, silently), and
// object rows name the path value holding the ID.
func TestNamespaceRowsNameCapabilities(t *testing.T) {
	for p, n := range routeNeeds {
		switch n.kind {
		case needNamespace, needJobNamespace, needObject:
			if len(n.caps) == 0 {
				t.Errorf("%s: a namespace row without capabilities", p)
			}
		}
		if n.kind == needObject && (n.object == 0 || n.pathKey == "") {
			t.Errorf("%s: an object row without its object kind or path key", p)
		}
	}
}
