package storagetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

func testRegistration(a *structs.Allocation, owner, name, port string, p int) *structs.ServiceRegistration {
	return &structs.ServiceRegistration{
		ID: structs.ServiceRegistrationID(a.ID, owner, name, port), ServiceName: name, Namespace: a.Namespace,
		NodeID: a.NodeID, Datacenter: "dc1", JobID: a.JobID, AllocID: a.ID, Tags: []string{"v1"},
		Address: "127.0.0.1", Port: p,
	}
}

func registrationIDs(rs []*structs.ServiceRegistration) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// testServiceRegistrations: a node upserts its allocs' registrations
// (listed by namespace and by name, sorted, with indexes; an unchanged
// upsert writes nothing; a changed one keeps CreateIndex), may not write
// for another node's alloc, deletes its own by ID, and an operator
// deletes one by service and ID.
func testServiceRegistrations(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 4000, 4096))
	addNode(t, s, testNode("n2", 4000, 4096))
	job := register(t, s, testJob("web")).Job
	a0, a1 := placement(job, "eval-1", 0, "n1"), placement(job, "eval-1", 1, "n2")
	must(s.CommitPlan(ctx, planFor(job, "eval-1", a0, a1)))

	r0 := testRegistration(a0, "server", "web", "http", 20001)
	r0b := testRegistration(a0, "group-web", "admin", "admin", 20002)
	r1 := testRegistration(a1, "server", "web", "http", 20003)
	idx := must(s.UpsertServiceRegistrations(ctx, "n1", []*structs.ServiceRegistration{r0, r0b}))
	must(s.UpsertServiceRegistrations(ctx, "n2", []*structs.ServiceRegistration{r1}))
	if got := must(s.Index(ctx, storage.TableServiceRegistrations)); got < idx {
		t.Fatalf("table index %d, want at least %d", got, idx)
	}

	web := must(s.ServiceRegistrationsByName(ctx, "default", "web"))
	want := registrationIDs([]*structs.ServiceRegistration{r0, r1})
	if r1.ID < r0.ID {
		want = []string{r1.ID, r0.ID}
	}
	if got := registrationIDs(web); !reflect.DeepEqual(got, want) {
		t.Fatalf("web = %v, want %v (sorted by ID)", got, want)
	}
	var created uint64
	for _, r := range web {
		if r.ID == r0.ID {
			created = r.CreateIndex
			if r.CreateIndex == 0 || r.CreateIndex > idx || r.ModifyIndex != r.CreateIndex || r.Port != 20001 || r.Address != "127.0.0.1" ||
				!reflect.DeepEqual(r.Tags, []string{"v1"}) || r.JobID != "web" || r.NodeID != "n1" || r.Datacenter != "dc1" {
				t.Fatalf("stored registration %+v (write index %d)", r, idx)
			}
		}
	}
	all := must(s.ServiceRegistrations(ctx, "*"))
	if len(all) != 3 || all[0].ServiceName != "admin" || all[1].ServiceName != "web" {
		t.Fatalf("all: %v, want admin first then the two web instances", registrationIDs(all))
	}
	if len(must(s.ServiceRegistrations(ctx, "other"))) != 0 || len(must(s.ServiceRegistrationsByName(ctx, "default", "nope"))) != 0 {
		t.Fatal("other namespace or unknown service should list nothing")
	}

	// Unchanged: nothing written. Changed: CreateIndex kept.
	before := must(s.Index(ctx, storage.TableServiceRegistrations))
	must(s.UpsertServiceRegistrations(ctx, "n1", []*structs.ServiceRegistration{r0}))
	if got := must(s.Index(ctx, storage.TableServiceRegistrations)); got != before {
		t.Fatalf("an unchanged upsert moved the index %d → %d", before, got)
	}
	changed := r0.Copy()
	changed.Tags = []string{"v2"}
	idx2 := must(s.UpsertServiceRegistrations(ctx, "n1", []*structs.ServiceRegistration{changed}))
	for _, r := range must(s.ServiceRegistrationsByName(ctx, "default", "web")) {
		if r.ID == r0.ID && (r.CreateIndex != created || r.ModifyIndex != idx2 || r.Tags[0] != "v2") {
			t.Fatalf("changed registration %+v: want create %d modify %d tags [v2]", r, created, idx2)
		}
	}

	// Another node's alloc.
	if _, err := s.UpsertServiceRegistrations(ctx, "n2", []*structs.ServiceRegistration{testRegistration(a0, "x", "evil", "http", 1)}); !errors.Is(err, storage.ErrWrongNode) {
		t.Fatalf("registering for another node's alloc: %v, want ErrWrongNode", err)
	}
	// A node deletes only its own.
	must(s.DeleteServiceRegistrations(ctx, "n2", []string{r0.ID, "nope"}))
	if len(must(s.ServiceRegistrationsByName(ctx, "default", "web"))) != 2 {
		t.Fatal("a node deleted another node's registration")
	}
	must(s.DeleteServiceRegistrations(ctx, "n1", []string{r0.ID}))
	if got := registrationIDs(must(s.ServiceRegistrationsByName(ctx, "default", "web"))); !reflect.DeepEqual(got, []string{r1.ID}) {
		t.Fatalf("after the node's delete: %v, want [%s]", got, r1.ID)
	}
	// The operator's delete.
	if _, err := s.DeleteServiceRegistration(ctx, "default", "web", "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete unknown: %v, want ErrNotFound", err)
	}
	must(s.DeleteServiceRegistration(ctx, "default", "web", r1.ID))
	if len(must(s.ServiceRegistrationsByName(ctx, "default", "web"))) != 0 {
		t.Fatal("operator delete left the registration")
	}
}

// testServiceRegistrationsFollowAllocs: registrations go with the write
// that makes their alloc terminal (a plan's stop, a node's terminal
// report, lost), or unknown, and with the node going down; a late upsert
// for such an alloc is skipped.
func testServiceRegistrationsFollowAllocs(t *testing.T, s storage.Store) {
	addNode(t, s, testNode("n1", 8000, 8192))
	addNode(t, s, testNode("n2", 8000, 8192))
	job := register(t, s, testJob("web")).Job
	var allocs []*structs.Allocation
	for i := range 5 {
		node := "n1"
		if i == 4 {
			node = "n2"
		}
		allocs = append(allocs, placement(job, "eval-1", uint(i), node))
	}
	must(s.CommitPlan(ctx, planFor(job, "eval-1", allocs...)))
	running := func(a *structs.Allocation) *structs.Allocation {
		return &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning}
	}
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{running(allocs[0]), running(allocs[1]), running(allocs[2]), running(allocs[3])}))
	must(s.UpdateAllocsFromClient(ctx, "n2", []*structs.Allocation{running(allocs[4])}))
	regs := map[string][]*structs.ServiceRegistration{}
	for i, a := range allocs {
		r := testRegistration(a, "server", "web", "http", 20000+i)
		regs[a.NodeID] = append(regs[a.NodeID], r)
	}
	must(s.UpsertServiceRegistrations(ctx, "n1", regs["n1"]))
	must(s.UpsertServiceRegistrations(ctx, "n2", regs["n2"]))
	live := func() map[string]bool {
		out := map[string]bool{}
		for _, r := range must(s.ServiceRegistrationsByName(ctx, "default", "web")) {
			out[r.AllocID] = true
		}
		return out
	}
	if n := len(live()); n != 5 {
		t.Fatalf("%d registered, want 5", n)
	}

	// 0: stopped by a plan. 1: lost. 2: the node reports it complete.
	// 3: unknown (its node disconnected).
	p := planFor(job, "eval-2")
	p.Stops = []*structs.AllocStop{
		{AllocID: allocs[0].ID, NodeID: "n1", DesiredStatus: structs.AllocDesiredStatusStop, DesiredDescription: "alloc not needed"},
		{AllocID: allocs[1].ID, NodeID: "n1", DesiredStatus: structs.AllocDesiredStatusStop, DesiredDescription: "alloc is lost", ClientStatus: structs.AllocClientStatusLost},
	}
	p.Updates = []*structs.AllocUpdate{{AllocID: allocs[3].ID, NodeID: "n1", ClientStatus: structs.AllocClientStatusUnknown}}
	// Each write that stops registered allocs moves the registry's index
	// (blocking reads and template watches wake on it).
	regIndex := func() uint64 { return must(s.Index(ctx, storage.TableServiceRegistrations)) }
	before := regIndex()
	must(s.CommitPlan(ctx, p))
	if after := regIndex(); after <= before {
		t.Errorf("registry index %d → %d across a plan that stopped registered allocs", before, after)
	}
	before = regIndex()
	must(s.UpdateAllocsFromClient(ctx, "n1", []*structs.Allocation{{ID: allocs[2].ID, ClientStatus: structs.AllocClientStatusComplete,
		TaskStates: map[string]*structs.TaskState{"server": {State: structs.TaskStateDead, FinishedAt: time.Now().UTC()}}}}))
	if after := regIndex(); after <= before {
		t.Errorf("registry index %d → %d across a report that finished a registered alloc", before, after)
	}
	got := live()
	for i := range 4 {
		if got[allocs[i].ID] {
			t.Errorf("alloc %d (%s) is no longer live but its registration is still served", i, allocs[i].ID)
		}
	}
	if !got[allocs[4].ID] {
		t.Fatal("the live alloc on n2 lost its registration")
	}
	// A late upsert for a terminal alloc is skipped.
	must(s.UpsertServiceRegistrations(ctx, "n1", regs["n1"][:1]))
	if live()[allocs[0].ID] {
		t.Fatal("a late upsert brought back the registration of a stopped alloc")
	}
	// The node going down takes its registrations.
	must(s.UpdateNodeStatus(ctx, "n2", structs.NodeStatusDown, time.Now().UnixNano()))
	if len(live()) != 0 {
		t.Fatalf("registrations of a down node are still served: %v", live())
	}
}
