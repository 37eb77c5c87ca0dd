package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/drover-sched/drover/structs"
)

// Kill defaults.
const (
	// DefaultKillTimeout is used when a task sets no kill_timeout (Nomad's
	// default).
	DefaultKillTimeout = 5 * time.Second
	// forceKillWait bounds how long a SIGKILLed task may take to be
	// reported gone before its supervisor is killed too.
	forceKillWait = 10 * time.Second
)

// taskRunner runs one task of an allocation: its hooks, its launches
// through a supervisor, its restarts, and its kill. One goroutine (run)
// owns the task's lifecycle and is the only writer of its state.
type taskRunner struct {
	agent    *Agent
	logger   *zap.Logger
	alloc    *structs.Allocation
	task     *structs.Task
	allocDir AllocDir
	taskDir  TaskDir
	restarts *restartTracker
	hooks    []taskHook
	// notify tells the alloc runner that the task's state changed.
	notify func()

	mu     sync.Mutex
	state  *structs.TaskState
	handle *taskHandleState

	// Set by prestart hooks, used by start.
	env        *taskEnv
	proc       *processSpec
	drv        driver
	prestarted bool

	// restoredHandle is the supervisor handle persisted by an earlier
	// agent, to re-attach to.
	restoredHandle *taskHandleState
	// gate, when set, is closed when the task's lifecycle turn has come:
	// a task that never started waits for it.
	gate <-chan struct{}

	killMu    sync.Mutex
	killCh    chan struct{}
	killEvent *structs.TaskEvent

	waitCh chan struct{}
}

func newTaskRunner(ar *allocRunner, task *structs.Task, st *structs.TaskState, h *taskHandleState) *taskRunner {
	alloc := ar.Alloc()
	policy := task.RestartPolicy
	var jobType string
	if alloc.Job != nil {
		jobType = alloc.Job.Type
		if policy == nil {
			if tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup); tg != nil {
				policy = tg.RestartPolicy
			}
		}
	}
	if st == nil {
		st = &structs.TaskState{State: structs.TaskStatePending}
	}
	tr := &taskRunner{
		agent:          ar.agent,
		logger:         ar.logger.With(zap.String("task", task.Name)),
		alloc:          alloc,
		task:           task,
		allocDir:       ar.allocDir,
		taskDir:        ar.allocDir.TaskDir(task.Name),
		restarts:       newTaskRestartTracker(task, policy, jobType, ar.agent.clock),
		notify:         ar.taskStateChanged,
		state:          st,
		restoredHandle: h,
		handle:         h,
		killCh:         make(chan struct{}),
		waitCh:         make(chan struct{}),
	}
	tr.hooks = []taskHook{&taskDirHook{}, &taskEnvHook{}}
	return tr
}

// State returns a copy of the task's state.
func (tr *taskRunner) State() *structs.TaskState {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return copyTaskState(tr.state)
}

func (tr *taskRunner) isDead() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.state.State == structs.TaskStateDead
}

// Kill asks the task to stop; pre (may be nil) is the event recorded
// first, naming why (sibling failed, leader dead). It does not wait: see
// WaitCh.
func (tr *taskRunner) Kill(pre *structs.TaskEvent) {
	tr.killMu.Lock()
	defer tr.killMu.Unlock()
	select {
	case <-tr.killCh:
		return
	default:
	}
	tr.killEvent = pre
	close(tr.killCh)
}

func (tr *taskRunner) killRequested() bool {
	select {
	case <-tr.killCh:
		return true
	default:
		return false
	}
}

func (tr *taskRunner) takeKillEvent() *structs.TaskEvent {
	tr.killMu.Lock()
	defer tr.killMu.Unlock()
	ev := tr.killEvent
	tr.killEvent = nil
	return ev
}

// WaitCh is closed when the task runner's goroutine has returned: the
// task is dead, or the agent is shutting down and left it running.
func (tr *taskRunner) WaitCh() <-chan struct{} { return tr.waitCh }

// update records events and (unless state is empty) a new state, persists
// the result and tells the alloc runner.
func (tr *taskRunner) update(state string, events ...*structs.TaskEvent) {
	tr.mu.Lock()
	now := tr.agent.clock.Now()
	for _, ev := range events {
		if ev == nil {
			continue
		}
		if ev.Time == 0 {
			ev.Time = now.UnixNano()
		}
		if ev.FailsTask {
			tr.state.Failed = true
		}
		if ev.Type == structs.TaskRestarting {
			tr.state.Restarts++
			tr.state.LastRestart = time.Unix(0, ev.Time).UTC()
		}
		appendTaskEvent(tr.state, ev)
	}
	if state != "" && state != tr.state.State {
		switch state {
		case structs.TaskStateRunning:
			tr.state.StartedAt = now.UTC()
		case structs.TaskStateDead:
			if tr.state.FinishedAt.IsZero() {
				tr.state.FinishedAt = now.UTC()
			}
		}
		tr.state.State = state
	}
	st := copyTaskState(tr.state)
	var h *taskHandleState
	if tr.handle != nil {
		hc := *tr.handle
		h = &hc
	}
	tr.mu.Unlock()
	tr.persist(st, h)
	tr.notify()
}

// setHandle records (or, with nil, clears) the task's supervisor handle.
func (tr *taskRunner) setHandle(h *taskHandleState) {
	tr.mu.Lock()
	tr.handle = h
	st := copyTaskState(tr.state)
	tr.mu.Unlock()
	tr.persist(st, h)
}

func (tr *taskRunner) persist(st *structs.TaskState, h *taskHandleState) {
	if err := tr.agent.state.PutTask(tr.alloc.ID, tr.task.Name, st, h); err != nil {
		tr.logger.Error("persist task state", zap.Error(err))
	}
}

// markReceived records that the agent received the task.
func (tr *taskRunner) markReceived() {
	tr.update(structs.TaskStatePending, newTaskEvent(structs.TaskReceived))
}

// watchOutcome is how watching a running task ended.
type watchOutcome int

const (
	outcomeExited   watchOutcome = iota // the task ended by itself
	outcomeKilled                       // the task was killed on request
	outcomeDetached                     // the agent is shutting down; the task runs on
)

// run is the task's lifecycle. It returns when the task is dead, or when
// ctx ends (agent shutdown without stopping tasks).
func (tr *taskRunner) run(ctx context.Context) {
	defer close(tr.waitCh)
	if tr.isDead() {
		return
	}

	var h *supervisorHandle
	var ended *exitRecord // an exit that happened while no agent watched
	if hs := tr.restoredHandle; hs != nil {
		var launched bool
		h, ended, launched = reattachSupervisor(tr.taskDir.StateDir, hs)
		switch {
		case h != nil:
			tr.logger.Info("re-attached to running task", zap.Int("pid", h.task.Pid), zap.Int("supervisor_pid", h.sup.Pid))
			if tr.State().State != structs.TaskStateRunning {
				tr.update(structs.TaskStateRunning, newTaskEvent(structs.TaskStarted))
			}
		case ended != nil:
			tr.logger.Info("task ended while the agent was down", zap.Int("exit_code", ended.ExitCode), zap.Int("signal", ended.Signal))
		case !launched:
			tr.setHandle(nil)
		}
	}

	if h == nil && ended == nil && tr.gate != nil && tr.State().StartedAt.IsZero() {
		select {
		case <-tr.gate:
		case <-tr.killCh:
			tr.finishKilled(nil)
			return
		case <-ctx.Done():
			return
		}
	}
	for {
		if h == nil && ended == nil {
			if tr.killRequested() {
				tr.finishKilled(nil)
				return
			}
			if !tr.prestarted {
				if err := tr.prestart(); err != nil {
					tr.logger.Error("task setup failed", zap.Error(err))
					tr.update(structs.TaskStateDead, setupFailureEvent(err))
					return
				}
				tr.prestarted = true
			}
			var err error
			h, err = tr.start()
			if err != nil {
				tr.logger.Error("task failed to start", zap.Error(err))
				var se *taskStartError
				unrecoverable := errors.As(err, &se) && se.unrecoverable
				tr.update("", driverFailureEvent(err))
				dec, delay, reason := tr.restarts.next(false, unrecoverable)
				if !tr.afterRun(ctx, dec, delay, reason) {
					return
				}
				continue
			}
		}

		ex := ended
		ended = nil
		if ex == nil {
			var outcome watchOutcome
			ex, outcome = tr.watch(ctx, h)
			switch outcome {
			case outcomeDetached:
				tr.logger.Debug("agent shutting down, leaving task running")
				return
			case outcomeKilled:
				return
			}
		}
		h = nil
		tr.mu.Lock()
		tr.handle = nil // persisted with the Terminated event below
		tr.mu.Unlock()
		tr.logger.Info("task exited", zap.Int("exit_code", ex.ExitCode), zap.Int("signal", ex.Signal), zap.String("error", ex.Err))
		tr.update("", terminatedEvent(ex))
		tr.runExitedHooks(ex)
		dec, delay, reason := tr.restarts.next(ex.Successful(), false)
		if !tr.afterRun(ctx, dec, delay, reason) {
			return
		}
	}
}

// afterRun applies a restart decision. It returns true when the task is
// to be started again (after the delay has passed).
func (tr *taskRunner) afterRun(ctx context.Context, dec restartDecision, delay time.Duration, reason string) bool {
	switch dec {
	case taskDone:
		tr.update(structs.TaskStateDead)
		return false
	case taskFailed:
		tr.logger.Info("not restarting task", zap.String("reason", reason))
		tr.update(structs.TaskStateDead, notRestartingEvent(reason))
		return false
	}
	tr.logger.Info("restarting task", zap.String("reason", reason), zap.Duration("delay", delay))
	tr.update(structs.TaskStatePending, restartingEvent(reason, delay))
	select {
	case <-tr.agent.clock.After(delay):
		return true
	case <-tr.killCh:
		tr.finishKilled(nil)
		return false
	case <-ctx.Done():
		return false
	}
}

// prestart runs the prestart hooks.
func (tr *taskRunner) prestart() error {
	for _, h := range tr.hooks {
		if p, ok := h.(taskPrestartHook); ok {
			if err := p.Prestart(tr); err != nil {
				return fmt.Errorf("%s: %w", h.Name(), err)
			}
		}
	}
	return nil
}

func (tr *taskRunner) runExitedHooks(ex *exitRecord) {
	for _, h := range tr.hooks {
		if p, ok := h.(taskExitedHook); ok {
			if err := p.Exited(tr, ex); err != nil {
				tr.logger.Warn("exited hook failed", zap.String("hook", h.Name()), zap.Error(err))
			}
		}
	}
}

// start launches the task under a new supervisor.
func (tr *taskRunner) start() (*supervisorHandle, error) {
	runID := structs.GenerateUUID()
	// The run ID is persisted before the supervisor exists, so that a
	// restarted agent can find this launch's records.
	tr.setHandle(&taskHandleState{RunID: runID})
	spec := &supervisorSpec{
		RunID:    runID,
		Command:  tr.proc.Command,
		Args:     tr.proc.Args,
		Env:      tr.env.list(),
		Dir:      tr.taskDir.Dir,
		LogDir:   tr.allocDir.LogDir(),
		LogBase:  tr.task.Name,
		StateDir: tr.taskDir.StateDir,
	}
	spec.LogMaxFiles, spec.LogMaxFileBytes, spec.LogDisabled = logSettings(tr.task)
	h, err := tr.agent.launcher.launch(spec)
	if err != nil {
		tr.setHandle(nil)
		return nil, err
	}
	tr.mu.Lock()
	tr.handle = &taskHandleState{
		RunID:                runID,
		SupervisorPid:        h.sup.Pid,
		SupervisorStartTicks: h.sup.StartTicks,
		TaskPid:              h.task.Pid,
		TaskStartTicks:       h.task.StartTicks,
		StartedAt:            h.task.StartedAt,
	}
	tr.mu.Unlock()
	tr.logger.Info("task started", zap.Int("pid", h.task.Pid), zap.Int("supervisor_pid", h.sup.Pid))
	tr.update(structs.TaskStateRunning, newTaskEvent(structs.TaskStarted))
	for _, hk := range tr.hooks {
		if p, ok := hk.(taskPoststartHook); ok {
			if err := p.Poststart(tr, h); err != nil {
				tr.logger.Warn("poststart hook failed", zap.String("hook", hk.Name()), zap.Error(err))
			}
		}
	}
	return h, nil
}

// watch waits for the task to end, for a kill request, or for ctx.
func (tr *taskRunner) watch(ctx context.Context, h *supervisorHandle) (*exitRecord, watchOutcome) {
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exitCh := make(chan *exitRecord, 1)
	go func() {
		if ex, err := h.wait(wctx); err == nil {
			exitCh <- ex
		}
	}()
	select {
	case ex := <-exitCh:
		return ex, outcomeExited
	case <-tr.killCh:
		tr.finishKilled(tr.killProcess(h, exitCh))
		return nil, outcomeKilled
	case <-ctx.Done():
		return nil, outcomeDetached
	}
}

// killProcess stops a running task: the kill signal to its process group,
// then SIGKILL after the kill timeout. It returns how the task ended (nil
// if that could not be learned).
func (tr *taskRunner) killProcess(h *supervisorHandle, exitCh <-chan *exitRecord) *exitRecord {
	sig, err := parseSignal(tr.task.KillSignal)
	if err != nil {
		tr.logger.Warn("bad kill_signal, using SIGINT", zap.Error(err))
		sig = unix.SIGINT
	}
	timeout := tr.task.KillTimeout
	if timeout <= 0 {
		timeout = DefaultKillTimeout
	}
	if delay := tr.shutdownDelay(); delay > 0 {
		// Nomad's shutdown_delay: the task keeps running this long after
		// it was told to stop (there, to drain service registrations)
		// before its kill signal; it may still exit on its own.
		tr.logger.Info("waiting out the shutdown delay before the kill signal", zap.Duration("shutdown_delay", delay))
		select {
		case ex := <-exitCh:
			return ex
		case <-time.After(delay):
		}
	}
	tr.update("", tr.takeKillEvent(), killingEvent(unix.SignalName(sig), timeout))
	tr.logger.Info("killing task", zap.String("signal", unix.SignalName(sig)), zap.Duration("kill_timeout", timeout))
	if err := h.signalTask(sig); err != nil {
		tr.logger.Warn("signal task", zap.Error(err))
	}
	select {
	case ex := <-exitCh:
		return ex
	case <-time.After(timeout):
	}
	tr.logger.Info("task did not stop within its kill timeout, sending SIGKILL")
	if err := h.signalTask(unix.SIGKILL); err != nil {
		tr.logger.Warn("signal task", zap.Error(err))
	}
	select {
	case ex := <-exitCh:
		return ex
	case <-time.After(forceKillWait):
	}
	tr.logger.Warn("task supervisor did not exit after SIGKILL, killing it")
	h.killSupervisor()
	select {
	case ex := <-exitCh:
		return ex
	case <-time.After(forceKillWait):
		tr.logger.Error("task supervisor still running after SIGKILL")
		return nil
	}
}

// shutdownDelay is the longer of the task's and its group's shutdown_delay.
func (tr *taskRunner) shutdownDelay() time.Duration {
	d := tr.task.ShutdownDelay
	if tr.alloc.Job != nil {
		if tg := tr.alloc.Job.LookupTaskGroup(tr.alloc.TaskGroup); tg != nil && tg.ShutdownDelay != nil && *tg.ShutdownDelay > d {
			d = *tg.ShutdownDelay
		}
	}
	return d
}

// finishKilled records the end of a killed task.
func (tr *taskRunner) finishKilled(ex *exitRecord) {
	var events []*structs.TaskEvent
	if pre := tr.takeKillEvent(); pre != nil {
		events = append(events, pre)
	}
	if ex != nil {
		events = append(events, terminatedEvent(ex))
	}
	events = append(events, newTaskEvent(structs.TaskKilled))
	tr.logger.Info("task killed")
	tr.mu.Lock()
	tr.handle = nil
	tr.mu.Unlock()
	for _, h := range tr.hooks {
		if p, ok := h.(taskStopHook); ok {
			if err := p.Stop(tr); err != nil {
				tr.logger.Warn("stop hook failed", zap.String("hook", h.Name()), zap.Error(err))
			}
		}
	}
	tr.update(structs.TaskStateDead, events...)
}

// logSettings returns a task's log rotation: files kept per stream, bytes
// per file, and whether output is discarded.
func logSettings(task *structs.Task) (maxFiles int, maxFileBytes int64, disabled bool) {
	maxFiles, sizeMB := DefaultLogMaxFiles, DefaultLogMaxFileSizeMB
	if lc := task.LogConfig; lc != nil {
		if lc.MaxFiles > 0 {
			maxFiles = lc.MaxFiles
		}
		if lc.MaxFileSizeMB > 0 {
			sizeMB = lc.MaxFileSizeMB
		}
		disabled = lc.Disabled
	}
	return maxFiles, int64(sizeMB) << 20, disabled
}
