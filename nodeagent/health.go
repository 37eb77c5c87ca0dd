package nodeagent

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
)

// Nomad's defaults for a deployment's health settings, used when an alloc
// belongs to a deployment whose group carries no update block.
const (
	// DefaultMinHealthyTime is how long every task must have been running
	// before the alloc counts as healthy.
	DefaultMinHealthyTime = 10 * time.Second
	// DefaultHealthyDeadline is how long an alloc has to become healthy
	// before it is marked unhealthy.
	DefaultHealthyDeadline = 5 * time.Minute
)

// allocHealth is the node agent's verdict on an alloc's health within one
// deployment.
type allocHealth struct {
	// DeploymentID is the deployment the verdict belongs to.
	DeploymentID string
	Healthy      bool
	// At is when the verdict was reached.
	At time.Time
}

// healthSettings is what the watcher needs of a group's update block.
type healthSettings struct {
	minHealthy time.Duration
	deadline   time.Duration
	// checks: the service checks count too (health_check = "checks",
	// the default, and the group has checks that count for health).
	checks bool
}

// healthSettingsFor reports whether the agent must watch alloc's health,
// and how. It must when the alloc belongs to a deployment whose health
// the agent decides: health_check = "checks" (the default) counts the
// task states and the service checks whose on_update is not "ignore";
// "task_states" counts the task states alone, as does "checks" when the
// group has no such check, as Nomad treats it. "manual" health is set by
// the operator, never by the agent.
func healthSettingsFor(alloc *structs.Allocation) (healthSettings, bool) {
	if alloc.DeploymentID == "" || alloc.Job == nil || alloc.Job.Type != structs.JobTypeService {
		return healthSettings{}, false
	}
	s := healthSettings{minHealthy: DefaultMinHealthyTime, deadline: DefaultHealthyDeadline}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil {
		return s, false
	}
	if u := tg.Update; u != nil {
		if u.HealthCheck == structs.UpdateHealthCheckManual {
			return s, false
		}
		if u.MinHealthyTime >= 0 {
			s.minHealthy = u.MinHealthyTime
		}
		if u.HealthyDeadline > 0 {
			s.deadline = u.HealthyDeadline
		}
	}
	if u := tg.Update; u == nil || u.HealthCheck == "" || u.HealthCheck == structs.UpdateHealthCheckChecks {
		s.checks = groupHasHealthChecks(alloc)
	}
	return s, true
}

// healthHook watches the alloc's tasks while it belongs to a deployment
// and decides its health once: healthy when every task that should be
// running has been seen running for min_healthy_time without a restart
// (and, when checks count, with every such check passing throughout);
// unhealthy when a task fails or dies first, or when healthy_deadline
// passes. A restart does not fail the alloc: it restarts the
// min_healthy_time wait. The verdict is reported as the alloc's deployment
// status; when the alloc joins another deployment, it is forgotten and the
// watch starts over.
type healthHook struct {
	ar *allocRunner

	// opMu serializes restart and stop (Prerun runs beside Update).
	opMu sync.Mutex
	mu   sync.Mutex
	// watching is the deployment being watched ("" when none).
	watching string
	cancel   context.CancelFunc
	done     chan struct{}
	kick     chan struct{}
}

func newHealthHook(ar *allocRunner) *healthHook { return &healthHook{ar: ar} }

func (*healthHook) Name() string { return "health" }

// Prerun starts watching, unless the alloc's health in its deployment is
// already known (reported before an agent restart).
func (h *healthHook) Prerun(context.Context) error {
	h.restart(h.ar.Alloc())
	return nil
}

// Update starts a new watch when the alloc joined another deployment, and
// stops watching when the server stopped the alloc.
func (h *healthHook) Update(alloc *structs.Allocation) error {
	if alloc.ServerTerminalStatus() {
		h.stop()
		return nil
	}
	h.mu.Lock()
	same := h.watching == alloc.DeploymentID
	h.mu.Unlock()
	if same {
		return nil
	}
	h.restart(alloc)
	return nil
}

// TaskStatesChanged wakes the watcher.
func (h *healthHook) TaskStatesChanged() {
	h.mu.Lock()
	kick := h.kick
	h.mu.Unlock()
	if kick == nil {
		return
	}
	select {
	case kick <- struct{}{}:
	default:
	}
}

// Postrun stops watching: every task is dead.
func (h *healthHook) Postrun() error {
	h.stop()
	return nil
}

// Destroy stops watching.
func (h *healthHook) Destroy() error {
	h.stop()
	return nil
}

// Shutdown stops the watcher when the agent stops (the alloc runs on).
func (h *healthHook) Shutdown() { h.stop() }

func (h *healthHook) stop() {
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.stopLocked()
}

func (h *healthHook) stopLocked() {
	h.mu.Lock()
	cancel, done := h.cancel, h.done
	h.cancel, h.done, h.kick, h.watching = nil, nil, nil, ""
	h.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// restart drops any current watch and the health verdict of an earlier
// deployment, then watches alloc if it needs watching.
func (h *healthHook) restart(alloc *structs.Allocation) {
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.stopLocked()
	ar := h.ar
	ar.clearHealthUnless(alloc.DeploymentID)
	settings, ok := healthSettingsFor(alloc)
	if !ok {
		return
	}
	if ar.healthDecided(alloc.DeploymentID) || alloc.DeploymentStatus.HasHealth() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.mu.Lock()
	h.watching = alloc.DeploymentID
	h.cancel = cancel
	h.done = make(chan struct{})
	h.kick = make(chan struct{}, 1)
	done, kick := h.done, h.kick
	h.mu.Unlock()
	ar.logger.Debug("watching deployment health", zap.String("deployment_id", alloc.DeploymentID),
		zap.Duration("min_healthy_time", settings.minHealthy), zap.Duration("healthy_deadline", settings.deadline),
		zap.Bool("checks", settings.checks))
	go func() {
		defer close(done)
		h.watch(ctx, alloc.DeploymentID, settings, kick)
	}()
}

// healthMark identifies the stretch the min_healthy_time wait counts: the
// latest task start and, when checks count, when they last began to pass.
// A new mark starts the wait over.
type healthMark struct {
	tasks  time.Time
	checks time.Time
}

func (m healthMark) same(o healthMark) bool {
	return m.tasks.Equal(o.tasks) && m.checks.Equal(o.checks)
}

// judge looks at the tasks and, when they count, the checks: it returns
// a reason when the alloc is unhealthy, whether it is healthy now, and the
// mark of the current healthy stretch.
func (h *healthHook) judge(s healthSettings) (unhealthy string, ok bool, mark healthMark) {
	verdict, allRunning, latest := judgeTaskHealth(h.ar.taskList())
	mark.tasks = latest
	if verdict != "" || !allRunning || !s.checks || h.ar.checks == nil {
		return verdict, verdict == "" && allRunning, mark
	}
	since, passing := h.ar.checks.Passing()
	mark.checks = since
	return "", passing, mark
}

// watch decides the health of the alloc in deploymentID: healthy once the
// tasks run and (when they count) the checks pass without a break for
// min_healthy_time; unhealthy when a task fails or healthy_deadline
// passes first (failing checks alone only hold the verdict back).
func (h *healthHook) watch(ctx context.Context, deploymentID string, s healthSettings, kick <-chan struct{}) {
	ar := h.ar
	clock := ar.agent.clock
	deadline := clock.After(s.deadline)
	var healthyAt <-chan time.Time
	var armedFor healthMark // the stretch the healthy timer counts
	armed := false
	for {
		verdict, ok, mark := h.judge(s)
		if verdict != "" {
			ar.logger.Info("allocation unhealthy", zap.String("deployment_id", deploymentID), zap.String("reason", verdict))
			ar.setHealth(deploymentID, false)
			return
		}
		switch {
		case !ok:
			healthyAt, armed = nil, false
		case !armed || !mark.same(armedFor):
			// Counted from now, as Nomad does: a task restored or
			// re-watched after joining a deployment must stay up a full
			// min_healthy_time under watch.
			armedFor, armed = mark, true
			healthyAt = clock.After(s.minHealthy)
		}
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-deadline:
			reason := "healthy deadline passed"
			if s.checks {
				if _, passing := ar.checks.Passing(); !passing {
					reason = "healthy deadline passed with failing checks"
				}
			}
			ar.logger.Info("allocation unhealthy: "+reason, zap.String("deployment_id", deploymentID),
				zap.Duration("healthy_deadline", s.deadline))
			ar.setHealth(deploymentID, false)
			return
		case <-healthyAt:
			if _, ok, mark := h.judge(s); ok && mark.same(armedFor) {
				ar.logger.Info("allocation healthy", zap.String("deployment_id", deploymentID),
					zap.Duration("min_healthy_time", s.minHealthy), zap.Bool("checks", s.checks))
				ar.setHealth(deploymentID, true)
				return
			}
			healthyAt, armed = nil, false
		}
	}
}

// judgeTaskHealth looks at the tasks that count for health: it returns a
// reason when the alloc is unhealthy, whether every task that should run
// is running, and the latest of their start times. Poststop tasks do not
// count (they run only after the others); a prestart or poststart task
// that is not a sidecar counts once it finished successfully.
func judgeTaskHealth(tasks []*taskRunner) (unhealthy string, allRunning bool, latest time.Time) {
	allRunning = true
	for _, tr := range tasks {
		lc := tr.task.Lifecycle
		if lc != nil && lc.Hook == structs.TaskLifecycleHookPoststop {
			continue
		}
		st := tr.State()
		ephemeral := lc != nil && !lc.Sidecar
		switch {
		case st.Failed:
			return "task " + tr.task.Name + " failed", false, latest
		case st.State == structs.TaskStateDead && ephemeral:
			continue
		case st.State == structs.TaskStateDead:
			return "task " + tr.task.Name + " is dead", false, latest
		case st.State != structs.TaskStateRunning:
			allRunning = false
		case st.StartedAt.After(latest):
			latest = st.StartedAt
		}
	}
	return "", allRunning, latest
}
