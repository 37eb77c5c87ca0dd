package scheduler_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/structs"
)

// fakeClock is the evaluator's clock in the periodic tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func at(s string) time.Time          { t, _ := time.Parse(time.RFC3339, s); return t }
func periodicJob(id, cron string) *structs.Job {
	j := job(id, 1, 100)
	j.Type = structs.JobTypeBatch
	j.Periodic = &structs.PeriodicConfig{Enabled: true, Spec: cron, SpecType: structs.PeriodicSpecCron, TimeZone: "UTC"}
	return j
}

// launches returns the job's pending launch evals.
func (h *harness) launches(jobID string) []*structs.Evaluation {
	h.t.Helper()
	evals, err := h.store.EvalsByJob(context.Background(), "default", jobID)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []*structs.Evaluation
	for _, e := range evals {
		if e.Status == structs.EvalStatusPending && e.TriggeredBy == structs.EvalTriggerPeriodicJob {
			out = append(out, e)
		}
	}
	return out
}

func (h *harness) children(parent string) []*structs.Job {
	h.t.Helper()
	jobs, err := h.store.Jobs(context.Background(), "default", parent+"/")
	if err != nil {
		h.t.Fatal(err)
	}
	return jobs
}

func (h *harness) run(evalID string) {
	h.t.Helper()
	if err := h.eval.Process(context.Background(), evalID); err != nil {
		h.t.Fatalf("process %s: %v", evalID, err)
	}
}

// oneLaunch asserts exactly one pending launch eval, at want, and returns it.
func (h *harness) oneLaunch(jobID string, want time.Time) *structs.Evaluation {
	h.t.Helper()
	l := h.launches(jobID)
	if len(l) != 1 || !l[0].WaitUntil.Equal(want) {
		var got []time.Time
		for _, e := range l {
			got = append(got, e.WaitUntil)
		}
		h.t.Fatalf("pending launches of %s: %v, want one at %s", jobID, got, want)
	}
	return l[0]
}

// TestPeriodicLaunches: a periodic parent places nothing and arms its next
// launch; the launch registers the child <parent>/periodic-<unix> with
// Nomad's fields and arms the one after; re-running a launch launches
// nothing twice and arms no second chain; a late launch (server down)
// launches once and resumes after now, not replaying missed launches.
func TestPeriodicLaunches(t *testing.T) {
	h := newHarness(t)
	h.node("n1", 4000, 4096)
	clock := &fakeClock{t: at("2026-03-01T10:02:30Z")}
	h.eval.Now = clock.Now
	ctx := context.Background()

	reg, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: periodicJob("report", "*/5 * * * *")})
	if err != nil {
		t.Fatal(err)
	}
	h.run(reg.EvalID)
	if n := len(h.liveAllocs("report")); n != 0 {
		t.Fatalf("the periodic parent has %d allocs", n)
	}
	first := h.oneLaunch("report", at("2026-03-01T10:05:00Z"))

	// Registering the unchanged job again arms nothing new.
	reg2, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: periodicJob("report", "*/5 * * * *")})
	if err != nil {
		t.Fatal(err)
	}
	h.run(reg2.EvalID)
	h.oneLaunch("report", at("2026-03-01T10:05:00Z"))

	// Early delivery is refused; on time, the child is launched.
	if err := h.eval.Process(ctx, first.ID); err == nil {
		t.Fatal("a launch ran before its time")
	}
	clock.Set(at("2026-03-01T10:05:00Z"))
	h.run(first.ID)
	kids := h.children("report")
	if len(kids) != 1 {
		t.Fatalf("children %v", kids)
	}
	c := kids[0]
	if c.ID != "report/periodic-1772359500" || c.ParentID != "report" || c.Periodic != nil || c.Name != c.ID {
		t.Fatalf("child %+v", c)
	}
	if len(h.launches(c.ID)) != 1 {
		t.Fatalf("child evals %v", h.launches(c.ID))
	}
	second := h.oneLaunch("report", at("2026-03-01T10:10:00Z"))

	// A crash after the launch and before the eval was acknowledged: the
	// launch runs again and changes nothing.
	again := first.Copy()
	again.Status = structs.EvalStatusPending
	if _, err := h.store.UpsertEvals(ctx, again); err != nil {
		t.Fatal(err)
	}
	h.run(first.ID)
	if n := len(h.children("report")); n != 1 {
		t.Fatalf("re-run launch: %d children", n)
	}
	h.oneLaunch("report", at("2026-03-01T10:10:00Z"))

	// The server was down from 10:08 to 10:27: the 10:10 launch runs late,
	// once, and the next is 10:30 (10:15, 10:20, 10:25 are not replayed).
	clock.Set(at("2026-03-01T10:27:10Z"))
	h.run(second.ID)
	if n := len(h.children("report")); n != 2 {
		t.Fatalf("late launch: %d children", n)
	}
	h.oneLaunch("report", at("2026-03-01T10:30:00Z"))
}

// TestPeriodicProhibitOverlap: with prohibit_overlap, a launch is skipped
// while an earlier child is not dead, and the next one is armed all the
// same.
func TestPeriodicProhibitOverlap(t *testing.T) {
	h := newHarness(t) // no node: the first child stays pending
	clock := &fakeClock{t: at("2026-03-01T10:00:30Z")}
	h.eval.Now = clock.Now
	ctx := context.Background()
	j := periodicJob("sync", "* * * * *")
	j.Periodic.ProhibitOverlap = true
	reg, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: j})
	if err != nil {
		t.Fatal(err)
	}
	h.run(reg.EvalID)
	clock.Set(at("2026-03-01T10:01:00Z"))
	h.run(h.oneLaunch("sync", at("2026-03-01T10:01:00Z")).ID)
	if n := len(h.children("sync")); n != 1 {
		t.Fatalf("%d children", n)
	}
	clock.Set(at("2026-03-01T10:02:00Z"))
	h.run(h.oneLaunch("sync", at("2026-03-01T10:02:00Z")).ID)
	if kids := h.children("sync"); len(kids) != 1 {
		t.Fatalf("overlapping launch happened: %d children", len(kids))
	}
	h.oneLaunch("sync", at("2026-03-01T10:03:00Z"))

	// Once the child is dead (stopped here), launches resume.
	if _, err := h.service.DeregisterJob(ctx, "default", "sync/periodic-1772359260", false); err != nil {
		t.Fatal(err)
	}
	waitDead(t, h, "sync/periodic-1772359260")
	clock.Set(at("2026-03-01T10:03:00Z"))
	h.run(h.oneLaunch("sync", at("2026-03-01T10:03:00Z")).ID)
	if kids := h.children("sync"); len(kids) != 2 {
		t.Fatalf("launch after the child died: %d children", len(kids))
	}
}

// waitDead processes the stopped child's pending evals until it is dead.
func waitDead(t *testing.T, h *harness, jobID string) {
	t.Helper()
	evals, _ := h.store.EvalsByJob(context.Background(), "default", jobID)
	for _, e := range evals {
		if e.Status == structs.EvalStatusPending {
			h.run(e.ID)
		}
	}
	j, err := h.store.Job(context.Background(), "default", jobID)
	if err != nil || j.Status != structs.JobStatusDead {
		t.Fatalf("child %s: %+v %v", jobID, j, err)
	}
}

// TestPeriodicStaleAndStopped: a launch armed by an earlier version of the
// parent launches nothing (the new version armed its own), and a stopped
// parent launches nothing and arms nothing.
func TestPeriodicStaleAndStopped(t *testing.T) {
	h := newHarness(t)
	clock := &fakeClock{t: at("2026-03-01T10:00:30Z")}
	h.eval.Now = clock.Now
	ctx := context.Background()
	reg, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: periodicJob("r", "* * * * *")})
	if err != nil {
		t.Fatal(err)
	}
	h.run(reg.EvalID)
	old := h.oneLaunch("r", at("2026-03-01T10:01:00Z"))
	reg, err = h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: periodicJob("r", "*/2 * * * *")})
	if err != nil {
		t.Fatal(err)
	}
	h.run(reg.EvalID)
	clock.Set(at("2026-03-01T10:01:00Z"))
	h.run(old.ID)
	if n := len(h.children("r")); n != 0 {
		t.Fatalf("a stale launch launched %d children", n)
	}
	cur := h.oneLaunch("r", at("2026-03-01T10:02:00Z"))
	stop, err := h.service.DeregisterJob(ctx, "default", "r", true)
	if err != nil {
		t.Fatal(err)
	}
	h.run(stop.EvalID)
	clock.Set(at("2026-03-01T10:02:00Z"))
	h.run(cur.ID)
	if n := len(h.children("r")); n != 0 {
		t.Fatalf("a purged parent launched %d children", n)
	}
	for _, e := range h.launches("r") {
		if strings.HasPrefix(e.TriggeredBy, "periodic") {
			t.Fatalf("a purged parent armed a launch: %+v", e)
		}
	}
}

// TestPeriodicDispatchedChildLaunches: a periodic parameterized job arms
// no launch of its own; each dispatched child is periodic and arms its own.
func TestPeriodicDispatchedChildLaunches(t *testing.T) {
	h := newHarness(t)
	clock := &fakeClock{t: at("2026-03-01T10:00:30Z")}
	h.eval.Now = clock.Now
	ctx := context.Background()
	j := periodicJob("pd", "*/10 * * * *")
	j.ParameterizedJob = &structs.ParameterizedJobConfig{Payload: structs.DispatchPayloadOptional}
	reg, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: j})
	if err != nil {
		t.Fatal(err)
	}
	h.run(reg.EvalID)
	if l := h.launches("pd"); len(l) != 0 {
		t.Fatalf("the parameterized parent armed %d launches", len(l))
	}
	d, err := h.service.DispatchJob(ctx, &controlplane.DispatchRequest{Namespace: "default", JobID: "pd"})
	if err != nil {
		t.Fatal(err)
	}
	h.run(d.EvalID)
	if n := len(h.liveAllocs(d.DispatchedJobID)); n != 0 {
		t.Fatalf("the periodic dispatched child placed %d allocs", n)
	}
	h.oneLaunch(d.DispatchedJobID, at("2026-03-01T10:10:00Z"))
}
