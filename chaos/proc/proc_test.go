// Package proc is the process-level leg of the chaos suite's embedded
// home (issue 15): each seed's schedule (chaos.Generate) is played
// against real `drover agent` processes, one server and two or three
// clients running real raw_exec tasks, through the HTTP API with Nomad's
// Go client, with concurrent operations, while the faults kill -9 the
// server, a client, both, SIGSTOP a client past its heartbeat TTL (its
// node is lost and its allocs replaced; it must stop them on its return)
// or kill -9 a task. At rest the suite checks from the API and /proc that
// processes are alive exactly for the allocs that run, that no task was
// started twice, and, from the server's state file once it is stopped,
// the chaos suite's invariants (chaos.Check).
package proc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/chaos"
	"github.com/drover-sched/drover/internal/proctest"
	"github.com/drover-sched/drover/storage/embedded"
)

// The process leg's faults.
const (
	// FaultKillServer: kill -9 of the server, restarted on its data dir
	// and address after a random pause.
	FaultKillServer = "kill-server"
	// FaultKillClient: kill -9 of a client agent (its tasks keep running
	// under their supervisors), restarted on its data dir after a random
	// pause, sometimes past the heartbeat TTL.
	FaultKillClient = "kill-client"
	// FaultKillBoth: kill -9 of the server and a client at once.
	FaultKillBoth = "kill-server-and-client"
	// FaultStopClient: SIGSTOP of a client until the server has marked
	// its node down, then SIGCONT (also what the schedules' node-down
	// steps do).
	FaultStopClient = "stop-client"
	// FaultKillTask: kill -9 of a task process (the alloc fails).
	FaultKillTask = "kill-task"
)

var faults = []string{FaultKillServer, FaultKillClient, FaultKillBoth, FaultStopClient, FaultKillTask}

// The process leg's invariants beyond chaos.Invariants.
const (
	// InvProcesses: at rest, every alloc that runs (desired run, client
	// running) has a live task process under a supervisor on its node,
	// and no supervisor or task process is alive for any other alloc
	// (stopped, lost, replaced, complete, failed, of a purged job), nor
	// without a supervisor.
	InvProcesses = "processes-alive-iff-running"
	// InvTaskRestarted: no alloc's task started twice (the restart
	// policy allows no restart; a client restarted must re-attach to
	// its tasks, not run them again).
	InvTaskRestarted = "task-started-twice"
	// InvRest: the cluster comes to rest within restTimeout once the
	// faults stop (no eval pending, no alloc waiting to start, every
	// node ready, nothing changing).
	InvRest = "rest"
	// InvAgentExit: no agent process exits unless the suite killed it.
	InvAgentExit = "agent-exited"
)

var extraInvariants = []string{InvProcesses, InvTaskRestarted, InvRest, InvAgentExit}

// uncheckedInvariants are chaos's invariants this leg cannot check:
// delay-honoured needs the in-process commit observer, and its schedules
// have no drains or system jobs.
var uncheckedInvariants = []string{chaos.InvEarly, chaos.InvDrain, chaos.InvSystem}

const (
	// heartbeatTTL is the servers' TTL: a node silent for twice this is
	// down.
	heartbeatTTL = time.Second
	// ciSeeds is how many seeds a plain `go test` plays.
	ciSeeds = 3
	// restTimeout bounds the wait for rest; quietFor is how long nothing
	// may change before the cluster counts as at rest.
	restTimeout = 90 * time.Second
	quietFor    = 4 * time.Second
	replay      = "go test ./chaos/proc -run TestChaosProc -v -seed %d -repeat 5"
)

// replayOf is the command replaying seed's schedule, with the
// schedule-shaping flags this run was given.
func replayOf(seed uint64) string { return fmt.Sprintf(replay, seed) + chaos.ReplayFlags() }

// params shape the process leg's schedules: fewer steps than the
// in-process ones (each takes real time), the same tight nodes.
var params = chaos.Params{Nodes: 3, Jobs: 4, Steps: 20, FaultRate: 0.2}

// droverBin is the binary built once for the package; skipReason, when
// set, skips every test.
var (
	droverBin  string
	skipReason string
)

func TestMain(m *testing.M) {
	chaos.ExitOnBadFlags() // before drover is built
	if runtime.GOOS != "linux" {
		skipReason = "the process-level chaos leg reads /proc and signals process groups: Linux only"
		os.Exit(m.Run())
	}
	os.Exit(proctest.MainWithDrover(m, &droverBin))
}

// TestChaosProc plays the fixed CI seeds (or -seeds N from -first-seed,
// or -seed S up to -repeat times) against real processes and fails on
// any broken invariant, naming the seed and its replay command;
// -parallel runs that many schedules at once (each its own cluster).
func TestChaosProc(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	if _, err := lookSleep(); err != nil {
		t.Skipf("the tasks need coreutils' sleep: %v", err)
	}
	seeds := chaos.Seeds(t, ciSeeds)
	shape, err := chaos.ApplyFlags(params)
	if err != nil {
		t.Fatal(err)
	}
	if shape.Features != 0 {
		t.Fatalf("-features %s: the process-level leg plays the first generator's schedules only (canaries, drains, system jobs and disconnects are played in process: go test ./chaos, ./chaos/aws)", flag.Lookup("features").Value)
	}
	sum := &chaos.Summary{Home: "embedded, real processes", Faults: map[string]int{}, Violations: map[string]int{},
		Extra: extraInvariants, Unchecked: uncheckedInvariants}
	var mu sync.Mutex
	start := time.Now()
	t.Run("seeds", func(t *testing.T) {
		for i, seed := range seeds {
			name := fmt.Sprint(seed)
			if chaos.Replaying() {
				name = fmt.Sprintf("%d#%d", seed, i+1)
			}
			failed := false
			t.Run(name, func(t *testing.T) {
				if !chaos.Replaying() {
					t.Parallel()
				}
				st, v, logs := playSeed(t, seed, shape)
				mu.Lock()
				defer mu.Unlock()
				sum.Add(seed, st, v)
				if len(v) == 0 {
					return
				}
				failed = true
				var b strings.Builder
				fmt.Fprintf(&b, "seed %d broke %d invariant(s); replay: %s; logs: %s\n", seed, len(v), replayOf(seed), logs)
				for _, x := range v {
					fmt.Fprintf(&b, "  %s\n", x)
				}
				t.Error(b.String())
			})
			if chaos.Replaying() && failed {
				break
			}
		}
	})
	sum.Elapsed = time.Since(start)
	sort.Slice(sum.Failed, func(i, j int) bool { return sum.Failed[i] < sum.Failed[j] })
	if len(seeds) != ciSeeds || chaos.Replaying() || testing.Verbose() {
		sum.Print(os.Stdout)
	}
}

// player plays one schedule on a cluster.
type player struct {
	t     testing.TB
	cl    *cluster
	seed  uint64
	jobs  []string
	mu    sync.Mutex // guards st and run
	st    chaos.Stats
	run   strings.Builder
	ops   sync.WaitGroup
	slots chan struct{} // operations in flight
	bg    sync.WaitGroup
	start time.Time
}

// runText is the run's timeline so far.
func (p *player) runText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.run.String()
}

func (p *player) logf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(&p.run, "%7.3fs ", time.Since(p.start).Seconds())
	fmt.Fprintf(&p.run, format+"\n", args...)
}

// playSeed plays seed's schedule on a fresh cluster, brings it to rest
// and checks it; it returns the stats, the violations and where the logs
// of a failing run were saved. A harness failure fails t.
func playSeed(t *testing.T, seed uint64, params chaos.Params) (*chaos.Stats, []chaos.Violation, string) {
	sched := chaos.Generate(seed, params, faults)
	cl, err := newCluster(t, sched.Nodes)
	if err != nil {
		t.Fatalf("seed %d: the harness failed to start its cluster: %v; replay: %s", seed, err, replayOf(seed))
	}
	p := &player{t: t, cl: cl, seed: seed, st: chaos.Stats{Faults: map[string]int{}}, slots: make(chan struct{}, 4), start: time.Now()}
	for i := range sched.Jobs {
		p.jobs = append(p.jobs, fmt.Sprintf("job%d", i))
	}
	p.logf("seed %d: %d nodes, %d jobs, %d steps", seed, sched.Nodes, sched.Jobs, len(sched.Steps))
	for i, st := range sched.Steps {
		p.step(i, st)
		p.st.Steps++
	}
	v, err := p.rest()
	if err != nil {
		logs := cl.saveLogs(seed, p.runText())
		t.Fatalf("seed %d: the harness failed at rest: %v; replay: %s; logs: %s", seed, err, replayOf(seed), logs)
	}
	logs := ""
	if len(v) > 0 {
		for _, x := range v {
			p.logf("violation: %s", x)
		}
		logs = cl.saveLogs(seed, p.runText())
	}
	if chaos.Replaying() {
		t.Log("the run:\n" + p.runText())
	}
	return &p.st, v, logs
}

// step plays one step: operations run concurrently (at most four in
// flight), the in-process steps become pauses of random length, faults
// happen between them at once.
func (p *player) step(i int, st chaos.Step) {
	rnd := rand.New(rand.NewPCG(st.Seed, 2))
	switch st.Kind {
	case chaos.StepRegister, chaos.StepScale, chaos.StepStop, chaos.StepPurge:
		p.slots <- struct{}{}
		p.ops.Add(1)
		go func() {
			defer func() { <-p.slots; p.ops.Done() }()
			err := p.operate(st)
			p.mu.Lock()
			p.st.Operations++
			if err != nil {
				p.st.OpErrors++
			}
			p.mu.Unlock()
			p.logf("step %d: %s -> %v", i, st, err)
		}()
	case chaos.StepDeliver:
		time.Sleep(time.Duration(st.N) * 150 * time.Millisecond)
	case chaos.StepAdvance:
		time.Sleep(st.Advance / 100)
	case chaos.StepNodeDown:
		p.fault(i, FaultStopClient, rnd)
	case chaos.StepFault:
		p.fault(i, st.Fault, rnd)
	default: // reports, node returns, redeliveries: the agents do these
		time.Sleep(50 * time.Millisecond)
	}
}

// operate sends one operation through the HTTP API.
func (p *player) operate(st chaos.Step) error {
	c := p.cl.api
	id := p.jobs[st.Job]
	switch st.Kind {
	case chaos.StepRegister:
		_, _, err := c.Jobs().Register(p.job(id, st), nil)
		var e api.UnexpectedResponseError
		if errors.As(err, &e) && e.StatusCode() == 400 {
			// The harness's job is invalid: every schedule would prove nothing.
			p.t.Errorf("seed %d: the API refused the suite's job: %v", p.seed, err)
		}
		return err
	case chaos.StepScale:
		n := st.Count
		_, _, err := c.Jobs().Scale(id, "g", &n, "chaos", false, nil, nil)
		return err
	default:
		_, _, err := c.Jobs().Deregister(id, st.Kind == chaos.StepPurge, nil)
		return err
	}
}

// job is a registration's job: raw_exec tasks that log their start and
// sleep (services for an hour, batch for a second), of the step's size,
// with chaos's policies (no restarts, the shortest reschedule delays the
// API takes; rolling
// updates one or two at a time).
func (p *player) job(id string, st chaos.Step) *api.Job {
	var job *api.Job
	secs := "3600"
	if st.Batch {
		job, secs = api.NewBatchJob(id, id, "global", 50), "1"
	} else {
		job = api.NewServiceJob(id, id, "global", 50)
	}
	job.Datacenters = []string{"dc1"}
	tg := api.NewTaskGroup("g", st.Count)
	task := api.NewTask("t", "raw_exec")
	task.Config = map[string]any{"command": "/bin/sh", "args": []string{"-c",
		fmt.Sprintf(`echo "$NOMAD_ALLOC_ID" >> %s; exec %s %s`, p.cl.runLog, p.cl.sleeper, secs)}}
	task.Env = map[string]string{"VARIANT": fmt.Sprint(st.Variant)}
	task.KillTimeout = new(2 * time.Second)
	task.Require(&api.Resources{CPU: new(st.CPU), MemoryMB: new(st.Memory)})
	tg.AddTask(task)
	task.LogConfig = &api.LogConfig{MaxFiles: new(1), MaxFileSizeMB: new(1)}
	tg.EphemeralDisk = &api.EphemeralDisk{SizeMB: new(10)}
	tg.RestartPolicy = &api.RestartPolicy{Attempts: new(0), Mode: new("fail"), Interval: new(time.Minute), Delay: new(time.Second)}
	if st.Batch {
		tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: new(2), Interval: new(time.Hour), Delay: new(5 * time.Second),
			DelayFunction: new("constant"), Unlimited: new(false)}
	} else {
		tg.ReschedulePolicy = &api.ReschedulePolicy{Delay: new(5 * time.Second), DelayFunction: new("constant"), Unlimited: new(true)}
		tg.Update = &api.UpdateStrategy{MaxParallel: new(1 + st.Variant%2), HealthCheck: new("task_states"),
			MinHealthyTime: new(time.Duration(0)), HealthyDeadline: new(time.Minute), ProgressDeadline: new(time.Duration(0))}
	}
	job.AddTaskGroup(tg)
	return job
}

// fault injects one fault; the harness's own failures (a process that
// cannot be started again) fail the test.
func (p *player) fault(i int, kind string, rnd *rand.Rand) {
	cl := p.cl
	pause := func(max time.Duration) { time.Sleep(time.Duration(rnd.Int64N(int64(max)))) }
	p.logf("step %d: fault %s begins", i, kind)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	var awake []*client
	for _, c := range cl.clients {
		if !c.stopped {
			awake = append(awake, c)
		}
	}
	var c *client
	if len(awake) > 0 {
		c = awake[rnd.IntN(len(awake))]
	}
	switch kind {
	case FaultKillServer:
		cl.server.Kill()
		pause(time.Second)
		p.must(cl.startServer())
		p.countRestart()
	case FaultKillClient, FaultKillBoth:
		if c == nil {
			return
		}
		if kind == FaultKillBoth {
			cl.server.Kill()
		}
		c.p.Kill()
		pause(3 * heartbeatTTL) // sometimes past TTL + grace: the node is lost
		if kind == FaultKillBoth {
			p.must(cl.startServer())
			p.countRestart()
		}
		p.must(cl.startClient(c))
	case FaultStopClient:
		if c == nil {
			return
		}
		_ = c.p.Cmd.Process.Signal(syscall.SIGSTOP)
		c.stopped = true
		p.bg.Add(1)
		go p.continueWhenDown(i, c, rnd.Int64N(int64(time.Second)))
	case FaultKillTask:
		procs, _ := cl.taskProcs()
		var pids []int
		for _, tp := range procs {
			pids = append(pids, tp.tasks...)
		}
		if len(pids) == 0 {
			return
		}
		_ = syscall.Kill(pids[rnd.IntN(len(pids))], syscall.SIGKILL)
	}
	p.mu.Lock()
	p.st.Faults[kind]++
	p.mu.Unlock()
	target := ""
	if c != nil && kind != FaultKillServer && kind != FaultKillTask {
		target = " " + c.name
	}
	p.logf("step %d: fault %s%s", i, kind, target)
}

func (p *player) countRestart() {
	p.mu.Lock()
	p.st.Restarts++
	p.mu.Unlock()
}

func (p *player) must(err error) {
	if err != nil {
		logs := p.cl.saveLogs(p.seed, p.runText())
		p.t.Fatalf("seed %d: the harness failed: %v; replay: %s; logs: %s", p.seed, err, fmt.Sprintf(replay, p.seed), logs)
	}
}

// continueWhenDown waits (bounded) until the server has marked stopped
// client c's node down, then after extra continues it.
func (p *player) continueWhenDown(i int, c *client, extra int64) {
	defer p.bg.Done()
	down := proctest.Poll(30*time.Second, func() bool {
		n, _, err := p.cl.api.Nodes().Info(c.nodeID, nil)
		return err == nil && n.Status == "down"
	})
	time.Sleep(time.Duration(extra))
	p.cl.mu.Lock()
	_ = c.p.Cmd.Process.Signal(syscall.SIGCONT)
	c.stopped = false
	p.cl.mu.Unlock()
	p.logf("step %d: %s continued (node marked down: %t)", i, c.name, down)
}

// rest waits for the operations and faults in progress, brings every
// process back, waits for rest and checks the cluster.
func (p *player) rest() ([]chaos.Violation, error) {
	p.ops.Wait()
	p.bg.Wait()
	cl := p.cl
	var out []chaos.Violation
	add := func(inv, format string, args ...any) {
		out = append(out, chaos.Violation{Invariant: inv, Detail: fmt.Sprintf(format, args...)})
	}
	// Every agent the suite did not kill must still be running.
	cl.mu.Lock()
	if cl.server.Exited() {
		add(InvAgentExit, "the server exited: %s", tail(cl.server.Log.String()))
		if err := cl.startServer(); err != nil {
			cl.mu.Unlock()
			return nil, err
		}
	}
	for _, c := range cl.clients {
		if c.p.Exited() {
			add(InvAgentExit, "client %s exited: %s", c.name, tail(c.p.Log.String()))
			if err := cl.startClient(c); err != nil {
				cl.mu.Unlock()
				return nil, err
			}
		}
	}
	cl.mu.Unlock()
	p.logf("rest: waiting")
	settled, last := p.waitRest()
	if !settled {
		add(InvRest, "not at rest %s after the last fault: %s", restTimeout, last)
	}
	p.logf("rest: %t (%s)", settled, last)
	if snap, _, err := p.snapshot(); err == nil {
		p.logf("state at rest:%s", strings.ReplaceAll(snap, "\n", "\n    "))
	}
	v, err := p.checkProcesses()
	if err != nil {
		return nil, err
	}
	out = append(out, v...)

	// The server's state file, once it is stopped, with chaos's checker.
	cl.mu.Lock()
	cl.server.Kill()
	cl.mu.Unlock()
	st, err := embedded.Open(filepath.Join(cl.dir, "server", "server", "state.db"))
	if err != nil {
		return nil, fmt.Errorf("open the server's state file: %w", err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err = chaos.Check(ctx, st, p.jobs, chaos.NewEnv())
	if err != nil {
		return nil, err
	}
	out = append(out, v...)
	for _, j := range p.jobs {
		as, _ := st.AllocsByJob(ctx, "default", j)
		es, _ := st.EvalsByJob(ctx, "default", j)
		p.st.Allocs += len(as)
		p.st.Evals += len(es)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Invariant < out[j].Invariant })
	if len(out) > 0 {
		chaos.DumpJobs(ctx, st, p.jobs, p.logf)
	}
	return out, nil
}

// waitRest polls the API and /proc until the cluster is quiet (no eval
// pending, no alloc waiting to start, every node ready, and nothing
// changed in allocs, evals, nodes or task processes for quietFor), up to
// restTimeout. It returns whether it settled and the last state's
// summary.
func (p *player) waitRest() (bool, string) {
	var prev string
	var since time.Time
	last := ""
	ok := proctest.Poll(restTimeout, func() bool {
		snap, busy, err := p.snapshot()
		if err != nil {
			last = err.Error()
			prev = ""
			return false
		}
		last = busy
		if snap != prev {
			prev, since = snap, time.Now()
			return false
		}
		return busy == "" && time.Since(since) >= quietFor
	})
	if last == "" {
		last = "quiet"
	}
	return ok, last
}

// snapshot is the cluster's state as the API and /proc show it, and what
// still keeps it busy ("" when nothing).
func (p *player) snapshot() (string, string, error) {
	c := p.cl.api
	var b strings.Builder
	var busy []string
	nodes, _, err := c.Nodes().List(nil)
	if err != nil {
		return "", "", fmt.Errorf("nodes: %w", err)
	}
	for _, n := range nodes {
		fmt.Fprintf(&b, "node %s %s\n", n.Name, n.Status)
		if n.Status != "ready" {
			busy = append(busy, "node "+n.Name+" "+n.Status)
		}
	}
	evals, _, err := c.Evaluations().List(nil)
	if err != nil {
		return "", "", fmt.Errorf("evals: %w", err)
	}
	for _, e := range evals {
		fmt.Fprintf(&b, "eval %s %s\n", e.ID, e.Status)
		if e.Status == "pending" {
			busy = append(busy, fmt.Sprintf("eval %.8s of %s pending (%s)", e.ID, e.JobID, e.TriggeredBy))
		}
	}
	allocs, _, err := c.Allocations().List(nil)
	if err != nil {
		return "", "", fmt.Errorf("allocs: %w", err)
	}
	for _, a := range allocs {
		fmt.Fprintf(&b, "alloc %s %s %s %s\n", a.ID, a.NodeName, a.DesiredStatus, a.ClientStatus)
		if a.DesiredStatus == "run" && a.ClientStatus == "pending" {
			busy = append(busy, fmt.Sprintf("alloc %.8s (%s) pending on %s", a.ID, a.Name, a.NodeName))
		}
	}
	procs, orphans := p.cl.taskProcs()
	for _, tp := range procs {
		fmt.Fprintf(&b, "supervisor %d %s %v\n", tp.supervisor, tp.alloc, tp.tasks)
	}
	fmt.Fprintf(&b, "orphans %v\n", orphans)
	lines := strings.Split(b.String(), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n"), strings.Join(busy, "; "), nil
}

// checkProcesses holds the cluster at rest to processes alive ⇔ allocs
// running, and to one task start per alloc.
func (p *player) checkProcesses() ([]chaos.Violation, error) {
	var out []chaos.Violation
	add := func(inv, format string, args ...any) {
		out = append(out, chaos.Violation{Invariant: inv, Detail: fmt.Sprintf(format, args...)})
	}
	allocs, _, err := p.cl.api.Allocations().List(nil)
	if err != nil {
		return nil, fmt.Errorf("allocs: %w", err)
	}
	byID := map[string]*api.AllocationListStub{}
	for _, a := range allocs {
		byID[a.ID] = a
	}
	procs, orphans := p.cl.taskProcs()
	alive := map[string]bool{}
	for _, tp := range procs {
		a := byID[tp.alloc]
		switch {
		case a == nil:
			add(InvProcesses, "supervisor %d (tasks %v) on %s is alive for alloc %q, which the server does not know", tp.supervisor, tp.tasks, tp.node, tp.alloc)
		case a.DesiredStatus != "run" || a.ClientStatus != "running":
			add(InvProcesses, "supervisor %d (tasks %v) on %s is alive for alloc %.8s (%s of %s), which is %s/%s", tp.supervisor, tp.tasks, tp.node,
				a.ID, a.Name, a.JobID, a.DesiredStatus, a.ClientStatus)
		case a.NodeName != tp.node:
			add(InvProcesses, "alloc %.8s (%s) runs on %s, its supervisor %d on %s", a.ID, a.Name, a.NodeName, tp.supervisor, tp.node)
		case len(tp.tasks) > 0:
			alive[a.ID] = true
		}
	}
	for _, pid := range orphans {
		add(InvProcesses, "task process %d is alive without a supervisor", pid)
	}
	for _, a := range allocs {
		if a.DesiredStatus == "run" && a.ClientStatus == "running" && !alive[a.ID] {
			add(InvProcesses, "alloc %.8s (%s of %s) is running on %s and has no live task process", a.ID, a.Name, a.JobID, a.NodeName)
		}
	}
	b, err := os.ReadFile(p.cl.runLog)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read the task starts: %w", err)
	}
	starts := map[string]int{}
	for _, id := range strings.Fields(string(b)) {
		starts[id]++
	}
	for id, n := range starts {
		if n > 1 {
			name := "?"
			if a := byID[id]; a != nil {
				name = a.Name
			}
			add(InvTaskRestarted, "the task of alloc %.8s (%s) started %d times", id, name, n)
		}
	}
	return out, nil
}

// tail is the end of a process's log.
func tail(s string) string {
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	return s
}
