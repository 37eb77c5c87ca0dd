package reconcile

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

// This file holds the small builders the scenario tests use, so that each
// scenario reads as a few lines: a world (job, allocs, deployment, nodes,
// clock) and the exact expected outcome.

// t0 is the scenarios' clock.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// world is the state a scenario reconciles.
type world struct {
	job     *structs.Job
	jobID   string
	allocs  []*structs.Allocation
	dep     *structs.Deployment
	tainted map[string]*structs.Node
	batch   bool
	purged  bool // the job is gone: Input.Job is nil
	sdc     bool // SupportsDisconnectedClients
	now     time.Time
	evalID  string
	// kinds is the update kind per alloc ID (default: ignore for allocs of
	// the current version, destructive for older ones).
	kinds map[string]UpdateKind
}

// newWorld starts a world around a service job (version 1, create index
// 10) with the given groups.
func newWorld(groups ...*structs.TaskGroup) *world {
	return &world{
		job:     &structs.Job{ID: "example", Name: "example", Namespace: "default", Type: structs.JobTypeService, Version: 1, CreateIndex: 10, JobModifyIndex: 100, ModifyIndex: 100, TaskGroups: groups, Priority: 50},
		jobID:   "example",
		tainted: map[string]*structs.Node{},
		now:     t0,
		evalID:  "eval-main",
		kinds:   map[string]UpdateKind{},
	}
}

// batchWorld is newWorld for a batch job.
func batchWorld(groups ...*structs.TaskGroup) *world {
	w := newWorld(groups...)
	w.job.Type = structs.JobTypeBatch
	w.batch = true
	return w
}

// group builds a task group with one task (kill timeout 5s), the service
// default reschedule policy and the given options.
func group(name string, count int, opts ...func(*structs.TaskGroup)) *structs.TaskGroup {
	tg := &structs.TaskGroup{
		Name: name, Count: count,
		ReschedulePolicy: &structs.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: structs.DelayFunctionExponential, MaxDelay: time.Hour, Unlimited: true},
		Tasks:            []*structs.Task{{Name: "main", Driver: "raw_exec", KillTimeout: 5 * time.Second}},
	}
	for _, o := range opts {
		o(tg)
	}
	return tg
}

// rolling gives the group an update strategy.
func rolling(maxParallel, canary int) func(*structs.TaskGroup) {
	return func(tg *structs.TaskGroup) {
		tg.Update = &structs.UpdateStrategy{MaxParallel: maxParallel, Canary: canary, HealthCheck: "checks",
			MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute, ProgressDeadline: 10 * time.Minute}
	}
}

// autoPromote sets auto_promote (and auto_revert) on the update strategy.
func autoPromote(tg *structs.TaskGroup) { tg.Update.AutoPromote, tg.Update.AutoRevert = true, true }

// resched sets the reschedule policy.
func resched(attempts int, interval, delay time.Duration, fn string, maxDelay time.Duration, unlimited bool) func(*structs.TaskGroup) {
	return func(tg *structs.TaskGroup) {
		tg.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: attempts, Interval: interval, Delay: delay,
			DelayFunction: fn, MaxDelay: maxDelay, Unlimited: unlimited}
	}
}

// noResched disables rescheduling.
func noResched(tg *structs.TaskGroup) { tg.ReschedulePolicy = &structs.ReschedulePolicy{} }

// maxDisconnect sets max_client_disconnect.
func maxDisconnect(d time.Duration) func(*structs.TaskGroup) {
	return func(tg *structs.TaskGroup) { tg.MaxClientDisconnect = &d }
}

// stopAfter sets stop_after_client_disconnect.
func stopAfter(d time.Duration) func(*structs.TaskGroup) {
	return func(tg *structs.TaskGroup) { tg.StopAfterClientDisconnect = &d }
}

// killTimeout sets the task's kill timeout.
func killTimeout(d time.Duration) func(*structs.TaskGroup) {
	return func(tg *structs.TaskGroup) { tg.Tasks[0].KillTimeout = d }
}

// jobAt returns the job as of version v (a copy of the current one).
func (w *world) jobAt(v uint64) *structs.Job {
	if v == w.job.Version {
		return w.job
	}
	j := *w.job
	j.Version = v
	return &j
}

// alloc adds a running alloc of the current job version named
// group[index] with ID id on node "n1", then applies the options.
func (w *world) alloc(id, grp string, index uint, opts ...func(*world, *structs.Allocation)) *structs.Allocation {
	a := &structs.Allocation{
		ID: id, Namespace: "default", EvalID: "eval-old", Name: structs.AllocName(w.jobID, grp, index),
		NodeID: "n1", JobID: w.jobID, Job: w.job, JobVersion: w.job.Version, TaskGroup: grp,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
		TaskStates: map[string]*structs.TaskState{"main": {State: structs.TaskStateRunning, StartedAt: w.now.Add(-time.Hour)}},
		CreateTime: w.now.Add(-time.Hour).UnixNano(), ModifyTime: w.now.Add(-time.Hour).UnixNano(),
	}
	for _, o := range opts {
		o(w, a)
	}
	w.allocs = append(w.allocs, a)
	return a
}

// run adds n running allocs web[0..n-1] of group grp with IDs prefix0...
func (w *world) run(prefix, grp string, n int, opts ...func(*world, *structs.Allocation)) {
	for i := range n {
		w.alloc(fmt.Sprintf("%s%d", prefix, i), grp, uint(i), opts...)
	}
}

// Alloc options.

// ownGroup makes the alloc run a job version whose definition of the
// alloc's group is tg (for groups removed from, or changed in, the
// current job).
func ownGroup(v uint64, tg *structs.TaskGroup) func(*world, *structs.Allocation) {
	return func(w *world, a *structs.Allocation) {
		j := *w.job
		j.Version = v
		j.TaskGroups = append(slices.DeleteFunc(slices.Clone(j.TaskGroups), func(g *structs.TaskGroup) bool { return g.Name == tg.Name }), tg)
		a.Job, a.JobVersion = &j, v
	}
}

func ver(v uint64) func(*world, *structs.Allocation) {
	return func(w *world, a *structs.Allocation) { a.Job, a.JobVersion = w.jobAt(v), v }
}

func onNode(n string) func(*world, *structs.Allocation) {
	return func(_ *world, a *structs.Allocation) { a.NodeID = n }
}

func pending(_ *world, a *structs.Allocation) {
	a.ClientStatus = structs.AllocClientStatusPending
	a.TaskStates = nil
}

func complete(w *world, a *structs.Allocation) {
	a.ClientStatus = structs.AllocClientStatusComplete
	a.TaskStates = map[string]*structs.TaskState{"main": {State: structs.TaskStateDead, FinishedAt: w.now.Add(-10 * time.Minute)}}
}

// failedAt marks the alloc failed, its task finished d before now.
func failedAt(d time.Duration) func(*world, *structs.Allocation) {
	return func(w *world, a *structs.Allocation) {
		a.ClientStatus = structs.AllocClientStatusFailed
		a.TaskStates = map[string]*structs.TaskState{"main": {State: structs.TaskStateDead, Failed: true, FinishedAt: w.now.Add(-d)}}
		a.ModifyTime = w.now.Add(-d).UnixNano()
	}
}

func failed(w *world, a *structs.Allocation) { failedAt(time.Hour)(w, a) }

func lostStatus(_ *world, a *structs.Allocation) { a.ClientStatus = structs.AllocClientStatusLost }

func stopped(_ *world, a *structs.Allocation) { a.DesiredStatus = structs.AllocDesiredStatusStop }

func evicted(_ *world, a *structs.Allocation) { a.DesiredStatus = structs.AllocDesiredStatusEvict }

func migrateFlag(_ *world, a *structs.Allocation) {
	t := true
	a.DesiredTransition.Migrate = &t
}

func forceResched(_ *world, a *structs.Allocation) {
	t := true
	a.DesiredTransition.ForceReschedule = &t
}

func reschedFlag(_ *world, a *structs.Allocation) {
	t := true
	a.DesiredTransition.Reschedule = &t
}

func next(id string) func(*world, *structs.Allocation) {
	return func(_ *world, a *structs.Allocation) { a.NextAllocation = id }
}

func followup(id string) func(*world, *structs.Allocation) {
	return func(_ *world, a *structs.Allocation) { a.FollowupEvalID = id }
}

// rescheduled gives the alloc a reschedule tracker with events at the
// given ages (before now) and delays.
func rescheduled(events ...time.Duration) func(*world, *structs.Allocation) {
	return func(w *world, a *structs.Allocation) {
		a.RescheduleTracker = &structs.RescheduleTracker{Events: []*structs.RescheduleEvent{}}
		for i := 0; i+1 < len(events); i += 2 {
			a.RescheduleTracker.Events = append(a.RescheduleTracker.Events, &structs.RescheduleEvent{
				RescheduleTime: w.now.Add(-events[i]).UnixNano(), PrevAllocID: "prev", PrevNodeID: "n0", Delay: events[i+1],
			})
		}
	}
}

// inDeployment attaches the alloc to a deployment with a health (nil:
// undecided) and canary flag.
func inDeployment(id string, healthy *bool, canary bool) func(*world, *structs.Allocation) {
	return func(_ *world, a *structs.Allocation) {
		a.DeploymentID = id
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: healthy, Canary: canary}
	}
}

// unknownSince marks the alloc unknown since d before now (a recorded
// disconnect).
func unknownSince(d time.Duration) func(*world, *structs.Allocation) {
	return func(w *world, a *structs.Allocation) {
		a.ClientStatus = structs.AllocClientStatusUnknown
		a.AllocStates = append(a.AllocStates, &structs.AllocState{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: w.now.Add(-d)})
	}
}

// disconnectedSince records a disconnect d before now but leaves the
// client status as set (the node came back and reported).
func disconnectedSince(d time.Duration) func(*world, *structs.Allocation) {
	return func(w *world, a *structs.Allocation) {
		a.AllocStates = append(a.AllocStates, &structs.AllocState{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: w.now.Add(-d)})
	}
}

// lostSince records that the server marked the alloc lost d before now.
func lostSince(d time.Duration) func(*world, *structs.Allocation) {
	return func(w *world, a *structs.Allocation) {
		a.AllocStates = append(a.AllocStates, &structs.AllocState{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusLost, Time: w.now.Add(-d)})
	}
}

func score(s float64) func(*world, *structs.Allocation) {
	return func(_ *world, a *structs.Allocation) {
		a.Metrics = &structs.AllocMetric{ScoreMetaData: []*structs.NodeScoreMeta{{NodeID: a.NodeID, NormScore: s}}}
	}
}

// kind sets the update kind the update function answers for the alloc.
func kind(k UpdateKind) func(*world, *structs.Allocation) {
	return func(w *world, a *structs.Allocation) { w.kinds[a.ID] = k }
}

// Nodes.

func (w *world) down(ids ...string) {
	for _, id := range ids {
		w.tainted[id] = &structs.Node{ID: id, Status: structs.NodeStatusDown}
	}
}

func (w *world) draining(ids ...string) {
	for _, id := range ids {
		w.tainted[id] = &structs.Node{ID: id, Status: structs.NodeStatusReady, Drain: true, SchedulingEligibility: structs.NodeSchedulingIneligible}
	}
}

func (w *world) disconnected(ids ...string) {
	for _, id := range ids {
		w.tainted[id] = &structs.Node{ID: id, Status: structs.NodeStatusDisconnected}
	}
}

func (w *world) readyAgain(ids ...string) {
	for _, id := range ids {
		w.tainted[id] = &structs.Node{ID: id, Status: structs.NodeStatusReady, SchedulingEligibility: structs.NodeSchedulingEligible}
	}
}

func (w *world) gone(ids ...string) {
	for _, id := range ids {
		w.tainted[id] = nil
	}
}

// deployment sets the job's latest deployment (for the current version
// unless changed by the caller) with one state per group name.
func (w *world) deployment(id, status string, groups ...string) *structs.Deployment {
	d := &structs.Deployment{
		ID: id, Namespace: "default", JobID: w.jobID, JobVersion: w.job.Version, JobCreateIndex: w.job.CreateIndex,
		Status: status, StatusDescription: "test", TaskGroups: map[string]*structs.DeploymentState{},
	}
	for _, g := range groups {
		tg := w.job.LookupTaskGroup(g)
		d.TaskGroups[g] = &structs.DeploymentState{DesiredTotal: tg.Count}
	}
	w.dep = d
	return d
}

// input builds the reconciler's input.
func (w *world) input() Input {
	job := w.job
	if w.purged {
		job = nil
	}
	return Input{
		Job: job, Namespace: "default", JobID: w.jobID, Batch: w.batch, Allocs: w.allocs,
		Deployment: w.dep, TaintedNodes: w.tainted, SupportsDisconnectedClients: w.sdc,
		EvalID: w.evalID, EvalPriority: 50, Now: w.now,
		Update: func(a *structs.Allocation, job *structs.Job, _ *structs.TaskGroup) (UpdateKind, *structs.Allocation) {
			k, ok := w.kinds[a.ID]
			if !ok {
				k = UpdateIgnore
				if a.Job != nil && a.Job.Version != job.Version {
					k = UpdateDestructive
				}
			}
			if k == UpdateInPlace {
				c := a.Copy()
				c.Job, c.JobVersion = job, job.Version
				return k, c
			}
			return k, nil
		},
	}
}

func ptrBool(b bool) *bool { return &b }

var (
	healthy   = ptrBool(true)
	unhealthy = ptrBool(false)
)

// outcome is what a scenario expects, in short text form:
//   - place: "web[3]" plus flags: "/c" canary, "/r" reschedule, "/l"
//     lost, "<a1" previous alloc a1, "/d" downgrade to the non-canary
//     version;
//   - stop: alloc IDs, with ":lost" or ":failed" when a client status is
//     written and "+f" when a follow-up eval is attached;
//   - inplace, destructive: alloc IDs;
//   - deployment: "" (none), "new" (created), or the ID handed back;
//   - depUpdates: "status" per deployment status update, in order;
//   - followups: wait-until offsets from now, in order, per eval;
//   - attr, disconnect, reconnect: alloc IDs of those updates.
//
// All lists are compared after sorting, except depUpdates and followups.
type outcome struct {
	place, stop, inplace, destructive []string
	deployment                        string
	depUpdates                        []string
	followups                         []time.Duration
	attr, disconnect, reconnect       []string
}

// summarize renders a result in outcome form.
func summarize(w *world, res *Result) outcome {
	var o outcome
	for _, p := range res.Place {
		s := strings.TrimPrefix(p.Name, w.jobID+".")
		if p.Canary {
			s += "/c"
		}
		if p.Reschedule {
			s += "/r"
		}
		if p.Lost {
			s += "/l"
		}
		if p.DowngradeNonCanary {
			s += "/d"
		}
		if p.PreviousAlloc != nil {
			s += "<" + p.PreviousAlloc.ID
		}
		o.place = append(o.place, s)
	}
	for _, s := range res.Stop {
		e := s.Alloc.ID
		if s.ClientStatus != "" {
			e += ":" + s.ClientStatus
		}
		if s.FollowupEvalID != "" {
			e += "+f"
		}
		o.stop = append(o.stop, e)
	}
	for _, a := range res.InPlaceUpdate {
		o.inplace = append(o.inplace, a.ID)
	}
	for _, d := range res.DestructiveUpdate {
		o.destructive = append(o.destructive, d.StopAlloc.ID)
	}
	if d := res.Deployment; d != nil {
		o.deployment = "new"
		if w.dep != nil && d.ID == w.dep.ID {
			o.deployment = d.ID
		}
	}
	for _, u := range res.DeploymentUpdates {
		o.depUpdates = append(o.depUpdates, u.Status)
	}
	var evals []*structs.Evaluation
	for _, es := range res.DesiredFollowupEvals {
		evals = append(evals, es...)
	}
	slices.SortFunc(evals, func(a, b *structs.Evaluation) int { return a.WaitUntil.Compare(b.WaitUntil) })
	for _, e := range evals {
		o.followups = append(o.followups, e.WaitUntil.Sub(w.now))
	}
	for id := range res.AttributeUpdates {
		o.attr = append(o.attr, id)
	}
	for id := range res.DisconnectUpdates {
		o.disconnect = append(o.disconnect, id)
	}
	for id := range res.ReconnectUpdates {
		o.reconnect = append(o.reconnect, id)
	}
	for _, l := range [][]string{o.place, o.stop, o.inplace, o.destructive, o.attr, o.disconnect, o.reconnect} {
		slices.Sort(l)
	}
	return o
}

// check compares a result with the expected outcome, field by field.
func check(t *testing.T, w *world, res *Result, want outcome) {
	t.Helper()
	got := summarize(w, res)
	sorted := func(l []string) []string {
		l = slices.Clone(l)
		slices.Sort(l)
		return l
	}
	eq := func(field string, want, got []string) {
		t.Helper()
		if !slices.Equal(sorted(want), got) {
			t.Errorf("%s:\n  want %v\n  got  %v", field, sorted(want), got)
		}
	}
	eq("place", want.place, got.place)
	eq("stop", want.stop, got.stop)
	eq("inplace", want.inplace, got.inplace)
	eq("destructive", want.destructive, got.destructive)
	eq("attribute updates", want.attr, got.attr)
	eq("disconnect updates", want.disconnect, got.disconnect)
	eq("reconnect updates", want.reconnect, got.reconnect)
	if want.deployment != got.deployment {
		t.Errorf("deployment: want %q, got %q", want.deployment, got.deployment)
	}
	if !slices.Equal(want.depUpdates, got.depUpdates) {
		t.Errorf("deployment updates: want %v, got %v", want.depUpdates, got.depUpdates)
	}
	if !slices.Equal(want.followups, got.followups) {
		t.Errorf("follow-up evals (wait after now): want %v, got %v", want.followups, got.followups)
	}
}

// l is shorthand for a list of strings.
func l(s ...string) []string { return s }

// d is shorthand for a list of durations.
func d(ds ...time.Duration) []time.Duration { return ds }
