package nodeagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// Client descriptions, as Nomad's.
const (
	descTasksRunning  = "Tasks are running"
	descTasksFailed   = "Failed tasks"
	descTasksComplete = "All tasks have completed"
	descTasksPending  = "No tasks have started"
)

// allocRunner runs one allocation: its alloc hooks, one task runner per
// task, the reactions between tasks (a failed task kills its siblings, a
// dead leader stops the others), and the client status it reports.
type allocRunner struct {
	agent    *Agent
	logger   *zap.Logger
	id       string
	allocDir AllocDir
	hooks    []allocHook

	mu         sync.Mutex
	alloc      *structs.Allocation
	tasks      map[string]*taskRunner
	taskOrder  []string
	failReason string
	failedAt   time.Time
	// failEvent is the event put on each task when the alloc fails as a
	// whole.
	failEvent func(reason string) *structs.TaskEvent
	// failedStates are the task states of an alloc that failed as a
	// whole (its tasks never ran under this agent).
	failedStates map[string]*structs.TaskState
	stopping     bool
	postrunDone  bool
	// prerunDone is set once the prerun hooks have returned.
	prerunDone bool
	deadSeen   map[string]bool
	terminalAt time.Time
	pending    *structs.Allocation
	// health is the deployment health verdict, once reached.
	health *allocHealth
	// checks runs the alloc's service checks; healthWatch decides its
	// deployment health (both set at construction, never changed).
	checks      *checksHook
	healthWatch *healthHook
	// gates hold back lifecycle tasks until their turn; only the run
	// goroutine touches them.
	gates *lifecycleGates
	// forceStop makes a destroy kill poststop tasks too instead of running
	// them (the dev agent's shutdown).
	forceStop bool
	// maxRunExceeded: the alloc ran past its group's max_run_duration
	// and was stopped; it reports complete with that reason.
	maxRunExceeded bool
	// receivedAt is when this node first received the alloc.
	receivedAt time.Time
	// network is the alloc's network namespace (bridge mode), once the
	// network hook made it.
	network *drivers.NetworkIsolation

	// Only the run goroutine touches these.
	restored    *restoredAlloc
	lastSent    []byte
	lastMutable []byte

	updateCh    chan struct{}
	taskCh      chan struct{}
	destroyCh   chan struct{}
	destroyOnce sync.Once
	waitCh      chan struct{}
}

func (a *Agent) baseAllocRunner(alloc *structs.Allocation) *allocRunner {
	ar := &allocRunner{
		agent:     a,
		logger:    a.logger.With(zap.String("alloc_id", alloc.ID)),
		id:        alloc.ID,
		allocDir:  NewAllocDir(a.allocsDir(), alloc.ID),
		alloc:     alloc,
		tasks:     map[string]*taskRunner{},
		deadSeen:  map[string]bool{},
		updateCh:  make(chan struct{}, 1),
		taskCh:    make(chan struct{}, 1),
		destroyCh: make(chan struct{}),
		waitCh:    make(chan struct{}),
		gates:     newLifecycleGates(),
		failEvent: func(reason string) *structs.TaskEvent { return setupFailureEvent(fmt.Errorf("%s", reason)) },
	}
	// The checks hook is always there (idle without checks): an in-place
	// update may add a service check to a group that had none.
	ar.checks = newChecksHook(ar)
	ar.healthWatch = newHealthHook(ar)
	ar.hooks = []allocHook{&allocDirHook{ar: ar}, &prevAllocHook{ar: ar}, newNetworkHook(ar), ar.checks, ar.healthWatch, newMaxRunDurationHook(ar)}
	ar.receivedAt = time.Now()
	return ar
}

// newAllocRunner returns the runner of an alloc the agent has just been
// assigned. lostReason, when set, says the agent once ran this alloc but
// lost its local state: the alloc is then reported failed, never run.
func (a *Agent) newAllocRunner(alloc *structs.Allocation, lostReason string) *allocRunner {
	ar := a.baseAllocRunner(alloc)
	imm := &allocImmutableState{AgentVersion: a.cfg.Version, CreatedAt: time.Now().UTC(), AllocDir: ar.allocDir.Dir}
	if err := a.state.PutAlloc(alloc, imm); err != nil {
		ar.logger.Error("persist new alloc", zap.Error(err))
	}
	if lostReason != "" {
		ar.setFailed(lostReason, restoreFailedEvent)
		return ar
	}
	if tg := ar.taskGroup(); tg != nil {
		for _, t := range tg.Tasks {
			tr := newTaskRunner(ar, t, nil, nil)
			ar.addTask(tr)
			tr.markReceived()
		}
	}
	return ar
}

// restoreAllocRunner rebuilds the runner of an alloc from local state.
func (a *Agent) restoreAllocRunner(ra *restoredAlloc) *allocRunner {
	alloc := ra.Alloc
	if alloc == nil {
		alloc = &structs.Allocation{ID: ra.ID}
	}
	ar := a.baseAllocRunner(alloc)
	ar.restored = ra
	if ra.Immutable != nil && !ra.Immutable.CreatedAt.IsZero() {
		ar.receivedAt = ra.Immutable.CreatedAt
	}
	if m := ra.Mutable; m != nil {
		ar.maxRunExceeded = m.MaxRunDurationExceeded
		saved := *m
		saved.SavedAt = time.Time{}
		ar.lastMutable, _ = json.Marshal(&saved)
		if m.FailReason != "" {
			ar.failReason, ar.failedAt = m.FailReason, m.FailedAt
			ar.failEvent = restoreFailedEvent
		}
		if m.Health != nil && m.Health.DeploymentID == alloc.DeploymentID {
			h := *m.Health
			ar.health = &h
		}
	}
	if ra.Err != nil {
		ar.setFailed("local state unreadable: "+ra.Err.Error(), restoreFailedEvent)
		return ar
	}
	if ar.failReason != "" {
		ar.fillFailedStates()
		return ar
	}
	if tg := ar.taskGroup(); tg != nil {
		for _, t := range tg.Tasks {
			var st *structs.TaskState
			var h *drivers.TaskHandle
			if rt := ra.Tasks[t.Name]; rt != nil {
				st, h = rt.State, rt.Handle
			}
			ar.addTask(newTaskRunner(ar, t, st, h))
		}
	}
	return ar
}

// setNetwork records the alloc's network namespace for its tasks.
func (ar *allocRunner) setNetwork(n *drivers.NetworkIsolation) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.network = n
}

// networkIsolation is the alloc's network namespace, nil in host mode.
func (ar *allocRunner) networkIsolation() *drivers.NetworkIsolation {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.network
}

func (ar *allocRunner) addTask(tr *taskRunner) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.tasks[tr.task.Name] = tr
	ar.taskOrder = append(ar.taskOrder, tr.task.Name)
}

// Alloc returns the alloc as last received (shared; do not modify).
func (ar *allocRunner) Alloc() *structs.Allocation {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.alloc
}

// AllocModifyIndex is the server's modify index of the alloc the runner
// last received.
func (ar *allocRunner) AllocModifyIndex() uint64 {
	return ar.Alloc().AllocModifyIndex
}

func (ar *allocRunner) taskGroup() *structs.TaskGroup {
	alloc := ar.Alloc()
	if alloc.Job == nil {
		ar.setFailed("allocation has no job", nil)
		return nil
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil {
		ar.setFailed(fmt.Sprintf("missing task group %q", alloc.TaskGroup), nil)
	}
	return tg
}

// setFailed marks the whole alloc failed (its tasks will not run).
func (ar *allocRunner) setFailed(reason string, event func(string) *structs.TaskEvent) {
	ar.mu.Lock()
	if ar.failReason == "" {
		ar.failReason = reason
		ar.failedAt = time.Now().UTC()
		if event != nil {
			ar.failEvent = event
		}
	}
	ar.mu.Unlock()
	ar.logger.Error("allocation failed", zap.String("reason", reason))
	ar.fillFailedStates()
}

// fillFailedStates gives every task of a failed alloc a dead, failed
// state with the reason, as far as the alloc's job is known.
func (ar *allocRunner) fillFailedStates() {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.alloc.Job == nil {
		return
	}
	tg := ar.alloc.Job.LookupTaskGroup(ar.alloc.TaskGroup)
	if tg == nil {
		return
	}
	if ar.failedStates == nil {
		ar.failedStates = map[string]*structs.TaskState{}
	}
	for _, t := range tg.Tasks {
		if _, ok := ar.failedStates[t.Name]; ok {
			continue
		}
		if tr := ar.tasks[t.Name]; tr != nil && tr.isDead() {
			continue
		}
		ev := ar.failEvent(ar.failReason)
		ev.Time = ar.failedAt.UnixNano()
		ar.failedStates[t.Name] = &structs.TaskState{
			State: structs.TaskStateDead, Failed: true, FinishedAt: ar.failedAt,
			Events: []*structs.TaskEvent{ev},
		}
	}
}

func (ar *allocRunner) failed() bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.failReason != ""
}

// taskStateChanged is the task runners' notification.
func (ar *allocRunner) taskStateChanged() {
	select {
	case ar.taskCh <- struct{}{}:
	default:
	}
}

// Update hands the runner a newer version of its alloc from the server.
func (ar *allocRunner) Update(alloc *structs.Allocation) {
	ar.mu.Lock()
	ar.pending = alloc
	ar.mu.Unlock()
	select {
	case ar.updateCh <- struct{}{}:
	default:
	}
}

// Destroy stops the alloc's tasks (leader first, then the other main
// tasks, then sidecars; poststop tasks then run), removes its directory
// and forgets its local state. It does not wait: see WaitCh.
func (ar *allocRunner) Destroy() {
	ar.destroyOnce.Do(func() { close(ar.destroyCh) })
}

// destroyForced is Destroy without running poststop tasks: every task is
// killed (the dev agent's shutdown).
func (ar *allocRunner) destroyForced() {
	ar.mu.Lock()
	ar.forceStop = true
	ar.mu.Unlock()
	ar.Destroy()
}

// WaitCh is closed when the runner's goroutine has returned.
func (ar *allocRunner) WaitCh() <-chan struct{} { return ar.waitCh }

func (ar *allocRunner) taskList() []*taskRunner {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	out := make([]*taskRunner, 0, len(ar.taskOrder))
	for _, n := range ar.taskOrder {
		out = append(out, ar.tasks[n])
	}
	return out
}

// run is the alloc's lifecycle. It returns when the alloc is destroyed, or
// when ctx ends (agent shutdown: tasks keep running).
func (ar *allocRunner) run(ctx context.Context) {
	defer close(ar.waitCh)
	if ar.failed() {
		ar.runFailed(ctx)
		return
	}
	alloc := ar.Alloc()
	restoredTerminal := ar.restored != nil && ar.restored.Mutable != nil &&
		(ar.restored.Mutable.ClientStatus == structs.AllocClientStatusComplete ||
			ar.restored.Mutable.ClientStatus == structs.AllocClientStatusFailed)
	if !restoredTerminal && !alloc.ServerTerminalStatus() {
		ar.sync()
		if !ar.runPrerun(ctx) {
			return
		}
	}
	ar.mu.Lock()
	ar.prerunDone = true
	ar.mu.Unlock()
	tasks := ar.taskList()
	select {
	case <-ar.destroyCh:
		ar.stopAll() // destroyed while waiting: start nothing
	default:
	}
	if restoredTerminal || ar.Alloc().ServerTerminalStatus() {
		// Never (re)start anything of a terminal alloc.
		ar.stopAll()
	}
	ar.updateGates()
	for _, tr := range tasks {
		tr.gate = ar.gates.gateFor(tr.task)
		go tr.run(ctx)
	}
	// Tasks restored dead still get their reactions (a leader that died
	// just before the agent stopped still stops the others).
	ar.onTaskChange()
	ar.sync()

	for {
		select {
		case <-ar.taskCh:
			ar.onTaskChange()
			ar.notifyTaskStateHooks()
			ar.sync()
		case <-ar.updateCh:
			ar.applyUpdate()
			ar.sync()
		case <-ar.destroyCh:
			ar.stopAll()
			// Keep reacting while the tasks stop: poststop tasks start
			// once the others are dead.
			done := ar.tasksDone()
			for waiting := true; waiting; {
				select {
				case <-ar.taskCh:
					ar.onTaskChange()
					ar.notifyTaskStateHooks()
					ar.sync()
				case <-done:
					waiting = false
				}
			}
			if ctx.Err() != nil {
				// The agent stopped meanwhile and left tasks running:
				// keep the state, the next agent finishes the job.
				ar.shutdownHooks()
				return
			}
			ar.onTaskChange()
			ar.sync()
			ar.destroy()
			return
		case <-ctx.Done():
			ar.shutdownHooks()
			ar.waitTasks()
			return
		}
	}
}

// runPrerun runs the prerun hooks (which may wait long, for a previous
// alloc) while still taking in updates: a stop from the server or a
// destroy cuts the wait short, and the alloc then goes on to stop its
// never-started tasks. It reports whether to go on; when it returns false
// the run is over (agent shutdown, or the alloc failed and was handled).
func (ar *allocRunner) runPrerun(ctx context.Context) bool {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errCh := make(chan error, 1)
	go func() {
		for _, h := range ar.hooks {
			p, ok := h.(allocPrerunHook)
			if !ok {
				continue
			}
			if err := p.Prerun(pctx); err != nil {
				errCh <- fmt.Errorf("prerun hook %q failed: %w", h.Name(), err)
				return
			}
		}
		errCh <- nil
	}()
	destroyCh := ar.destroyCh
	for {
		select {
		case err := <-errCh:
			ar.mu.Lock()
			ar.prerunDone = true
			ar.mu.Unlock()
			switch {
			case err == nil:
				return true
			case ctx.Err() != nil:
				return false
			case pctx.Err() != nil:
				return true // interrupted by a stop or destroy
			}
			ar.setFailed(err.Error(), nil)
			ar.runFailed(ctx)
			return false
		case <-ar.updateCh:
			ar.applyUpdate()
			if ar.Alloc().ServerTerminalStatus() {
				cancel()
			}
			ar.sync()
		case <-destroyCh:
			destroyCh = nil
			cancel()
		}
	}
}

// prerunFinished reports whether the prerun hooks have returned.
func (ar *allocRunner) prerunFinished() bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.prerunDone
}

// terminalSince returns when the alloc became terminal on this node, and
// whether it is.
func (ar *allocRunner) terminalSince() (time.Time, bool) {
	if !ar.clientTerminal() {
		return time.Time{}, false
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.terminalAt.IsZero() {
		return ar.failedAt, true
	}
	return ar.terminalAt, true
}

// tasksEverStarted reports whether any task of the alloc has started
// (before an agent restart, for a restored alloc).
func (ar *allocRunner) tasksEverStarted() bool {
	for _, tr := range ar.taskList() {
		if !tr.State().StartedAt.IsZero() {
			return true
		}
	}
	return false
}

// clientTerminal reports whether the alloc is over on this node: failed
// as a whole, or every task dead.
func (ar *allocRunner) clientTerminal() bool {
	if ar.failed() {
		return true
	}
	states := map[string]*structs.TaskState{}
	for _, tr := range ar.taskList() {
		states[tr.task.Name] = tr.State()
	}
	status, _ := clientStatus(states)
	return status == structs.AllocClientStatusComplete || status == structs.AllocClientStatusFailed
}

// tasksDone returns a channel closed once every task runner goroutine has
// returned.
func (ar *allocRunner) tasksDone() <-chan struct{} {
	ch := make(chan struct{})
	tasks := ar.taskList()
	go func() {
		for _, tr := range tasks {
			<-tr.WaitCh()
		}
		close(ch)
	}()
	return ch
}

// notifyTaskStateHooks tells the hooks that watch task states.
func (ar *allocRunner) notifyTaskStateHooks() {
	for _, h := range ar.hooks {
		if p, ok := h.(allocTaskStateHook); ok {
			p.TaskStatesChanged()
		}
	}
}

// shutdownHooks runs the shutdown hooks: the agent is stopping and leaves
// the alloc running.
func (ar *allocRunner) shutdownHooks() {
	for _, h := range ar.hooks {
		if p, ok := h.(allocShutdownHook); ok {
			p.Shutdown()
		}
	}
}

// healthKick wakes the health watcher: a check result changed.
func (ar *allocRunner) healthKick() {
	if ar.healthWatch != nil {
		ar.healthWatch.TaskStatesChanged()
	}
}

// setHealth records the health verdict for deploymentID, unless the alloc
// has meanwhile moved to another deployment, and has it reported.
func (ar *allocRunner) setHealth(deploymentID string, healthy bool) {
	ar.mu.Lock()
	if ar.alloc.DeploymentID != deploymentID || ar.health != nil {
		ar.mu.Unlock()
		return
	}
	ar.health = &allocHealth{DeploymentID: deploymentID, Healthy: healthy, At: ar.agent.clock.Now().UTC()}
	ar.mu.Unlock()
	ar.taskStateChanged()
}

// clearHealthUnless forgets a health verdict that belongs to another
// deployment than deploymentID.
func (ar *allocRunner) clearHealthUnless(deploymentID string) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.health != nil && ar.health.DeploymentID != deploymentID {
		ar.health = nil
	}
}

// healthDecided reports whether health in deploymentID is known.
func (ar *allocRunner) healthDecided(deploymentID string) bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.health != nil && ar.health.DeploymentID == deploymentID
}

// runFailed is the lifecycle of an alloc that failed as a whole: make
// sure nothing of it runs, report it, wait to be destroyed.
func (ar *allocRunner) runFailed(ctx context.Context) {
	ar.mu.Lock()
	ar.prerunDone = true
	ar.mu.Unlock()
	if n := ar.agent.cleanupAlloc(ar.allocDir, ar.id); n > 0 {
		ar.logger.Warn("killed processes left by an alloc whose state was lost", zap.Int("processes", n))
	}
	ar.sync()
	for {
		select {
		case <-ar.updateCh:
			ar.applyUpdate()
			ar.fillFailedStates()
			ar.sync()
		case <-ar.taskCh:
		case <-ar.destroyCh:
			ar.destroy()
			return
		case <-ctx.Done():
			return
		}
	}
}

// applyUpdate takes in the latest alloc from the server.
func (ar *allocRunner) applyUpdate() {
	ar.mu.Lock()
	upd := ar.pending
	ar.pending = nil
	if upd == nil {
		ar.mu.Unlock()
		return
	}
	if upd.Job == nil {
		upd.Job = ar.alloc.Job
	}
	ar.alloc = upd
	ar.mu.Unlock()
	if err := ar.agent.state.PutAlloc(upd, nil); err != nil {
		ar.logger.Error("persist alloc update", zap.Error(err))
	}
	for _, h := range ar.hooks {
		if p, ok := h.(allocUpdateHook); ok {
			if err := p.Update(upd); err != nil {
				ar.logger.Warn("update hook failed", zap.String("hook", h.Name()), zap.Error(err))
			}
		}
	}
	if upd.ServerTerminalStatus() {
		ar.logger.Info("allocation stopped by the server", zap.String("desired_status", upd.DesiredStatus))
		ar.stopAll()
		return
	}
	if upd.Job != nil && upd.Job.LookupTaskGroup(upd.TaskGroup) != nil {
		for _, tr := range ar.taskList() {
			tr.Update(upd)
		}
	}
}

// onTaskChange reacts to tasks that died: a failed task kills its
// siblings; a dead leader stops the others; once the main tasks are dead,
// the sidecars are stopped. Poststop tasks are never killed by these
// reactions: they run once the others are dead. Then the lifecycle gates
// open as far as the task states allow.
func (ar *allocRunner) onTaskChange() {
	tasks := ar.taskList()
	allDead := true
	mainsDead, hasSidecar := true, false
	for _, tr := range tasks {
		st := tr.State()
		if isSidecarTask(tr.task) {
			hasSidecar = true
		}
		if st.State != structs.TaskStateDead {
			allDead = false
			if !isSidecarTask(tr.task) && !isPoststopTask(tr.task) {
				mainsDead = false
			}
			continue
		}
		ar.mu.Lock()
		seen := ar.deadSeen[tr.task.Name]
		ar.deadSeen[tr.task.Name] = true
		stopping := ar.stopping
		ar.mu.Unlock()
		if seen || stopping {
			continue
		}
		switch {
		case st.Failed:
			for _, o := range tasks {
				if o != tr && !o.isDead() && !isPoststopTask(o.task) {
					ar.logger.Info("task failed, killing its siblings", zap.String("failed_task", tr.task.Name), zap.String("task", o.task.Name))
					o.Kill(siblingFailedEvent(tr.task.Name))
				}
			}
		case tr.task.Leader:
			for _, o := range tasks {
				if o != tr && !o.isDead() && !isPoststopTask(o.task) {
					ar.logger.Info("leader task dead, stopping the others", zap.String("leader", tr.task.Name), zap.String("task", o.task.Name))
					o.Kill(newTaskEvent(structs.TaskLeaderDead))
				}
			}
		}
	}
	if mainsDead && hasSidecar && !allDead {
		for _, o := range tasks {
			if isSidecarTask(o.task) && !o.isDead() && !o.killRequested() {
				ar.logger.Info("main tasks dead, stopping sidecar", zap.String("task", o.task.Name))
				o.Kill(mainDeadEvent())
			}
		}
	}
	ar.updateGates()
	if allDead && len(tasks) > 0 {
		ar.mu.Lock()
		run := !ar.postrunDone
		ar.postrunDone = true
		ar.mu.Unlock()
		if run {
			for _, h := range ar.hooks {
				if p, ok := h.(allocPostrunHook); ok {
					if err := p.Postrun(); err != nil {
						ar.logger.Warn("postrun hook failed", zap.String("hook", h.Name()), zap.Error(err))
					}
				}
			}
		}
	}
}

// updateGates opens the lifecycle gates the task states allow.
func (ar *allocRunner) updateGates() {
	if opened := ar.gates.update(ar.taskList()); len(opened) > 0 {
		ar.logger.Debug("lifecycle gates opened", zap.Strings("gates", opened))
	}
}

// stopAll kills the tasks in order: the leader; once it is dead the other
// main and ephemeral lifecycle tasks; once they are dead the sidecars.
// Poststop tasks are left to run once the others are dead, unless the
// stop is forced. It does not wait.
func (ar *allocRunner) stopAll() { ar.stopAllWith(nil) }

// stopAllWith is stopAll with event (when set) making the event each task
// records first, naming why it is killed.
func (ar *allocRunner) stopAllWith(event func() *structs.TaskEvent) {
	ar.mu.Lock()
	if ar.stopping {
		ar.mu.Unlock()
		return
	}
	ar.stopping = true
	force := ar.forceStop
	ar.mu.Unlock()
	var leader *taskRunner
	var others, sidecars, poststop []*taskRunner
	for _, tr := range ar.taskList() {
		switch {
		case tr.task.Leader && leader == nil:
			leader = tr
		case isPoststopTask(tr.task):
			poststop = append(poststop, tr)
		case isSidecarTask(tr.task):
			sidecars = append(sidecars, tr)
		default:
			others = append(others, tr)
		}
	}
	kill := func(trs []*taskRunner) {
		for _, tr := range trs {
			if event != nil {
				tr.Kill(event())
			} else {
				tr.Kill(nil)
			}
		}
		for _, tr := range trs {
			<-tr.WaitCh()
		}
	}
	go func() {
		if leader != nil {
			kill([]*taskRunner{leader})
		}
		kill(others)
		kill(sidecars)
		if force {
			kill(poststop)
		}
	}()
}

// waitTasks waits for every task runner goroutine to return.
func (ar *allocRunner) waitTasks() {
	for _, tr := range ar.taskList() {
		<-tr.WaitCh()
	}
}

// destroy forgets the alloc's local state, then runs the destroy hooks.
// State goes first: an agent stopped in between finds a directory without
// state, which it never runs (see Agent.restore), rather than state
// without a directory, which it would run again.
func (ar *allocRunner) destroy() {
	if err := ar.agent.state.DeleteAlloc(ar.id); err != nil {
		ar.logger.Error("delete alloc state", zap.Error(err))
	}
	for _, h := range ar.hooks {
		if p, ok := h.(allocDestroyHook); ok {
			if err := p.Destroy(); err != nil {
				ar.logger.Warn("destroy hook failed", zap.String("hook", h.Name()), zap.Error(err))
			}
		}
	}
	ar.logger.Info("allocation destroyed")
}

// sync persists the alloc's client-side state and, when it changed,
// queues a report to the control plane.
func (ar *allocRunner) sync() {
	snap, mutable := ar.snapshot()
	if mb, err := json.Marshal(&mutable); err == nil && !bytes.Equal(mb, ar.lastMutable) {
		if err := ar.agent.state.PutAllocMutable(ar.id, &mutable); err != nil {
			ar.logger.Error("persist alloc status", zap.Error(err))
		} else {
			ar.lastMutable = mb
		}
	}
	b, err := json.Marshal(snap)
	if err != nil || bytes.Equal(b, ar.lastSent) {
		return
	}
	ar.lastSent = b
	ar.logger.Debug("alloc state changed", zap.String("client_status", snap.ClientStatus))
	ar.agent.reporter.enqueue(snap)
}

// snapshot builds the report of the alloc's client-side state.
func (ar *allocRunner) snapshot() (*structs.Allocation, allocMutableState) {
	states := map[string]*structs.TaskState{}
	for _, tr := range ar.taskList() {
		states[tr.task.Name] = tr.State()
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	for name, st := range ar.failedStates {
		if _, ok := states[name]; !ok || states[name].State != structs.TaskStateDead {
			states[name] = copyTaskState(st)
		}
	}
	status, desc := clientStatus(states)
	if ar.maxRunExceeded && status == structs.AllocClientStatusComplete {
		desc = AllocTimeoutReasonMaxRunDuration
	}
	if ar.failReason != "" {
		status, desc = structs.AllocClientStatusFailed, ar.failReason
	}
	terminal := status == structs.AllocClientStatusComplete || status == structs.AllocClientStatusFailed
	if terminal {
		if ar.terminalAt.IsZero() {
			ar.terminalAt = time.Now().UTC()
		}
		for _, st := range states {
			if st.FinishedAt.IsZero() {
				st.FinishedAt = ar.terminalAt
			}
		}
	}
	var ds *structs.AllocDeploymentStatus
	health := ar.health
	if health != nil && health.DeploymentID != ar.alloc.DeploymentID {
		health = nil
	}
	switch {
	case status == structs.AllocClientStatusFailed && ar.alloc.DeploymentID != "" && health == nil:
		// A failed alloc the health watcher has not judged is unhealthy
		// in its deployment. A verdict already given stands, as in
		// Nomad: the deployment has counted it, and the server
		// reschedules an alloc that failed after it was healthy, while
		// one reported unhealthy in a running deployment is left to the
		// deployment's health logic, which counted it healthy already
		// and would leave it failed for good (found by the
		// process-level chaos suite, seed 12).
		ds = deploymentStatus(ar.alloc, false, ar.terminalAt)
	case health != nil:
		ds = deploymentStatus(ar.alloc, health.Healthy, health.At)
	}
	// The health is for the deployment the alloc is in now; the report
	// says which, so that a report sent late (after the server moved the
	// alloc to another deployment) is not counted there.
	snap := &structs.Allocation{
		ID:                ar.id,
		NodeID:            ar.agent.NodeID(),
		ClientStatus:      status,
		ClientDescription: desc,
		TaskStates:        states,
		DeploymentStatus:  ds,
	}
	if ds != nil {
		snap.DeploymentID = ar.alloc.DeploymentID
	}
	mutable := allocMutableState{
		ClientStatus:           status,
		ClientDescription:      desc,
		DeploymentStatus:       ds,
		FailReason:             ar.failReason,
		FailedAt:               ar.failedAt,
		Health:                 health,
		MaxRunDurationExceeded: ar.maxRunExceeded,
	}
	return snap, mutable
}

// deploymentStatus is the health report of alloc: the verdict, keeping
// what the server set (canary flag, index).
func deploymentStatus(alloc *structs.Allocation, healthy bool, at time.Time) *structs.AllocDeploymentStatus {
	ds := &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: at}
	if cur := alloc.DeploymentStatus; cur != nil {
		ds.Canary = cur.Canary
		ds.ModifyIndex = cur.ModifyIndex
	}
	return ds
}

// clientStatus derives an alloc's client status from its task states: any
// failed → failed; else any running → running; else any pending →
// pending; else all dead → complete.
func clientStatus(states map[string]*structs.TaskState) (string, string) {
	var pending, running, dead, failed bool
	for _, st := range states {
		switch st.State {
		case structs.TaskStateRunning:
			running = true
		case structs.TaskStatePending:
			pending = true
		case structs.TaskStateDead:
			if st.Failed {
				failed = true
			} else {
				dead = true
			}
		}
	}
	switch {
	case failed:
		return structs.AllocClientStatusFailed, descTasksFailed
	case running:
		return structs.AllocClientStatusRunning, descTasksRunning
	case pending:
		return structs.AllocClientStatusPending, descTasksPending
	case dead:
		return structs.AllocClientStatusComplete, descTasksComplete
	}
	return structs.AllocClientStatusPending, descTasksPending
}
