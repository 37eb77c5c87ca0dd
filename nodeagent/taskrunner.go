package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
	"github.com/drover-sched/drover/tasktemplate"
)

// Kill defaults.
const (
	// DefaultKillTimeout is used when a task sets no kill_timeout (Nomad's
	// default).
	DefaultKillTimeout = 5 * time.Second
	// forceKillWait bounds how long a task the driver stopped may take
	// to be reported gone.
	forceKillWait = 10 * time.Second
)

// taskRunner runs one task of an allocation: its hooks, its launches
// through its driver, its restarts, and its kill. One goroutine (run)
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
	// network returns the alloc's network namespace (bridge mode), nil
	// in host mode.
	network func() *drivers.NetworkIsolation

	mu    sync.Mutex
	state *structs.TaskState
	// handle is the current launch's, persisted with the state.
	handle *drivers.TaskHandle

	// drv is the task's driver; env is the environment the prestart
	// hooks built.
	drv drivers.Driver
	env *taskEnv
	// mounts are the host volumes the prestart hooks mounted.
	mounts []drivers.MountConfig
	// latest is the alloc as last received from the server (in-place
	// updates change its job); prestart hooks are built from it.
	latest *structs.Allocation

	// restoredHandle is the handle persisted by an earlier agent, to
	// re-attach to.
	restoredHandle *drivers.TaskHandle
	// gate, when set, is closed when the task's lifecycle turn has come:
	// a task that never started waits for it.
	gate <-chan struct{}

	killMu    sync.Mutex
	killCh    chan struct{}
	killEvent *structs.TaskEvent

	// restartCh carries a restart request (a user's, or a template's
	// change_mode) to the running launch's watch.
	restartCh chan restartRequest
	// restartReason is the reason of the restart being carried out and
	// restartFailure whether it answers a failure (only the run goroutine
	// touches them).
	restartReason  string
	restartFailure bool

	waitCh chan struct{}
}

func newTaskRunner(ar *allocRunner, task *structs.Task, st *structs.TaskState, h *drivers.TaskHandle) *taskRunner {
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
		network:        ar.networkIsolation,
		state:          st,
		restoredHandle: h,
		handle:         h,
		killCh:         make(chan struct{}),
		restartCh:      make(chan restartRequest, 1),
		latest:         alloc,
		waitCh:         make(chan struct{}),
	}
	tr.hooks = tr.initHooks()
	return tr
}

// restartRequest is one asked-for restart: the event recorded first
// ("Restart Signaled") and the reason of the Restarting event.
type restartRequest struct {
	event  *structs.TaskEvent
	reason string
	// failure: the restart answers a failure (a check_restart), so it
	// goes through the restart policy (an attempt, its delay; the task
	// fails when the attempts are used up), as Nomad's failure restarts.
	failure bool
}

// initHooks builds the task's hook list, adding a hook only when the task
// uses its feature: the task dir and environment always, then host
// volumes, the dispatch payload, artifacts (fetched before templates,
// which may read them), templates, services (when the control plane has
// a service registry).
func (tr *taskRunner) initHooks() []taskHook {
	hooks := []taskHook{&taskDirHook{}, &taskEnvHook{}}
	if len(tr.task.VolumeMounts) > 0 {
		hooks = append(hooks, &volumeHook{})
	}
	if tr.task.DispatchPayload != nil {
		hooks = append(hooks, &dispatchPayloadHook{})
	}
	if len(tr.task.Artifacts) > 0 {
		hooks = append(hooks, newArtifactHook(tr.logger))
	}
	if len(tr.task.Templates) > 0 {
		var services tasktemplate.ServiceLookup
		if templatesReadServices(tr.task.Templates) {
			services = tr.agent.services // only these watch the registry
		}
		hooks = append(hooks, newTemplateHook(tr.logger, tr, services))
	}
	// Services last: they register with the environment the hooks
	// before them built.
	// Always there with a registry: an in-place update may add services.
	if reg, ok := tr.agent.cp.(ServiceRegistry); ok && tr.alloc.Job != nil {
		svcs := taskServices(tr.alloc.Job.LookupTaskGroup(tr.alloc.TaskGroup), tr.task)
		hooks = append(hooks, newServiceHook(tr.logger, reg, tr.agent.nodeID, svcs))
	}
	return hooks
}

// Alloc returns the alloc as last received.
func (tr *taskRunner) Alloc() *structs.Allocation {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.latest
}

// Update hands the task runner a newer version of its alloc (an in-place
// update): the update hooks see it, and the next start is prepared from
// it.
func (tr *taskRunner) Update(alloc *structs.Allocation) {
	tr.mu.Lock()
	tr.latest = alloc
	tr.mu.Unlock()
	task := tr.task
	if tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup); tg != nil {
		if t := tg.LookupTask(tr.task.Name); t != nil {
			task = t
		}
	}
	for _, h := range tr.hooks {
		if p, ok := h.(taskUpdateHook); ok {
			p.Update(alloc, task)
		}
	}
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
	h := tr.handle.Copy()
	tr.mu.Unlock()
	tr.persist(st, h)
	tr.notify()
}

// setHandle records (or, with nil, clears) the launch's handle.
func (tr *taskRunner) setHandle(h *drivers.TaskHandle) {
	tr.mu.Lock()
	tr.handle = h
	st := copyTaskState(tr.state)
	tr.mu.Unlock()
	tr.persist(st, h.Copy())
}

func (tr *taskRunner) persist(st *structs.TaskState, h *drivers.TaskHandle) {
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
	outcomeRestart                      // the task was stopped to be restarted on request
)

// run is the task's lifecycle. It returns when the task is dead, or when
// ctx ends (agent shutdown without stopping tasks).
func (tr *taskRunner) run(ctx context.Context) {
	defer close(tr.waitCh)
	if tr.isDead() {
		return
	}

	// attached: a launch of the task is under the driver's watch (it may
	// have ended while no agent watched; waiting then says how).
	attached := false
	if hs := tr.restoredHandle; hs != nil {
		attached = tr.recover(ctx, hs)
		if attached {
			tr.restoreHooks()
		}
	}

	if !attached && tr.gate != nil && tr.State().StartedAt.IsZero() {
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
		if !attached {
			if tr.killRequested() {
				tr.finishKilled(nil)
				return
			}
			if err := tr.prestart(); err != nil {
				var he *hookError
				if !errors.As(err, &he) || !he.recoverable {
					tr.logger.Error("task setup failed", zap.Error(err))
					tr.update(structs.TaskStateDead, setupFailureEvent(err))
					return
				}
				// A failure a retry may cure (an artifact download):
				// its event, then the restart policy, as Nomad's
				// recoverable hook errors.
				tr.logger.Error("task prestart failed", zap.Error(err))
				tr.update("", he.event)
				dec, delay, reason := tr.restarts.next(false, false)
				if !tr.afterRun(ctx, dec, delay, reason) {
					return
				}
				continue
			}
			if err := tr.start(ctx); err != nil {
				if ctx.Err() != nil {
					return // the agent is stopping
				}
				tr.logger.Error("task failed to start", zap.Error(err))
				tr.update("", driverFailureEvent(err))
				dec, delay, reason := tr.restarts.next(false, drivers.IsUnrecoverable(err))
				if !tr.afterRun(ctx, dec, delay, reason) {
					return
				}
				continue
			}
		}
		attached = false

		ex, outcome := tr.watch(ctx)
		switch outcome {
		case outcomeDetached:
			tr.logger.Debug("agent shutting down, leaving task running")
			return
		case outcomeKilled:
			return
		case outcomeRestart:
			// An asked-for restart: counted as a restart (Restarts,
			// the Restarting event), without using the policy's
			// attempts or waiting its delay, as Nomad's.
			tr.releaseLaunch(false)
			if ex != nil {
				tr.update("", terminatedEvent(ex))
			}
			if tr.restartFailure {
				// A failure restart (check_restart) is the restart
				// policy's to decide, as an exit with an error.
				tr.logger.Info("restarting task after a failure", zap.String("reason", tr.restartReason))
				dec, delay, reason := tr.restarts.next(false, false)
				if !tr.afterRun(ctx, dec, delay, reason) {
					return
				}
				continue
			}
			tr.logger.Info("restarting task on request", zap.String("reason", tr.restartReason))
			tr.update(structs.TaskStatePending, restartingEvent(tr.restartReason, 0))
			continue
		}
		tr.releaseLaunch(false)
		tr.logger.Info("task exited", zap.Int("exit_code", ex.ExitCode), zap.Int("signal", ex.Signal),
			zap.Bool("oom_killed", ex.OOMKilled), zap.String("error", ex.Err))
		tr.update("", terminatedEvent(ex))
		tr.runExitedHooks(ex)
		dec, delay, reason := tr.restarts.next(ex.Successful(), false)
		if !tr.afterRun(ctx, dec, delay, reason) {
			return
		}
	}
}

// recover hands the handle an earlier agent persisted back to its driver.
// It reports whether the launch is under the driver's watch again (still
// running, or ended while no agent watched); otherwise the handle is
// cleared and the task starts as new.
func (tr *taskRunner) recover(ctx context.Context, hs *drivers.TaskHandle) bool {
	d := tr.agent.drivers[hs.Driver]
	if d == nil {
		tr.logger.Error("cannot re-attach: the task's driver is not enabled on this node", zap.String("driver", hs.Driver))
		tr.update("", driverFailureEvent(fmt.Errorf("cannot re-attach: driver %q is not enabled on this node", hs.Driver)))
		tr.setHandle(nil)
		return false
	}
	if hs.Config == nil || hs.Config.StateDir == "" {
		// A handle of an agent from before the driver interface: only
		// the launch ID was kept; the directories are the task's own.
		id := hs.ID()
		hs.Config = tr.dirsConfig(id)
	}
	err := d.Recover(ctx, hs)
	switch {
	case err == nil:
		tr.drv = d
		tr.logger.Info("re-attached to task", zap.String("driver", d.Name()), zap.String("task_id", hs.ID()))
		if tr.State().State != structs.TaskStateRunning {
			tr.update(structs.TaskStateRunning, newTaskEvent(structs.TaskStarted))
		}
		return true
	case errors.Is(err, drivers.ErrTaskNotFound):
		tr.logger.Info("the earlier launch never started the task", zap.String("task_id", hs.ID()))
	default:
		tr.logger.Error("re-attach failed", zap.Error(err))
		tr.update("", driverFailureEvent(fmt.Errorf("re-attach: %w", err)))
	}
	tr.setHandle(nil)
	return false
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

// prestart finds the task's driver and runs the prestart hooks: the task
// dir, then the task's environment.
func (tr *taskRunner) prestart() error {
	d := tr.agent.drivers[tr.task.Driver]
	if d == nil {
		return fmt.Errorf("driver %q is not enabled on this node", tr.task.Driver)
	}
	tr.drv = d
	req := tr.prestartRequest(d)
	resp := &taskPrestartResponse{}
	for _, h := range tr.hooks {
		if p, ok := h.(taskPrestartHook); ok {
			if err := p.Prestart(req, resp); err != nil {
				return fmt.Errorf("%s: %w", h.Name(), err)
			}
		}
	}
	if resp.Env == nil {
		return errors.New("no task environment was built")
	}
	tr.env = resp.Env
	tr.mounts = resp.Mounts
	return nil
}

// restoreHooks tells the hooks that watch a running task (templates)
// that the task was re-attached after an agent restart: they take up
// their work again without the task starting.
func (tr *taskRunner) restoreHooks() {
	if tr.drv == nil {
		return
	}
	req := tr.prestartRequest(tr.drv)
	resp := &taskPrestartResponse{}
	if err := (&taskEnvHook{}).Prestart(req, resp); err != nil {
		tr.logger.Warn("rebuild task environment", zap.Error(err))
		return
	}
	for _, h := range tr.hooks {
		if p, ok := h.(taskRestoreHook); ok {
			if err := p.Restore(req, resp); err != nil {
				tr.logger.Warn("restore hook failed", zap.String("hook", h.Name()), zap.Error(err))
			}
		}
	}
}

// prestartRequest is what the prestart and restore hooks are told.
func (tr *taskRunner) prestartRequest(d drivers.Driver) *taskPrestartRequest {
	return &taskPrestartRequest{
		Alloc:        tr.Alloc(),
		Task:         tr.task,
		AllocDir:     tr.allocDir,
		TaskDir:      tr.taskDir,
		Node:         tr.agent.Node(),
		Capabilities: d.Capabilities(),
		HostEnv:      agentEnviron(),
		Network:      tr.network(),
		Emit:         func(ev *structs.TaskEvent) { tr.update("", ev) },
		Done:         tr.waitCh,
	}
}

func (tr *taskRunner) runExitedHooks(ex *drivers.ExitResult) {
	for _, h := range tr.hooks {
		if p, ok := h.(taskExitedHook); ok {
			if err := p.Exited(tr.task, ex); err != nil {
				tr.logger.Warn("exited hook failed", zap.String("hook", h.Name()), zap.Error(err))
			}
		}
	}
}

// dirsConfig is a launch config with only the ID and the task's
// directories.
func (tr *taskRunner) dirsConfig(id string) *drivers.TaskConfig {
	return &drivers.TaskConfig{
		ID:         id,
		AllocID:    tr.alloc.ID,
		Namespace:  tr.alloc.Namespace,
		JobID:      tr.alloc.JobID,
		TaskGroup:  tr.alloc.TaskGroup,
		AllocName:  tr.alloc.Name,
		Name:       tr.task.Name,
		AllocDir:   tr.allocDir.Dir,
		SharedDir:  tr.allocDir.SharedDir(),
		LogDir:     tr.allocDir.LogDir(),
		TaskDir:    tr.taskDir.Dir,
		LocalDir:   tr.taskDir.LocalDir,
		SecretsDir: tr.taskDir.SecretsDir,
		TmpDir:     tr.taskDir.TmpDir,
		StateDir:   tr.taskDir.StateDir,
	}
}

// taskConfig is the driver's config of a new launch.
func (tr *taskRunner) taskConfig(id string) *drivers.TaskConfig {
	cfg := tr.dirsConfig(id)
	cfg.Config = tr.env.interpolateConfig(tr.task.Config)
	cfg.Env = tr.env.copyVars()
	cfg.Mounts = tr.mounts
	cfg.User = tr.task.User
	if r := tr.task.Resources; r != nil {
		cfg.Resources = drivers.Resources{CPU: r.CPU, MemoryMB: r.MemoryMB, MemoryMaxMB: r.MemoryMaxMB}
	}
	cfg.Logs.MaxFiles, cfg.Logs.MaxFileBytes, cfg.Logs.Disabled = logSettings(tr.task)
	if ar := tr.alloc.AllocatedResources; ar != nil && len(ar.Shared.Ports) > 0 {
		cfg.Ports = append([]structs.AllocatedPortMapping(nil), ar.Shared.Ports...)
	}
	cfg.Network = tr.network()
	cfg.Events = func(msg string) { tr.update("", driverMessageEvent(msg)) }
	return cfg
}

// start launches the task through its driver.
func (tr *taskRunner) start(ctx context.Context) error {
	select {
	case <-tr.restartCh: // a request for the launch that ended is moot
	default:
	}
	cfg := tr.taskConfig(structs.GenerateUUID())
	// The launch's handle is persisted before the driver starts it, so
	// that a restarted agent can find what this launch left.
	tr.setHandle(&drivers.TaskHandle{Version: drivers.TaskHandleVersion, Driver: tr.drv.Name(), Config: cfg})
	h, err := tr.drv.Start(ctx, cfg)
	if err != nil {
		tr.setHandle(nil)
		return err
	}
	tr.mu.Lock()
	tr.handle = h
	tr.mu.Unlock()
	tr.logger.Info("task started", zap.String("driver", tr.drv.Name()), zap.String("task_id", cfg.ID))
	tr.update(structs.TaskStateRunning, newTaskEvent(structs.TaskStarted))
	for _, hk := range tr.hooks {
		if p, ok := hk.(taskPoststartHook); ok {
			if err := p.Poststart(tr.task, h); err != nil {
				tr.logger.Warn("poststart hook failed", zap.String("hook", hk.Name()), zap.Error(err))
			}
		}
	}
	return nil
}

// handleID is the current launch's task ID, "" when none.
func (tr *taskRunner) handleID() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.handle.ID()
}

// watch waits for the task to end, for a kill request, or for ctx.
func (tr *taskRunner) watch(ctx context.Context) (*drivers.ExitResult, watchOutcome) {
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exitCh, err := tr.drv.Wait(wctx, tr.handleID())
	if err != nil {
		return &drivers.ExitResult{ExitCode: -1, Err: "lost the task: " + err.Error(), ExitedAt: time.Now()}, outcomeExited
	}
	select {
	case ex, ok := <-exitCh:
		if !ok || ex == nil {
			ex = &drivers.ExitResult{ExitCode: -1, Err: "the driver stopped watching the task", ExitedAt: time.Now()}
		}
		return ex, outcomeExited
	case <-tr.killCh:
		tr.finishKilled(tr.killTask(exitCh, tr.takeKillEvent()))
		return nil, outcomeKilled
	case req := <-tr.restartCh:
		tr.restartReason, tr.restartFailure = req.reason, req.failure
		return tr.killTask(exitCh, req.event), outcomeRestart
	case <-ctx.Done():
		return nil, outcomeDetached
	}
}

// Restart asks the running task to restart: it is stopped as for a kill
// (kill signal, kill timeout), recorded with ev first, and started again
// at once. It does not wait. A task that is not running is an error
// wrapping fs.ErrInvalid.
func (tr *taskRunner) Restart(ev *structs.TaskEvent) error {
	return tr.restartFor(ev, ReasonUserRestart)
}

// restartFor is Restart with the reason its Restarting event gives.
func (tr *taskRunner) restartFor(ev *structs.TaskEvent, reason string) error {
	if tr.State().State != structs.TaskStateRunning || tr.killRequested() || tr.handleID() == "" {
		return fmt.Errorf("task %q is not running: %w", tr.task.Name, fs.ErrInvalid)
	}
	select {
	case tr.restartCh <- restartRequest{event: ev, reason: reason}:
	default: // one pending request is enough
	}
	return nil
}

// restartForFailure asks the running task to restart because it failed
// (ev, "Restart Signaled", names why): unlike Restart, the restart policy
// decides what follows, so it uses an attempt and waits its delay, and
// fails the task once the attempts are used up.
func (tr *taskRunner) restartForFailure(ev *structs.TaskEvent) error {
	if tr.State().State != structs.TaskStateRunning || tr.killRequested() || tr.handleID() == "" {
		return fmt.Errorf("task %q is not running: %w", tr.task.Name, fs.ErrInvalid)
	}
	select {
	case tr.restartCh <- restartRequest{event: ev, failure: true}:
	default: // one pending request is enough
	}
	return nil
}

// Signal sends sig to the running task through its driver and records a
// Signaling event. A task that is not running is an error wrapping
// fs.ErrInvalid.
func (tr *taskRunner) Signal(sig string) error {
	return tr.signalWith(sig, signalingEvent(sig))
}

// signalWith is Signal recording ev as the Signaling event.
func (tr *taskRunner) signalWith(sig string, ev *structs.TaskEvent) error {
	id := tr.handleID()
	if tr.State().State != structs.TaskStateRunning || id == "" || tr.drv == nil {
		return fmt.Errorf("task %q is not running: %w", tr.task.Name, fs.ErrInvalid)
	}
	if !tr.drv.Capabilities().SendSignals {
		return fmt.Errorf("task %q: driver %s cannot send signals: %w", tr.task.Name, tr.drv.Name(), fs.ErrInvalid)
	}
	tr.update("", ev)
	if err := tr.drv.Signal(id, sig); err != nil {
		return fmt.Errorf("signal task %q: %w", tr.task.Name, err)
	}
	return nil
}

// runningLaunch returns the driver and task ID of the running launch, or
// an error wrapping fs.ErrInvalid when the task is not running.
func (tr *taskRunner) runningLaunch() (drivers.Driver, string, error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.state.State != structs.TaskStateRunning || tr.handle.ID() == "" || tr.drv == nil {
		return nil, "", fmt.Errorf("task %q is not running: %w", tr.task.Name, fs.ErrInvalid)
	}
	return tr.drv, tr.handle.ID(), nil
}

// killTask stops a running task: after the shutdown delay, pre (the
// reason, may be nil) is recorded, the driver sends the kill signal and
// kills the task after the kill timeout. It returns how the task ended
// (nil if that could not be learned).
func (tr *taskRunner) killTask(exitCh <-chan *drivers.ExitResult, pre *structs.TaskEvent) *drivers.ExitResult {
	signal := tr.task.KillSignal
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		tr.logger.Warn("bad kill_signal, using SIGINT", zap.Error(err))
		sig, signal = unix.SIGINT, "SIGINT"
	}
	timeout := tr.task.KillTimeout
	if timeout <= 0 {
		timeout = DefaultKillTimeout
	}
	for _, h := range tr.hooks {
		if p, ok := h.(taskPreKillHook); ok {
			p.PreKill(tr.task)
		}
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
	kev := killingEvent(drivers.SignalName(sig), timeout)
	if pre != nil && pre.Type == structs.TaskKilling {
		// The reason is itself a Killing event (max_run_duration): one
		// event, with the reason as its message, as Nomad's.
		pre.KillTimeout, pre.Details["kill_timeout"] = kev.KillTimeout, kev.Details["kill_timeout"]
		pre, kev = nil, pre
	}
	tr.update("", pre, kev)
	tr.logger.Info("killing task", zap.String("signal", drivers.SignalName(sig)), zap.Duration("kill_timeout", timeout))
	if err := tr.drv.Stop(context.Background(), tr.handleID(), timeout, signal); err != nil {
		tr.logger.Error("stop task", zap.Error(err))
	}
	select {
	case ex := <-exitCh:
		return ex
	case <-time.After(forceKillWait):
		tr.logger.Error("task not reported gone after its kill")
		return nil
	}
}

// releaseLaunch has the driver release the current launch (its records,
// cgroups, container) and forgets its handle. force kills a launch still
// running.
func (tr *taskRunner) releaseLaunch(force bool) {
	tr.mu.Lock()
	id := tr.handle.ID()
	tr.handle = nil // persisted with the next update
	tr.mu.Unlock()
	if id == "" || tr.drv == nil {
		return
	}
	if err := tr.drv.Destroy(context.Background(), id, force); err != nil {
		tr.logger.Warn("release task", zap.String("task_id", id), zap.Error(err))
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
func (tr *taskRunner) finishKilled(ex *drivers.ExitResult) {
	var events []*structs.TaskEvent
	if pre := tr.takeKillEvent(); pre != nil {
		events = append(events, pre)
	}
	if ex != nil {
		events = append(events, terminatedEvent(ex))
	}
	events = append(events, newTaskEvent(structs.TaskKilled))
	tr.logger.Info("task killed")
	tr.releaseLaunch(true)
	for _, h := range tr.hooks {
		if p, ok := h.(taskStopHook); ok {
			if err := p.Stop(tr.task); err != nil {
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
