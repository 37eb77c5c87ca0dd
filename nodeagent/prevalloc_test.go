package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

// TestStickyDiskMovesDataToReplacement: v2 replaces v1 on the same node
// with a sticky ephemeral disk: it starts only once v1's task is dead,
// and finds v1's alloc/data and the task's local/ dir.
func TestStickyDiskMovesDataToReplacement(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))

	job := testJob(structs.JobTypeService, shTask("db", `trap 'sleep 0.3; echo v1-stopped >> "$NOMAD_ALLOC_DIR/data/order"; exit 0' INT
echo v1 > "$NOMAD_ALLOC_DIR/data/file"; echo local-v1 > "$NOMAD_TASK_DIR/l"; echo v1-started >> "$NOMAD_ALLOC_DIR/data/order"
while true; do sleep 0.05; done`))
	job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{Sticky: true, SizeMB: 10}
	v1 := testAlloc(job)
	cp.addAlloc(v1)
	cp.waitReport(t, v1.ID, "v1 running", hasStatus(structs.AllocClientStatusRunning))
	waitFor(t, 5*time.Second, "v1 wrote its data", func() bool {
		_, err := os.Stat(filepath.Join(dir, "alloc", v1.ID, "db", "local", "l"))
		return err == nil
	})

	job2 := job.Copy()
	job2.Version = 1
	job2.TaskGroups[0].Tasks[0] = shTask("db", `echo v2-started >> "$NOMAD_ALLOC_DIR/data/order"; cat "$NOMAD_ALLOC_DIR/data/file" "$NOMAD_TASK_DIR/l" > "$NOMAD_ALLOC_DIR/data/seen"
while true; do sleep 0.05; done`)
	v2 := testAlloc(job2)
	v2.PreviousAllocation = v1.ID
	cp.stopAlloc(v1.ID)
	cp.addAlloc(v2)

	cp.waitReport(t, v2.ID, "v2 running", hasStatus(structs.AllocClientStatusRunning))
	data := filepath.Join(dir, "alloc", v2.ID, "alloc", "data")
	waitFor(t, 5*time.Second, "v2 read the data", func() bool { return countLines(filepath.Join(data, "seen")) == 2 })
	seen, _ := os.ReadFile(filepath.Join(data, "seen"))
	if string(seen) != "v1\nlocal-v1\n" {
		t.Errorf("v2 saw %q", seen)
	}
	order, _ := os.ReadFile(filepath.Join(data, "order"))
	if got := strings.Fields(string(order)); strings.Join(got, " ") != "v1-started v1-stopped v2-started" {
		t.Errorf("order %v: v2 must start after v1 stopped", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "alloc", v1.ID, "alloc", "data", "file")); !os.IsNotExist(err) {
		t.Errorf("data still in v1's dir: %v", err)
	}
	cp.stopAlloc(v2.ID)
	cp.waitReport(t, v2.ID, "v2 stopped", hasStatus(structs.AllocClientStatusComplete))
}

// TestRemotePreviousAllocWaitedFor: the previous alloc runs on another
// node: the replacement waits until the control plane reports it stopped.
// A replacement without a sticky or migrating disk does not wait.
func TestRemotePreviousAllocWaitedFor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	cfg := testConfig(t, dir)
	cfg.DevMode = true // stops the tasks at the end
	startAgent(t, cp, cfg)

	job := testJob(structs.JobTypeService, shTask("db", "while true; do sleep 0.05; done"))
	job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{Migrate: true, SizeMB: 10}
	remote := testAlloc(job)
	remote.NodeID = "other-node"
	remote.ClientStatus = structs.AllocClientStatusRunning
	remote.DesiredStatus = structs.AllocDesiredStatusStop
	cp.mu.Lock()
	cp.allocs[remote.ID] = remote // another node's: not among this node's assignments
	cp.mu.Unlock()
	next := testAlloc(job)
	next.PreviousAllocation = remote.ID

	plainJob := testJob(structs.JobTypeService, shTask("web", "while true; do sleep 0.05; done"))
	plain := testAlloc(plainJob)
	plain.PreviousAllocation = remote.ID
	cp.addAlloc(next)
	cp.addAlloc(plain)

	cp.waitReport(t, plain.ID, "no sticky disk: runs at once", hasStatus(structs.AllocClientStatusRunning))
	time.Sleep(300 * time.Millisecond)
	if r := cp.latest(next.ID); r == nil || r.ClientStatus != structs.AllocClientStatusPending {
		t.Fatalf("replacement did not wait: %+v", r)
	}
	cp.mu.Lock()
	calls := cp.prevCalls
	cp.allocs[remote.ID].ClientStatus = structs.AllocClientStatusComplete
	cp.mu.Unlock()
	if calls == 0 {
		t.Error("the control plane was not asked")
	}
	cp.waitReport(t, next.ID, "runs once the remote previous alloc stopped", hasStatus(structs.AllocClientStatusRunning))
}

// prevAnswerCP answers PreviousAlloc with errs first, one per call, then
// as the fake control plane does.
type prevAnswerCP struct {
	*fakeCP
	amu   sync.Mutex
	errs  []error
	calls int
}

func (c *prevAnswerCP) PreviousAlloc(ctx context.Context, nodeID, allocID string) (*structs.Allocation, error) {
	c.amu.Lock()
	c.calls++
	if len(c.errs) > 0 {
		err := c.errs[0]
		c.errs = c.errs[1:]
		c.amu.Unlock()
		return nil, err
	}
	c.amu.Unlock()
	return c.fakeCP.PreviousAlloc(ctx, nodeID, allocID)
}

func (c *prevAnswerCP) answered() int {
	c.amu.Lock()
	defer c.amu.Unlock()
	return c.calls
}

// remoteReplacement adds a migrating alloc whose previous alloc runs on
// another node, and returns both.
func remoteReplacement(cp *fakeCP) (next, remote *structs.Allocation) {
	job := testJob(structs.JobTypeService, shTask("db", "while true; do sleep 0.05; done"))
	job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{Migrate: true, SizeMB: 10}
	remote = testAlloc(job)
	remote.NodeID = "other-node"
	remote.ClientStatus = structs.AllocClientStatusRunning
	remote.DesiredStatus = structs.AllocDesiredStatusStop
	cp.mu.Lock()
	cp.allocs[remote.ID] = remote
	cp.mu.Unlock()
	next = testAlloc(job)
	next.PreviousAllocation = remote.ID
	cp.addAlloc(next)
	return next, remote
}

// TestRemotePreviousAllocPermanentErrorSkipsWait is issue 14's sixth
// situation: asking the control plane about the previous alloc answers
// 403 or 404. The alloc does not wait (before the fix it stayed pending,
// asking every 2 s for ever): its tasks start at once, each with an event
// saying that the previous alloc's data is not moved, after one question.
func TestRemotePreviousAllocPermanentErrorSkipsWait(t *testing.T) {
	t.Parallel()
	for _, code := range []int{403, 404} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			guardProcesses(t, dir)
			fake := newFakeCP()
			var errs []error
			for range 5 {
				errs = append(errs, fmt.Errorf("GET previous: server answered %d: %w", code, ErrPermanent))
			}
			cp := &prevAnswerCP{fakeCP: fake, errs: errs}
			cfg := testConfig(t, dir)
			cfg.DevMode = true
			startAgent(t, cp, cfg)
			next, remote := remoteReplacement(fake)

			rep := fake.waitReport(t, next.ID, "runs without waiting", hasStatus(structs.AllocClientStatusRunning))
			ev := findEvent(rep.TaskStates["db"], structs.TaskPreviousAllocSkipped)
			if ev == nil || ev.Details["previous_alloc_id"] != remote.ID || !strings.Contains(ev.DisplayMessage, fmt.Sprint(code)) {
				t.Fatalf("task event: %+v", ev)
			}
			if n := cp.answered(); n != 1 {
				t.Fatalf("asked %d times after a permanent error, want 1", n)
			}
		})
	}
}

// TestRemotePreviousAllocTransientErrorsBackOff: transient errors are
// retried, waiting 2 s, then 4 s, then 8 s (on the agent's clock); once
// the control plane answers that the previous alloc stopped, the alloc
// runs, with no skip event.
func TestRemotePreviousAllocTransientErrorsBackOff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	fake := newFakeCP()
	transient := errors.New("GET previous: server answered 503: try later")
	cp := &prevAnswerCP{fakeCP: fake, errs: []error{transient, transient, transient}}
	clk := newFakeClock()
	cfg := testConfig(t, dir)
	cfg.DevMode = true
	cfg.Clock = clk
	startAgent(t, cp, cfg)
	next, remote := remoteReplacement(fake)

	for i, wait := range []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second} {
		waitFor(t, 10*time.Second, fmt.Sprintf("retry %d waiting %s", i+1, wait), func() bool {
			now := clk.Now()
			return cp.answered() == i+1 && clk.hasWaiter(func(at time.Time) bool { return at.Equal(now.Add(wait)) })
		})
		if i == 2 {
			fake.mu.Lock()
			fake.allocs[remote.ID].ClientStatus = structs.AllocClientStatusComplete
			fake.mu.Unlock()
		}
		clk.Advance(wait)
	}
	rep := fake.waitReport(t, next.ID, "runs once the previous alloc stopped", hasStatus(structs.AllocClientStatusRunning))
	if ev := findEvent(rep.TaskStates["db"], structs.TaskPreviousAllocSkipped); ev != nil {
		t.Fatalf("skip event after transient errors: %+v", ev)
	}
	if n := cp.answered(); n != 4 {
		t.Fatalf("asked %d times, want 4 (three errors, then the answer)", n)
	}
}
