package nodeagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/drover-sched/drover/drivers/shared/logfiles"
	"github.com/drover-sched/drover/drivers/shared/supervisor"
	"github.com/drover-sched/drover/structs"
)

// The task supervisor and log rotation moved to drivers/shared; these
// tests look at their records under the names they had here.
type procRecord = supervisor.ProcRecord

const (
	supervisorTaskFile = supervisor.TaskFile
	supervisorExitFile = supervisor.ExitFile
)

var (
	processRunning = supervisor.ProcessRunning
	readJSON       = supervisor.ReadJSON
	newFileRotator = logfiles.NewRotator
)

// supervisorEnvVar makes the test binary act as a task supervisor: the
// agent under test re-executes the test binary instead of cmd/drover.
const supervisorEnvVar = "DROVER_NODEAGENT_TEST_SUPERVISOR"

func TestMain(m *testing.M) {
	if os.Getenv(supervisorEnvVar) == "1" {
		os.Exit(SupervisorMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeCP is an in-memory control plane: the agent's dependency, not the
// unit under test.
type fakeCP struct {
	mu          sync.Mutex
	ttl         time.Duration
	nodes       map[string]*structs.Node
	registers   int
	heartbeats  int
	index       uint64
	allocs      map[string]*structs.Allocation
	reports     map[string][]*structs.Allocation // every report, per alloc, oldest first
	updateCalls int
	indexCalls  int
	fetchCalls  int
	failUpdates int // fail this many UpdateAllocs calls
	prevCalls   int
}

func newFakeCP() *fakeCP {
	return &fakeCP{ttl: 2 * time.Second, nodes: map[string]*structs.Node{}, allocs: map[string]*structs.Allocation{}, reports: map[string][]*structs.Allocation{}}
}

func (f *fakeCP) RegisterNode(_ context.Context, n *structs.Node) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registers++
	n = n.Copy()
	n.Status = structs.NodeStatusReady
	f.nodes[n.ID] = n
	return f.ttl, nil
}

func (f *fakeCP) Heartbeat(_ context.Context, nodeID string) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nodes[nodeID] == nil {
		return 0, errors.New("unknown node")
	}
	f.heartbeats++
	return f.ttl, nil
}

func (f *fakeCP) AssignmentIndex(context.Context, string) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.indexCalls++
	return f.index, nil
}

func (f *fakeCP) Assignments(_ context.Context, nodeID string) ([]*structs.Allocation, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetchCalls++
	var out []*structs.Allocation
	for _, a := range f.allocs {
		if a.NodeID != "" && a.NodeID != nodeID {
			continue // another node's
		}
		out = append(out, a.Copy())
	}
	return out, f.index, nil
}

func (f *fakeCP) UpdateAllocs(_ context.Context, nodeID string, updates []*structs.Allocation) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updateCalls++
	if f.failUpdates > 0 {
		f.failUpdates--
		return errors.New("injected UpdateAllocs failure")
	}
	for _, u := range updates {
		f.reports[u.ID] = append(f.reports[u.ID], u.Copy())
		if a := f.allocs[u.ID]; a != nil {
			a.ClientStatus = u.ClientStatus
		}
	}
	return nil
}

func (f *fakeCP) PreviousAlloc(_ context.Context, nodeID, allocID string) (*structs.Allocation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prevCalls++
	a := f.allocs[allocID]
	if a == nil {
		return nil, errors.New("unknown alloc")
	}
	if prev := f.allocs[a.PreviousAllocation]; prev != nil {
		return prev.Copy(), nil
	}
	return nil, nil
}

func (f *fakeCP) counts() (registers, heartbeats, indexCalls, fetchCalls int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.registers, f.heartbeats, f.indexCalls, f.fetchCalls
}

// addAlloc stores a copy of a (with a's AllocModifyIndex set to the new
// index): UpdateAllocs writes the stored alloc's client status under f.mu,
// and a test goes on reading its own a without holding it.
func (f *fakeCP) addAlloc(a *structs.Allocation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.index++
	a.AllocModifyIndex = f.index
	f.allocs[a.ID] = a.Copy()
}

func (f *fakeCP) stopAlloc(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.index++
	a := f.allocs[id].Copy()
	a.DesiredStatus = structs.AllocDesiredStatusStop
	a.AllocModifyIndex = f.index
	f.allocs[id] = a
}

func (f *fakeCP) removeAlloc(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.index++
	delete(f.allocs, id)
}

// latest returns the last reported state of alloc id, or nil.
func (f *fakeCP) latest(id string) *structs.Allocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reports[id]
	if len(r) == 0 {
		return nil
	}
	return r[len(r)-1].Copy()
}

func (f *fakeCP) clearReports() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports = map[string][]*structs.Allocation{}
}

// waitReport waits until the latest report of alloc id satisfies cond.
func (f *fakeCP) waitReport(t *testing.T, id string, what string, cond func(a *structs.Allocation) bool) *structs.Allocation {
	t.Helper()
	var last *structs.Allocation
	waitFor(t, 20*time.Second, what, func() bool {
		last = f.latest(id)
		return last != nil && cond(last)
	})
	return last
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hasStatus(status string) func(a *structs.Allocation) bool {
	return func(a *structs.Allocation) bool { return a.ClientStatus == status }
}

// allRunning is true of a report in which each of tasks runs. An alloc is
// running as soon as one of its tasks is (as in Nomad), its other tasks
// maybe still pending.
func allRunning(tasks ...string) func(a *structs.Allocation) bool {
	return func(a *structs.Allocation) bool {
		for _, name := range tasks {
			if st := a.TaskStates[name]; st == nil || st.State != structs.TaskStateRunning {
				return false
			}
		}
		return a.ClientStatus == structs.AllocClientStatusRunning
	}
}

// testAgent is an agent running in the background.
type testAgent struct {
	*Agent
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned
	err    error         // Run's result, once done is closed
}

// stop cancels the agent's context and waits for Run to return.
func (ta *testAgent) stop(t *testing.T) {
	t.Helper()
	ta.cancel()
	select {
	case <-ta.done:
		if ta.err != nil {
			t.Fatalf("agent Run: %v", ta.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop")
	}
}

func testConfig(t *testing.T, dataDir string) Config {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		DataDir:           dataDir,
		NodeName:          "test-node",
		EnabledDrivers:    []string{DriverRawExec},
		PollInterval:      30 * time.Millisecond,
		Logger:            zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)),
		SupervisorCommand: []string{exe},
		// A race-enabled supervisor would sleep 1s at each exit.
		SupervisorEnv: []string{supervisorEnvVar + "=1", "GORACE=atexit_sleep_ms=0"},
	}
}

// startAgent starts an agent on dataDir; the agent is stopped (without
// stopping tasks unless dev mode) at the end of the test if still running.
func startAgent(t *testing.T, cp ControlPlane, cfg Config) *testAgent {
	t.Helper()
	a, err := New(cp, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ta := &testAgent{Agent: a, cancel: cancel, done: make(chan struct{})}
	go func() {
		ta.err = a.Run(ctx)
		close(ta.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ta.done:
		case <-time.After(30 * time.Second):
		}
	})
	return ta
}

// guardProcesses fails the test if, at its end, any process still refers
// to dir (supervisors by their spec path, tasks by their environment), and
// kills exactly those processes so that nothing outlives the test.
func guardProcesses(t *testing.T, dir string) {
	t.Cleanup(func() {
		pids := procsReferencing(dir)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("processes left behind: %v", pids)
	})
}

// procsReferencing lists live processes (other than this one) whose
// command line or environment mentions marker.
func procsReferencing(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if !processRunning(pid, 0) {
			continue
		}
		for _, f := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), f))
			if err == nil && bytes.Contains(b, []byte(marker)) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

var jobSeq struct {
	sync.Mutex
	n int
}

func testJob(jobType string, tasks ...*structs.Task) *structs.Job {
	jobSeq.Lock()
	jobSeq.n++
	id := fmt.Sprintf("job%d", jobSeq.n)
	jobSeq.Unlock()
	return &structs.Job{
		ID: id, Name: id, Namespace: structs.DefaultNamespace, Type: jobType, Priority: 50,
		TaskGroups: []*structs.TaskGroup{{
			Name: "web", Count: 1, Tasks: tasks,
			RestartPolicy: &structs.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: 100 * time.Millisecond, Mode: structs.RestartPolicyModeFail},
		}},
	}
}

func shTask(name, script string) *structs.Task {
	return &structs.Task{
		Name: name, Driver: DriverRawExec,
		Config:      map[string]any{"command": "/bin/sh", "args": []any{"-c", script}},
		KillTimeout: 2 * time.Second,
		Resources:   &structs.Resources{CPU: 100, MemoryMB: 64},
	}
}

func testAlloc(job *structs.Job) *structs.Allocation {
	tg := job.TaskGroups[0]
	return &structs.Allocation{
		ID: structs.GenerateUUID(), Namespace: job.Namespace, EvalID: structs.GenerateUUID(),
		Name: structs.AllocName(job.ID, tg.Name, 0), JobID: job.ID, Job: job, TaskGroup: tg.Name,
		AllocatedResources: structs.AllocatedResourcesFor(tg),
		DesiredStatus:      structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
	}
}

// taskRecord reads the pid record the supervisor wrote for a task.
func taskRecord(t *testing.T, dataDir, allocID, task string) procRecord {
	t.Helper()
	var rec procRecord
	p := filepath.Join(dataDir, "alloc", allocID, task, supervisorDirName, supervisorTaskFile)
	waitFor(t, 10*time.Second, "task pid record", func() bool { return readJSON(p, &rec) == nil })
	return rec
}

func eventTypes(st *structs.TaskState) []string {
	var out []string
	for _, e := range st.Events {
		out = append(out, e.Type)
	}
	return out
}

func findEvent(st *structs.TaskState, typ string) *structs.TaskEvent {
	for i := len(st.Events) - 1; i >= 0; i-- {
		if st.Events[i].Type == typ {
			return st.Events[i]
		}
	}
	return nil
}

func countEvents(st *structs.TaskState, typ string) int {
	n := 0
	for _, e := range st.Events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// fakeClock is a manually advanced Clock.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: c.now.Add(d), ch: ch})
	return ch
}

// Advance moves the clock and fires the waiters that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

func (c *fakeClock) pendingWaiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// hasWaiter reports whether a timer is set to fire at a time for which
// match is true.
func (c *fakeClock) hasWaiter(match func(at time.Time) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.waiters {
		if match(w.at) {
			return true
		}
	}
	return false
}

// waitTimer waits until a timer is set for exactly at.
func (c *fakeClock) waitTimer(t *testing.T, at time.Time) {
	t.Helper()
	waitFor(t, 5*time.Second, "a timer at "+at.String(), func() bool {
		return c.hasWaiter(func(w time.Time) bool { return w.Equal(at) })
	})
}
