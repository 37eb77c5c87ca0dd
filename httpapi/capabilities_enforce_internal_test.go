package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/acl"
	"github.com/drover-sched/drover/controlplane"
	evqueue "github.com/drover-sched/drover/events/embedded"
	"github.com/drover-sched/drover/placement"
	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

// aclWorld is an API with ACLs on over a store holding one node, one
// service job with its allocations, evaluation and deployment, and a
// management token.
type aclWorld struct {
	t      *testing.T
	s      *Server
	store  *embedded.Store
	root   string // the bootstrap token's secret
	ids    map[string]string
	tables []string
}

const worldJob = `{"Job": {"ID": "web", "Name": "web", "Type": "service", "Datacenters": ["dc1"],
  "Update": {"MaxParallel": 1, "MinHealthyTime": 1000000000, "HealthyDeadline": 60000000000, "ProgressDeadline": 120000000000},
  "TaskGroups": [{"Name": "web", "Count": 1, "Tasks": [{"Name": "server", "Driver": "raw_exec",
    "Config": {"command": "/bin/sleep", "args": ["1000"]}, "Resources": {"CPU": 100, "MemoryMB": 64}}]}]}}`

func newACLWorld(t *testing.T) *aclWorld {
	t.Helper()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	broker := evqueue.New(evqueue.Config{})
	t.Cleanup(broker.Close)
	ev := &scheduler.Evaluator{State: store, Reconcile: reconcile.Reconcile, UpdateOnNodes: placement.UpdateTypeOnNodes,
		RescheduleTracker: reconcile.NextRescheduleTracker, Config: &scheduler.CachedConfig{Source: store, TTL: time.Nanosecond}}
	svc := controlplane.New(controlplane.Config{Store: store, Queue: broker, Planner: ev})
	s := New(Config{State: store, Jobs: svc, NodeAgents: svc, Services: store, Operator: svc, Plans: svc, Scaler: svc, Launcher: svc, Allocs: svc,
		Namespaces: svc, Scheduler: svc, NodeSecrets: store, ACL: &acl.Service{Store: store},
		Agent: AgentInfo{Region: "global", HTTPAddr: "127.0.0.1:4646"}})
	w := &aclWorld{t: t, s: s, store: store, ids: map[string]string{},
		tables: []string{storage.TableJobs, storage.TableAllocs, storage.TableEvals, storage.TableDeployments, storage.TableNodes,
			storage.TableNamespaces, storage.TableSchedulerConfig, storage.TableACLTokens, storage.TableACLPolicies}}
	ctx := context.Background()
	if _, err := store.UpsertNode(ctx, &structs.Node{ID: "node-1", Name: "node-1", Datacenter: "dc1", NodePool: "default",
		Status: structs.NodeStatusReady, SchedulingEligibility: structs.NodeSchedulingEligible,
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000}, Memory: structs.NodeMemoryResources{MemoryMB: 8192},
			Disk: structs.NodeDiskResources{DiskMB: 100000}},
		Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}}); err != nil {
		t.Fatal(err)
	}
	var boot ACLTokenResponse
	w.decode(w.do("POST", "/v1/acl/bootstrap", "", nil, http.StatusOK), &boot)
	w.root = boot.SecretID
	var reg JobRegisterResponse
	w.decode(w.do("PUT", "/v1/jobs", w.root, []byte(worldJob), http.StatusOK), &reg)
	if err := ev.Process(ctx, reg.EvalID); err != nil {
		t.Fatal(err)
	}
	allocs, _ := store.AllocsByJob(ctx, "default", "web")
	dep, err := store.LatestDeployment(ctx, "default", "web")
	if len(allocs) != 1 || err != nil {
		t.Fatalf("world: %d allocs, deployment %v", len(allocs), err)
	}
	w.ids["alloc"], w.ids["eval"], w.ids["deployment"] = allocs[0].ID, reg.EvalID, dep.ID
	return w
}

func (w *aclWorld) do(method, path, token string, body []byte, want int) []byte {
	w.t.Helper()
	rec := w.request(method, path, token, body)
	if want != 0 && rec.Code != want {
		w.t.Fatalf("%s %s: %d %s, want %d", method, path, rec.Code, rec.Body, want)
	}
	return rec.Body.Bytes()
}

func (w *aclWorld) request(method, path, token string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if token != "" {
		req.Header.Set("X-Nomad-Token", token)
	}
	rec := httptest.NewRecorder()
	w.s.ServeHTTP(rec, req)
	return rec
}

func (w *aclWorld) decode(b []byte, v any) {
	w.t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		w.t.Fatalf("%v: %s", err, b)
	}
}

// token creates a client token with one policy of the given rules.
func (w *aclWorld) token(name, rules string) string {
	w.t.Helper()
	w.do("PUT", "/v1/acl/policy/"+name, w.root, []byte(`{"Name": "`+name+`", "Rules": `+quote(rules)+`}`), http.StatusOK)
	var tok ACLTokenResponse
	w.decode(w.do("PUT", "/v1/acl/token", w.root, []byte(`{"Name": "`+name+`", "Type": "client", "Policies": ["`+name+`"]}`), http.StatusOK), &tok)
	return tok.SecretID
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// indexes are the store's table indexes: what a write would move.
func (w *aclWorld) indexes() map[string]uint64 {
	out := map[string]uint64{}
	for _, t := range w.tables {
		out[t], _ = w.store.Index(context.Background(), t)
	}
	return out
}

// concretePath turns a route pattern into a request for the world's
// objects.
func (w *aclWorld) concretePath(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	id := "web"
	switch {
	case strings.HasPrefix(path, "/v1/allocation/"), strings.HasPrefix(path, "/v1/client/"):
		id = w.ids["alloc"]
	case strings.HasPrefix(path, "/v1/evaluation/"):
		id = w.ids["eval"]
	case strings.HasPrefix(path, "/v1/deployment/"):
		id = w.ids["deployment"]
	case strings.HasPrefix(path, "/v1/node/"):
		id = "node-1"
	}
	r := strings.NewReplacer("{id}", id, "{alloc_id}", w.ids["alloc"], "{name}", "default", "{accessor}", "x")
	path = r.Replace(path)
	if strings.HasPrefix(path, "/v1/acl/policy/") {
		path = "/v1/acl/policy/someone-elses"
	}
	return method, path
}

// TestEveryRouteChecksItsCapability walks the whole capability table: a
// client token whose only rights are in another namespace is refused
// (403 "Permission denied", never a 500) on every route that needs a
// right, and nothing changes; a management token is refused nowhere.
func TestEveryRouteChecksItsCapability(t *testing.T) {
	w := newACLWorld(t)
	outsider := w.token("elsewhere", `namespace "elsewhere" { policy = "write" }`)
	w.do("PUT", "/v1/acl/policy/someone-elses", w.root, []byte(`{"Name": "someone-elses", "Rules": "agent { policy = \"read\" }"}`), http.StatusOK)
	before := w.indexes()
	checked := 0
	for pattern, n := range routeNeeds {
		if n.kind == needNone || n.kind == needNodeSecret {
			continue
		}
		method, path := w.concretePath(pattern)
		if n.kind == needIdentity && !strings.HasPrefix(path, "/v1/acl/policy/") && !strings.HasPrefix(path, "/v1/acl/token/x") {
			continue // the anyone-with-an-identity routes: lists filtered (TestListsFiltered)
		}
		body := []byte("{}")
		if n.kind == needJobNamespace {
			body = []byte(worldJob)
		}
		rec := w.request(method, path, outsider, body)
		if rec.Code != http.StatusForbidden || strings.TrimSpace(rec.Body.String()) != "Permission denied" {
			t.Errorf("%s (%s %s) with a token of another namespace: %d %q, want 403 Permission denied", pattern, method, path, rec.Code, rec.Body)
		}
		checked++
	}
	if after := w.indexes(); !equalMaps(before, after) {
		t.Errorf("refused requests changed state: %v → %v", before, after)
	}
	if checked < 50 {
		t.Fatalf("only %d routes checked", checked)
	}
	for pattern, n := range routeNeeds {
		if n.kind == needNodeSecret || strings.HasPrefix(pattern, "DELETE") || strings.Contains(pattern, "/v1/system/gc") {
			continue
		}
		method, path := w.concretePath(pattern)
		body := []byte("{}")
		if n.kind == needJobNamespace {
			body = []byte(worldJob)
		}
		if rec := w.request(method, path, w.root, body); rec.Code == http.StatusForbidden {
			t.Errorf("%s refused to a management token: %s", pattern, rec.Body)
		}
	}
}

func equalMaps(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
