package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/jobspec"
	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Home is one of drover's homes as the runner drives it.
type Home interface {
	// Store is the home's state store (the checker's reads, and the
	// readers of the harness).
	Store() storage.Store
	// Service is the control plane the API and the node reports call.
	Service() *controlplane.Service
	// Deliver delivers an evaluation once through the home's delivery
	// adapter (embedded: a worker's process/ack/nack; AWS: the evaluate
	// function's SQS handler) and reports whether the delivery is done
	// (acknowledged); false hands it back to be delivered again.
	Deliver(ctx context.Context, ev *structs.Evaluation) bool
	// Faults are the fault kinds the home injects.
	Faults() []string
	// Fault arms one fault of a kind; r draws its details.
	Fault(kind string, r *rand.Rand)
	// Disarm turns every armed fault off.
	Disarm()
	// Crashed reports whether the home's process died (a crash point
	// fired); Restart brings it back as a restarted server would be.
	Crashed() bool
	Restart(ctx context.Context) error
	// Sweep runs the home's safety nets a quiet cluster relies on (on
	// AWS the pending-eval sweeper; nothing in the embedded home, whose
	// restarts restore pending evals).
	Sweep(ctx context.Context)
	// Close releases the home.
	Close()
}

// Env is what the runner hands a home: the clock every part reads, the
// eval queue standing in for the home's transport, and the commit
// observer the checker reads.
type Env struct {
	Clock *Clock
	Queue *Queue
	obs   *observer
	stale atomic.Int32 // node reads still to answer stale (FaultStaleRead)

	// drained are the nodes an operator drained and has not made
	// eligible since (by node ID: whether system jobs were left), which
	// the checker holds to the drain invariant.
	drainMu sync.Mutex
	drained map[string]bool
}

func (e *Env) setDrained(nodeID string, drained, ignoreSystem bool) {
	e.drainMu.Lock()
	defer e.drainMu.Unlock()
	if e.drained == nil {
		e.drained = map[string]bool{}
	}
	if drained {
		e.drained[nodeID] = ignoreSystem
	} else {
		delete(e.drained, nodeID)
	}
}

func (e *Env) drainedNodes() map[string]bool {
	e.drainMu.Lock()
	defer e.drainMu.Unlock()
	out := make(map[string]bool, len(e.drained))
	for k, v := range e.drained {
		out[k] = v
	}
	return out
}

// NewEnv returns an environment whose clock starts now.
func NewEnv() *Env {
	return &Env{Clock: &Clock{t: time.Now().UTC().Truncate(time.Second)}, Queue: newQueue(), obs: &observer{}}
}

func (e *Env) setStale(n int) { e.stale.Store(int32(n)) }

// Observe wraps the evaluator's state so that the checker sees every
// plan committed (when, and with which evals).
func (e *Env) Observe(s scheduler.State) scheduler.State {
	return &observedState{State: s, env: e}
}

// Clock is the virtual clock of a run: it only moves when the schedule
// says so, so delays of minutes take no time.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Queue is the harness's eval queue: at-least-once, one delivery per job
// at a time, evals held until their WaitUntil, deduplicated by eval ID (as
// the embedded broker, and SQS FIFO within its window). Both homes' parts
// enqueue into it; the runner delivers from it.
type Queue struct {
	mu      sync.Mutex
	seq     int
	entries map[string]*qentry
	done    map[string]*structs.Evaluation // acknowledged, for redeliveries
	doneIDs []string
}

type qentry struct {
	ev       *structs.Evaluation
	seq      int
	inFlight bool
	again    bool // enqueued again while in flight
}

func newQueue() *Queue {
	return &Queue{entries: map[string]*qentry{}, done: map[string]*structs.Evaluation{}}
}

// Enqueue implements scheduler.Queue.
func (q *Queue) Enqueue(_ context.Context, evals ...*structs.Evaluation) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range evals {
		if e == nil || e.TerminalStatus() {
			continue
		}
		if cur, ok := q.entries[e.ID]; ok {
			if cur.inFlight {
				cur.again = true
			}
			cur.ev = e.Copy()
			continue
		}
		q.seq++
		q.entries[e.ID] = &qentry{ev: e.Copy(), seq: q.seq}
	}
	return nil
}

// Reset drops everything queued (a restarted process has lost its queue).
func (q *Queue) Reset() {
	q.mu.Lock()
	q.entries = map[string]*qentry{}
	q.mu.Unlock()
}

// take returns up to n deliverable evals of different jobs, marked in
// flight, oldest first.
func (q *Queue) take(n int, now time.Time) []*structs.Evaluation {
	q.mu.Lock()
	defer q.mu.Unlock()
	busy := map[string]bool{}
	var cands []*qentry
	for _, e := range q.entries {
		if e.inFlight {
			busy[e.ev.Namespace+"/"+e.ev.JobID] = true
		}
	}
	for _, e := range q.entries {
		if !e.inFlight && !e.ev.WaitUntil.After(now) {
			cands = append(cands, e)
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].seq < cands[j].seq })
	var out []*structs.Evaluation
	for _, e := range cands {
		k := e.ev.Namespace + "/" + e.ev.JobID
		if busy[k] || len(out) >= n {
			continue
		}
		busy[k] = true
		e.inFlight, e.again = true, false
		out = append(out, e.ev.Copy())
	}
	return out
}

// finish ends a delivery: acknowledged, it leaves the queue (unless it
// was enqueued again meanwhile); handed back, it is deliverable again.
func (q *Queue) finish(ev *structs.Evaluation, ack bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, seen := q.done[ev.ID]; !seen && ack {
		q.doneIDs = append(q.doneIDs, ev.ID)
	}
	if ack {
		q.done[ev.ID] = ev
	}
	e, ok := q.entries[ev.ID]
	if !ok {
		return
	}
	if ack && !e.again {
		delete(q.entries, ev.ID)
		return
	}
	e.inFlight = false
	q.seq++
	e.seq = q.seq
}

// earliest is the earliest WaitUntil of the evals waiting for theirs.
func (q *Queue) earliest(now time.Time) (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var t time.Time
	for _, e := range q.entries {
		if e.ev.WaitUntil.After(now) && (t.IsZero() || e.ev.WaitUntil.Before(t)) {
			t = e.ev.WaitUntil
		}
	}
	return t, !t.IsZero()
}

// pick returns an eval for a redelivery: one already acknowledged, or
// (early) one still waiting for its WaitUntil.
func (q *Queue) pick(r *rand.Rand, early bool, now time.Time) *structs.Evaluation {
	q.mu.Lock()
	defer q.mu.Unlock()
	if early {
		var waiting []*qentry
		for _, e := range q.entries {
			if !e.inFlight && e.ev.WaitUntil.After(now) {
				waiting = append(waiting, e)
			}
		}
		if len(waiting) > 0 {
			sort.Slice(waiting, func(i, j int) bool { return waiting[i].seq < waiting[j].seq })
			return waiting[r.IntN(len(waiting))].ev.Copy()
		}
	}
	if len(q.doneIDs) == 0 {
		return nil
	}
	return q.done[q.doneIDs[r.IntN(len(q.doneIDs))]].Copy()
}

// Len is how many evals the queue holds.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.entries)
}

// observer records what the checker needs of the commits.
type observer struct {
	mu          sync.Mutex
	earlyRuns   []string
	overCommits []string
	placements  map[string]int // alloc ID → times a committed plan placed it
}

type observedState struct {
	scheduler.State
	env *Env

	mu   sync.Mutex
	seen map[string][]*storage.NodeUsage // per node, its last usage records read
}

// FaultStaleRead is a fault of every home: the next few node reads of
// evaluations answer what an earlier read answered (a node list slightly
// older than the latest write, which the store interface allows: the
// commit-time checks must catch what it gets wrong).
const FaultStaleRead = "stale-node-read"

// CandidateNodes answers, while a stale-read fault is armed, each node
// with a usage record it had a few changes ago.
func (s *observedState) CandidateNodes(ctx context.Context, q storage.NodeQuery) ([]*storage.NodeUsage, error) {
	out, err := s.State.CandidateNodes(ctx, q)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string][]*storage.NodeUsage{}
	}
	stale := s.env.stale.Load() > 0
	if stale {
		s.env.stale.Add(-1)
	}
	res := make([]*storage.NodeUsage, len(out))
	for i, u := range out {
		h := s.seen[u.Node.ID]
		if len(h) == 0 || h[len(h)-1].Used != u.Used {
			h = append(h, u)
			if len(h) > 5 {
				h = h[1:]
			}
			s.seen[u.Node.ID] = h
		}
		res[i] = u
		if stale {
			old := *h[0]
			old.Node = u.Node
			res[i] = &old
		}
	}
	return res, nil
}

// Stats count what one run did.
type Stats struct {
	Steps      int
	Operations int // registrations, updates, scales, stops, purges
	OpErrors   int // operations the home refused or failed (faults)
	Deliveries int
	Reports    int
	Faults     map[string]int
	Restarts   int
	Allocs     int // allocations in the store at the end
	Evals      int
	// Work counts the features' work: steps that did something (a
	// promotion, a drain...) and what the state at rest holds of them
	// (canary allocs, reverted jobs...).
	Work map[string]int
}

// simNode is a simulated node agent: it reads its assignments through the
// control plane, "runs" them, and reports their status; a report that
// fails is sent again with the next one, as the node agent does.
type simNode struct {
	id     string
	down   bool
	outbox map[string]*structs.Allocation
}

// Runner plays schedules against a home.
type Runner struct {
	Home   Home
	Env    *Env
	Params Params
	// Logf, when set, receives each step (verbose replays).
	Logf func(format string, args ...any)

	nodes  []*simNode
	jobIDs []string
	stats  Stats
	ctx    context.Context
	// again is an operator's request that failed (not refused), to be
	// sent once more after the step (and the restart, if the server
	// died): what a user does after an error.
	again    *Step
	retrying bool
}

// nodeID names node i of a schedule.
func nodeID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// jobID names job i of a schedule.
func jobID(i int) string { return fmt.Sprintf("job%d", i) }

// Run plays s, brings the cluster to rest and returns the stats and the
// violations the checker finds.
func (r *Runner) Run(ctx context.Context, s *Schedule) (*Stats, []Violation, error) {
	if err := r.setup(ctx, s); err != nil {
		return nil, nil, err
	}
	for i, st := range s.Steps {
		if r.Logf != nil {
			r.Logf("step %d: %s", i, st)
		}
		r.step(st)
		r.stats.Steps++
		if r.Logf != nil && os.Getenv("CHAOS_DUMP_STEPS") != "" {
			r.dump()
		}
		if r.Home.Crashed() {
			if err := r.restart(); err != nil {
				return nil, nil, err
			}
		}
		if again := r.again; again != nil {
			r.again, r.retrying = nil, true
			if r.Logf != nil {
				r.Logf("step %d again: %s", i, *again)
			}
			r.step(*again)
			r.retrying = false
			if r.Home.Crashed() {
				if err := r.restart(); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	if err := r.quiesce(s.PromoteAtRest); err != nil {
		return &r.stats, nil, err
	}
	if r.Logf != nil {
		r.dump()
	}
	v, err := Check(ctx, r.Home.Store(), r.jobIDs, r.Env)
	if err != nil {
		return &r.stats, nil, err
	}
	allocs, evals := 0, 0
	for _, j := range r.jobIDs {
		as, _ := r.Home.Store().AllocsByJob(ctx, "default", j)
		es, _ := r.Home.Store().EvalsByJob(ctx, "default", j)
		allocs, evals = allocs+len(as), evals+len(es)
		for _, a := range as {
			if a.DeploymentStatus.IsCanary() {
				r.stats.Work["canary allocs at rest"]++
			}
			if a.Job != nil && (a.Job.Type == structs.JobTypeSystem || a.Job.Type == structs.JobTypeSysBatch) {
				r.stats.Work[a.Job.Type+" allocs at rest"]++
			}
		}
		ds, _ := r.Home.Store().DeploymentsByJob(ctx, "default", j)
		for _, d := range ds {
			r.stats.Work["deployments at rest, "+d.Status]++
		}
	}
	r.stats.Allocs, r.stats.Evals = allocs, evals
	return &r.stats, v, nil
}

// setup registers the schedule's nodes.
func (r *Runner) setup(ctx context.Context, s *Schedule) error {
	r.ctx = ctx
	r.stats = Stats{Faults: map[string]int{}, Work: map[string]int{}}
	r.nodes = nil
	for i := range s.Nodes {
		n := &simNode{id: nodeID(i), outbox: map[string]*structs.Allocation{}}
		r.nodes = append(r.nodes, n)
		node := &structs.Node{ID: n.id, Name: fmt.Sprintf("node%d", i), Datacenter: "dc1", Status: structs.NodeStatusReady,
			SchedulingEligibility: structs.NodeSchedulingEligible, NodeResources: &structs.NodeResources{
				Cpu: structs.NodeCpuResources{CpuShares: NodeCPU, TotalCpuCores: 2}, Memory: structs.NodeMemoryResources{MemoryMB: NodeMemory},
				Disk: structs.NodeDiskResources{DiskMB: NodeDisk}}, Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}}
		if _, err := r.Home.Service().RegisterNode(ctx, node); err != nil {
			return fmt.Errorf("register node %d: %w", i, err)
		}
	}
	r.jobIDs = nil
	for i := range s.Jobs {
		r.jobIDs = append(r.jobIDs, jobID(i))
	}
	return nil
}

// dump logs the state at rest (replays).
func (r *Runner) dump() {
	st := r.Home.Store()
	for _, n := range r.nodes {
		node, err := st.Node(r.ctx, n.id)
		if err == nil {
			r.Logf("node %s: %s eligible=%s drain=%t", n.id, node.Status, node.SchedulingEligibility, node.Drain)
		}
	}
	DumpJobs(r.ctx, st, r.jobIDs, r.Logf)
}

// DumpJobs logs, through logf, the jobs' state in st: each job, its
// allocs (oldest first), its latest deployment and its evals, with what
// a failing schedule's diagnosis needs.
func DumpJobs(ctx context.Context, st storage.Store, jobIDs []string, logf func(format string, args ...any)) {
	for _, j := range jobIDs {
		job, _ := st.Job(ctx, "default", j)
		if job != nil {
			logf("job %s: %s v%d stop=%t status=%s count=%d", j, job.Type, job.Version, job.Stop, job.Status, job.TaskGroups[0].Count)
		}
		as, _ := st.AllocsByJob(ctx, "default", j)
		sort.Slice(as, func(x, y int) bool { return as[x].CreateIndex < as[y].CreateIndex })
		for _, a := range as {
			logf("  alloc %.8s %s v%d job=%t node=…%s desired=%s client=%s create=%d next=%.8s prev=%.8s eval=%.8s followup=%.8s dep=%.8s healthy=%t canary=%t", a.ID, a.Name, a.JobVersion, a.Job != nil,
				a.NodeID[max(len(a.NodeID)-4, 0):], a.DesiredStatus, a.ClientStatus, a.CreateIndex, a.NextAllocation, a.PreviousAllocation, a.EvalID,
				a.FollowupEvalID, a.DeploymentID, a.DeploymentStatus.IsHealthy(), a.DeploymentStatus.IsCanary())
		}
		ds, _ := st.DeploymentsByJob(ctx, "default", j)
		sort.Slice(ds, func(x, y int) bool { return ds[x].CreateIndex < ds[y].CreateIndex })
		for _, d := range ds {
			logf("  deployment %.8s v%d create=%d %s %q", d.ID, d.JobVersion, d.CreateIndex, d.Status, d.StatusDescription)
			for g, s := range d.TaskGroups {
				logf("    %s: %+v", g, *s)
			}
		}
		es, _ := st.EvalsByJob(ctx, "default", j)
		for _, e := range es {
			logf("  eval %.8s %s %s create=%d wait=%s prev=%.8s blocked=%.8s desc=%q", e.ID, e.TriggeredBy, e.Status, e.CreateIndex,
				e.WaitUntil.Format("15:04:05"), e.PreviousEval, e.BlockedEval, e.StatusDescription)
			if e.PlanAnnotations != nil {
				for g, u := range e.PlanAnnotations.DesiredTGUpdates {
					logf("    %s: %+v", g, *u)
				}
			}
			for g, m := range e.FailedTGAllocs {
				logf("    failed %s: %+v", g, *m)
			}
		}
	}
}

func (r *Runner) restart() error {
	r.stats.Restarts++
	if err := r.Home.Restart(r.ctx); err != nil {
		return fmt.Errorf("restart home: %w", err)
	}
	return nil
}

// step plays one step; the home's answers to operations are counted, not
// judged (the checker judges the state they leave).
func (r *Runner) step(st Step) {
	ctx := r.ctx
	svc := r.Home.Service()
	rnd := rand.New(rand.NewPCG(st.Seed, 1))
	op := func(err error) {
		r.stats.Operations++
		if err != nil {
			r.stats.OpErrors++
			if r.Logf != nil {
				r.Logf("  -> %v", err)
			}
		}
	}
	switch st.Kind {
	case StepRegister:
		job, err := buildJob(jobID(st.Job), st)
		if err != nil {
			panic(fmt.Sprintf("chaos: generated job is invalid: %v", err))
		}
		_, err = svc.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job})
		op(err)
	case StepScale:
		c := int64(st.Count)
		_, err := svc.ScaleJob(ctx, &controlplane.ScaleRequest{Namespace: "default", JobID: jobID(st.Job), Group: "g", Count: &c})
		op(err)
	case StepStop, StepPurge:
		_, err := svc.DeregisterJob(ctx, "default", jobID(st.Job), st.Kind == StepPurge)
		op(err)
	case StepDeliver:
		r.deliver(st.N)
	case StepReport:
		r.report(r.nodes[st.Node], rnd, false)
	case StepAdvance:
		r.Env.Clock.Advance(st.Advance)
		// The timers' duty (embedded every second, the AWS sweeper every
		// minute): deployment deadlines and progress, the drainer.
		_ = svc.CheckDeployments(ctx)
		_ = svc.RunDrainer(ctx)
	case StepDrain:
		n := r.nodes[st.Node]
		_, err := svc.UpdateDrain(ctx, n.id, &controlplane.DrainSpec{Deadline: st.Deadline, IgnoreSystemJobs: st.IgnoreSystem}, false)
		op(err)
		r.sendAgain(st, err)
		// What the API answered aside, the drain is on when the store
		// says so (a crash may have come after its write).
		if node, gerr := r.Home.Store().Node(ctx, n.id); gerr == nil && node.Drain {
			r.Env.setDrained(n.id, true, st.IgnoreSystem)
			r.stats.Work["drain"]++
		}
	case StepEligibility:
		n := r.nodes[st.Node]
		node, err := r.Home.Store().Node(ctx, n.id)
		if err != nil {
			break
		}
		switch {
		case st.Eligible && node.Drain:
			_, err = svc.UpdateDrain(ctx, n.id, nil, true)
		case st.Eligible:
			_, err = svc.UpdateEligibility(ctx, n.id, structs.NodeSchedulingEligible)
		default:
			_, err = svc.UpdateEligibility(ctx, n.id, structs.NodeSchedulingIneligible)
		}
		op(err)
		r.sendAgain(st, err)
		if node, gerr := r.Home.Store().Node(ctx, n.id); gerr == nil && !node.Drain &&
			node.SchedulingEligibility == structs.NodeSchedulingEligible {
			r.Env.setDrained(n.id, false, false)
		}
		if err == nil {
			r.stats.Work[fmt.Sprintf("eligibility %t", st.Eligible)]++
		}
	case StepNodeDown:
		n := r.nodes[st.Node]
		if !n.down {
			n.down = true
			op(svc.NodeMissedHeartbeat(ctx, n.id))
		}
	case StepNodeUp:
		n := r.nodes[st.Node]
		if n.down {
			if _, err := svc.Heartbeat(ctx, n.id); err == nil {
				n.down = false
			}
		}
	case StepPromote, StepFailDeployment:
		// As the CLI does: the job's latest deployment, then the
		// deployment's endpoint (refused when it cannot be done).
		d, err := r.Home.Store().LatestDeployment(ctx, "default", jobID(st.Job))
		if err != nil || !d.Active() || (st.Kind == StepPromote && !d.RequiresPromotion()) {
			break
		}
		if st.Kind == StepPromote {
			_, err = svc.PromoteDeployment(ctx, d.ID, nil)
		} else {
			_, err = svc.FailDeployment(ctx, d.ID)
		}
		op(err)
		if err == nil {
			r.stats.Work[st.Kind.String()]++
		}
	case StepFault:
		r.stats.Faults[st.Fault]++
		if st.Fault == FaultStaleRead {
			r.Env.setStale(2 + rnd.IntN(8))
			break
		}
		r.Home.Fault(st.Fault, rnd)
	case StepRedeliver:
		if ev := r.Env.Queue.pick(rnd, st.Early, r.Env.Clock.Now()); ev != nil {
			if st.Early && ev.WaitUntil.After(r.Env.Clock.Now()) {
				r.stats.Faults["early-delivery"]++
			} else {
				r.stats.Faults["redelivery"]++
			}
			r.stats.Deliveries++
			r.Home.Deliver(ctx, ev)
		}
	}
}

// deliver delivers up to n ready evals of different jobs at once.
func (r *Runner) deliver(n int) int {
	if r.Params.Sequential {
		n = 1
	}
	evs := r.Env.Queue.take(n, r.Env.Clock.Now())
	var wg sync.WaitGroup
	for _, ev := range evs {
		wg.Add(1)
		go func(ev *structs.Evaluation) {
			defer wg.Done()
			ack := r.Home.Deliver(r.ctx, ev)
			r.Env.Queue.finish(ev, ack)
		}(ev)
	}
	wg.Wait()
	r.stats.Deliveries += len(evs)
	return len(evs)
}

// report makes node n report on its allocs; quiet (the cluster coming to
// rest) starts everything pending and finishes batch work, and fails
// nothing.
func (r *Runner) report(n *simNode, rnd *rand.Rand, quiet bool) bool {
	if n.down {
		return false
	}
	ctx := r.ctx
	allocs, _, err := r.Home.Service().Assignments(ctx, n.id)
	if err != nil {
		return false
	}
	sort.Slice(allocs, func(i, j int) bool {
		a, b := allocs[i], allocs[j]
		if a.JobID != b.JobID {
			return a.JobID < b.JobID
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.CreateIndex < b.CreateIndex
	})
	now := r.Env.Clock.Now()
	for _, a := range allocs {
		if a.ClientTerminalStatus() {
			// Nothing new to say about it; an update of it not yet
			// accepted stays in the outbox and is sent again, even
			// though the server holds it (its first sending may have
			// been written and its answer lost), as the node agent's
			// reporter does.
			continue
		}
		status := ""
		batch := a.Job != nil && a.Job.Type == structs.JobTypeBatch
		switch {
		case a.DesiredStatus != structs.AllocDesiredStatusRun:
			status = structs.AllocClientStatusComplete
		case a.ClientStatus == structs.AllocClientStatusPending:
			if quiet || rnd.IntN(10) < 8 {
				status = structs.AllocClientStatusRunning
			}
		case a.ClientStatus == structs.AllocClientStatusRunning && quiet:
			if batch {
				status = structs.AllocClientStatusComplete
			}
			if status == "" && needsHealth(a) {
				n.outbox[a.ID] = clientUpdate(a, a.ClientStatus, now)
				continue
			}
		case a.ClientStatus == structs.AllocClientStatusRunning:
			switch x := rnd.IntN(100); {
			case x < 8:
				status = structs.AllocClientStatusFailed
			case batch && x < 45:
				status = structs.AllocClientStatusComplete
			case needsHealth(a) && x < 80:
				n.outbox[a.ID] = clientUpdate(a, a.ClientStatus, now)
				continue
			}
		}
		if status == "" || status == a.ClientStatus {
			continue
		}
		n.outbox[a.ID] = clientUpdate(a, status, now)
	}
	if len(n.outbox) == 0 {
		return false
	}
	ids := make([]string, 0, len(n.outbox))
	for id := range n.outbox {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	updates := make([]*structs.Allocation, 0, len(ids))
	for _, id := range ids {
		updates = append(updates, n.outbox[id])
	}
	r.stats.Reports++
	if err := r.Home.Service().UpdateAllocs(ctx, n.id, updates); err != nil {
		if r.Logf != nil {
			r.Logf("  report of node %s: %v", n.id, err)
		}
		return true
	}
	n.outbox = map[string]*structs.Allocation{}
	return true
}

// needsHealth reports whether a running alloc of a deployment has not
// had its health reported yet.
func needsHealth(a *structs.Allocation) bool {
	return a.DeploymentID != "" && !a.DeploymentStatus.HasHealth()
}

// clientUpdate is a node's report that alloc a is now status: a running
// alloc of a deployment reports itself healthy (its task runs: the
// task_states health check) after min_healthy_time, and one that failed
// before it was healthy reports itself unhealthy; the health keeps what
// the server set (the canary flag), as the node agent's does.
func clientUpdate(a *structs.Allocation, status string, now time.Time) *structs.Allocation {
	ts := &structs.TaskState{State: structs.TaskStateRunning, StartedAt: now}
	switch status {
	case structs.AllocClientStatusComplete:
		ts = &structs.TaskState{State: structs.TaskStateDead, StartedAt: now, FinishedAt: now}
	case structs.AllocClientStatusFailed:
		ts = &structs.TaskState{State: structs.TaskStateDead, Failed: true, StartedAt: now, FinishedAt: now}
	}
	u := &structs.Allocation{ID: a.ID, NodeID: a.NodeID, ClientStatus: status, ClientDescription: "chaos: " + status,
		TaskStates: map[string]*structs.TaskState{"t": ts}}
	health := func(healthy bool) {
		u.DeploymentID = a.DeploymentID
		u.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: new(healthy), Timestamp: now}
		if cur := a.DeploymentStatus; cur != nil {
			u.DeploymentStatus.Canary, u.DeploymentStatus.ModifyIndex = cur.Canary, cur.ModifyIndex
		}
	}
	switch {
	case status == structs.AllocClientStatusRunning && a.DeploymentID != "":
		health(true)
	case status == structs.AllocClientStatusFailed && a.DeploymentID != "" && !a.DeploymentStatus.HasHealth():
		// A task that died before it was healthy: the alloc is reported
		// unhealthy (a verdict once given is not changed, as Nomad's
		// client does).
		health(false)
	}
	return u
}

// quiesce brings the cluster to rest: faults off, every node back, every
// eval delivered (the clock moved to each delayed one's time), every node
// reporting until nothing changes.
func (r *Runner) quiesce(promote bool) error {
	r.Home.Disarm()
	r.Env.setStale(0)
	if r.Home.Crashed() {
		if err := r.restart(); err != nil {
			return err
		}
	}
	for _, n := range r.nodes {
		if n.down {
			if _, err := r.Home.Service().Heartbeat(r.ctx, n.id); err != nil {
				return fmt.Errorf("bring node %s back: %w", n.id, err)
			}
			n.down = false
		}
	}
	rnd := rand.New(rand.NewPCG(0, 0))
	for round := 0; round < 500; round++ {
		r.Home.Sweep(r.ctx)
		_ = r.Home.Service().CheckDeployments(r.ctx)
		_ = r.Home.Service().RunDrainer(r.ctx)
		progress := false
		for i := 0; i < 100 && r.deliver(1) > 0; i++ {
			progress = true
		}
		for _, n := range r.nodes {
			if r.report(n, rnd, true) {
				progress = true
			}
		}
		if progress {
			continue
		}
		if t, ok := r.Env.Queue.earliest(r.Env.Clock.Now()); ok {
			r.Env.Clock.Advance(t.Sub(r.Env.Clock.Now()) + time.Second)
			continue
		}
		if promote && r.promoteAtRest() {
			continue
		}
		if t, ok := r.drainDeadline(); ok {
			// A drain waits for its deadline to force what is left off.
			r.Env.Clock.Advance(t.Sub(r.Env.Clock.Now()) + time.Second)
			continue
		}
		return nil
	}
	var left []string
	r.Env.Queue.mu.Lock()
	for id, e := range r.Env.Queue.entries {
		status := "?"
		if cur, err := r.Home.Store().Eval(r.ctx, id); err == nil {
			status = cur.Status
		}
		left = append(left, fmt.Sprintf("%.8s (%s of %s, %s in the store, in flight %t, wait-until %s)", id, e.ev.TriggeredBy, e.ev.JobID,
			status, e.inFlight, e.ev.WaitUntil.Format(time.RFC3339)))
	}
	r.Env.Queue.mu.Unlock()
	sort.Strings(left)
	return fmt.Errorf("the cluster did not come to rest in 500 rounds (%d deliveries); queued: %v", r.stats.Deliveries, left)
}

// sendAgain keeps an operator's request that failed (not refused as a
// bad request) to be sent once more.
func (r *Runner) sendAgain(st Step, err error) {
	if err != nil && !r.retrying && !errors.Is(err, controlplane.ErrBadRequest) {
		r.again = &st
	}
}

// drainDeadline is the earliest force deadline still ahead of a draining
// node.
func (r *Runner) drainDeadline() (time.Time, bool) {
	var t time.Time
	now := r.Env.Clock.Now()
	for _, n := range r.nodes {
		node, err := r.Home.Store().Node(r.ctx, n.id)
		if err != nil || !node.Drain || node.DrainStrategy == nil {
			continue
		}
		if d := node.DrainStrategy.ForceDeadline; d.After(now) && (t.IsZero() || d.Before(t)) {
			t = d
		}
	}
	return t, !t.IsZero()
}

// promoteAtRest promotes, as an operator would, each job's latest
// deployment awaiting promotion whose canaries are all healthy (the
// service refuses the others); it reports whether one was promoted.
func (r *Runner) promoteAtRest() bool {
	done := false
	for _, j := range r.jobIDs {
		d, err := r.Home.Store().LatestDeployment(r.ctx, "default", j)
		if err != nil || !d.RequiresPromotion() {
			continue
		}
		if _, err := r.Home.Service().PromoteDeployment(r.ctx, d.ID, nil); err == nil {
			r.stats.Work["promote at rest"]++
			done = true
		}
	}
	return done
}

// buildJob is the job a registration step submits, in Nomad's API form
// and through the same conversion and validation as the HTTP API.
func buildJob(id string, st Step) (*structs.Job, error) {
	var job *api.Job
	count := st.Count
	switch {
	case st.Batch && st.System:
		job, count = api.NewSysbatchJob(id, id, "global", 50), 1
	case st.System:
		job, count = api.NewSystemJob(id, id, "global", 50), 1
	case st.Batch:
		job = api.NewBatchJob(id, id, "global", 50)
	default:
		job = api.NewServiceJob(id, id, "global", 50)
	}
	job.Datacenters = []string{"dc1"}
	tg := api.NewTaskGroup("g", count)
	task := api.NewTask("t", "raw_exec")
	task.Config = map[string]any{"command": "/bin/true"}
	task.Env = map[string]string{"VARIANT": fmt.Sprint(st.Variant)}
	task.Require(&api.Resources{CPU: new(st.CPU), MemoryMB: new(st.Memory)})
	tg.AddTask(task)
	// Failures are restarted by the node in real life; here they fail
	// the alloc at once, and rescheduling has short delays so that a
	// schedule exercises it (the policy bounds are what the checker
	// holds the reschedules to).
	tg.RestartPolicy = &api.RestartPolicy{Attempts: new(0), Mode: new("fail"), Interval: new(time.Minute), Delay: new(time.Second)}
	switch {
	case st.System:
		// System and sysbatch groups take no reschedule block (Nomad's
		// rule: their allocs are replaced on their node), sysbatch no
		// update block.
	case st.Batch:
		tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: new(2), Interval: new(time.Hour), Delay: new(5 * time.Second),
			DelayFunction: new("constant"), Unlimited: new(false)}
	default:
		tg.ReschedulePolicy = &api.ReschedulePolicy{Delay: new(5 * time.Second), DelayFunction: new("exponential"),
			MaxDelay: new(time.Minute), Unlimited: new(true)}
	}
	if st.System && !st.Batch {
		tg.Update = &api.UpdateStrategy{MaxParallel: new(1 + st.Variant%2), Stagger: new(5 * time.Second)}
	}
	if !st.Batch && !st.System {
		// A rolling update one or two at a time, with canaries and
		// auto-revert when the step says (FeatCanaries), no progress
		// deadline (a deployment failed by its deadline holds placements
		// back, which the count check would have to tell from a lost
		// one).
		tg.Update = &api.UpdateStrategy{MaxParallel: new(1 + st.Variant%2), HealthCheck: new("task_states"),
			MinHealthyTime: new(time.Duration(0)), HealthyDeadline: new(5 * time.Minute), ProgressDeadline: new(time.Duration(0)),
			Canary: new(st.Canary), AutoPromote: new(st.AutoPromote), AutoRevert: new(st.AutoRevert)}
	}
	job.AddTaskGroup(tg)
	return jobspec.FromAPI(job)
}

// errCrashed is what the harness's crash points return.
var errCrashed = errors.New("chaos: crashed here")

// IsCrash reports whether err is a harness crash.
func IsCrash(err error) bool {
	return errors.Is(err, errCrashed) || strings.Contains(fmt.Sprint(err), errCrashed.Error())
}
