package nodeagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/nodeagent/checks"
	"github.com/drover-sched/drover/structs"
)

// minCheckInterval bounds how often a check runs, whatever its interval
// (job validation asks for at least a second too).
const minCheckInterval = time.Second

// allocCheck is one service check of the alloc, where it is declared.
type allocCheck struct {
	// id is the check's ID in results (checkID).
	id    string
	group string
	// task is the task of a task-level service; "" for a group service.
	task    string
	service *structs.Service
	check   *structs.ServiceCheck
	// execTask is the task a script check runs in.
	execTask string
	// onUpdate is the check's on_update (its own, else its service's,
	// else require_healthy).
	onUpdate string
}

// mode is the check's Nomad mode: readiness when on_update = "ignore".
func (c *allocCheck) mode() string {
	if c.onUpdate == structs.OnUpdateIgnore {
		return structs.CheckModeReadiness
	}
	return structs.CheckModeHealthiness
}

// passes reports whether status counts as passing for deployment health.
func (c *allocCheck) passes(status checks.Status) bool {
	return status == checks.Success || (status == checks.Warning && c.onUpdate == structs.OnUpdateIgnoreWarn)
}

// checkID is a check's stable ID: a hash of the alloc ID and where the
// check is declared (as Nomad derives its check IDs).
func checkID(allocID, group, task, service, check string) string {
	sum := sha256.Sum256([]byte(allocID + "\x00" + group + "\x00" + task + "\x00" + service + "\x00" + check))
	return hex.EncodeToString(sum[:16])
}

// allocChecks lists the checks of alloc's group services and its tasks'
// services, in declaration order.
func allocChecks(alloc *structs.Allocation) []*allocCheck {
	if alloc == nil || alloc.Job == nil {
		return nil
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil {
		return nil
	}
	var out []*allocCheck
	add := func(svc *structs.Service, task string) {
		for _, chk := range svc.Checks {
			if chk == nil {
				continue
			}
			c := &allocCheck{
				id:    checkID(alloc.ID, tg.Name, task, svc.Name, chk.Name),
				group: tg.Name, task: task, service: svc, check: chk,
				execTask: chk.TaskName, onUpdate: chk.OnUpdate,
			}
			if c.execTask == "" {
				c.execTask = task
			}
			if c.onUpdate == "" {
				c.onUpdate = svc.OnUpdate
			}
			if c.onUpdate == "" {
				c.onUpdate = structs.OnUpdateRequireHealthy
			}
			out = append(out, c)
		}
	}
	for _, svc := range tg.Services {
		if svc != nil {
			add(svc, "")
		}
	}
	for _, t := range tg.Tasks {
		for _, svc := range t.Services {
			if svc != nil {
				add(svc, t.Name)
			}
		}
	}
	return out
}

// groupHasHealthChecks reports whether tg has a check that counts for
// deployment health (on_update other than "ignore").
func groupHasHealthChecks(alloc *structs.Allocation) bool {
	for _, c := range allocChecks(alloc) {
		if c.mode() == structs.CheckModeHealthiness {
			return true
		}
	}
	return false
}

// checkAddress resolves the address an http or tcp check dials: the
// check's port (else its service's), a label of the group's network
// resolved to the alloc's host address and port, or a port number on the
// host's address (a service's own address, when set, is used instead of
// the host's for a number).
func checkAddress(alloc *structs.Allocation, c *allocCheck) (string, error) {
	label := c.check.PortLabel
	if label == "" {
		label = c.service.PortLabel
	}
	if label == "" {
		return "", fmt.Errorf("check %q: neither the check nor service %q names a port", c.check.Name, c.service.Name)
	}
	ar := alloc.AllocatedResources
	hostIP := ""
	if ar != nil {
		for _, p := range ar.Shared.Ports {
			if p.Label == label {
				return net.JoinHostPort(orLoopback(p.HostIP), strconv.Itoa(p.Value)), nil
			}
			if hostIP == "" {
				hostIP = p.HostIP
			}
		}
		for _, n := range ar.Shared.Networks {
			for _, p := range append(append([]structs.Port(nil), n.ReservedPorts...), n.DynamicPorts...) {
				if p.Label == label {
					return net.JoinHostPort(orLoopback(n.IP), strconv.Itoa(p.Value)), nil
				}
			}
			if hostIP == "" {
				hostIP = n.IP
			}
		}
	}
	port, err := strconv.Atoi(label)
	if err != nil || port <= 0 || port > 65535 {
		return "", fmt.Errorf("check %q: port %q is not a port label of the group's network", c.check.Name, label)
	}
	if c.service.Address != "" {
		hostIP = c.service.Address
	}
	return net.JoinHostPort(orLoopback(hostIP), strconv.Itoa(port)), nil
}

func orLoopback(ip string) string {
	if ip == "" {
		return "127.0.0.1"
	}
	return ip
}

// checkState is what the hook keeps of one check between runs.
type checkState struct {
	result *structs.CheckQueryResult
	// failures counts the check's failures in a row, for check_restart.
	failures int
	// started is the task start the state belongs to; seenAt is when the
	// hook first saw it (check_restart's grace counts from then).
	started time.Time
	seenAt  time.Time
}

// checksHook runs the alloc's service checks (Nomad's native checks):
// each check every interval, while the task it belongs to runs (a group
// service's check while any task runs), its latest result kept for
// GET /v1/client/allocation/:id/checks. A check with check_restart
// restarts its task (a group service's: the script check's task, else
// every running task) after limit failures in a row, counting none in the
// grace period after the task (re)started, through the restart policy.
// Whether the checks that count for health pass, and since when, is what
// the health hook asks of it. One goroutine per check writes its state;
// the hook's lock guards it.
type checksHook struct {
	ar *allocRunner

	// opMu serializes start and stop.
	opMu sync.Mutex
	mu   sync.Mutex
	// defs are the checks being run.
	defs   []*allocCheck
	states map[string]*checkState
	// passingSince is when every check counting for health last started
	// to pass (zero while one does not).
	passingSince time.Time
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	kicks        []chan struct{}
}

func newChecksHook(ar *allocRunner) *checksHook {
	return &checksHook{ar: ar, states: map[string]*checkState{}}
}

func (*checksHook) Name() string { return "checks" }

// Prerun starts the checks (they wait for their tasks to run).
func (h *checksHook) Prerun(context.Context) error {
	h.start(h.ar.Alloc())
	return nil
}

// Update runs the checks of the new job version when they changed (an
// in-place update), and stops them when the server stopped the alloc: a
// task being stopped must not be restarted by its failing checks.
func (h *checksHook) Update(alloc *structs.Allocation) error {
	if alloc.ServerTerminalStatus() {
		h.stop()
		return nil
	}
	next := allocChecks(alloc)
	h.mu.Lock()
	same := sameChecks(h.defs, next)
	h.mu.Unlock()
	if !same {
		h.start(alloc)
	}
	return nil
}

// TaskStatesChanged wakes the check goroutines: a task started, restarted
// or stopped.
func (h *checksHook) TaskStatesChanged() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range h.kicks {
		select {
		case k <- struct{}{}:
		default:
		}
	}
}

// Postrun stops the checks: every task is dead. Their last results stay.
func (h *checksHook) Postrun() error {
	h.stop()
	return nil
}

// Destroy stops the checks.
func (h *checksHook) Destroy() error {
	h.stop()
	return nil
}

// Shutdown stops the checks when the agent stops.
func (h *checksHook) Shutdown() { h.stop() }

// Results returns a copy of the checks' latest results by check ID
// (pending for a check that has not run yet).
func (h *checksHook) Results() map[string]*structs.CheckQueryResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]*structs.CheckQueryResult, len(h.states))
	for id, st := range h.states {
		r := *st.result
		out[id] = &r
	}
	return out
}

// Passing reports whether every check that counts for health passes now
// and, when it does, since when (on the agent's clock). With no such
// check it reports true and the zero time.
func (h *checksHook) Passing() (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	counted := false
	for _, c := range h.defs {
		if c.mode() == structs.CheckModeHealthiness {
			counted = true
			break
		}
	}
	if !counted {
		return time.Time{}, true
	}
	return h.passingSince, !h.passingSince.IsZero()
}

// sameChecks reports whether two check lists are the same checks with the
// same settings.
func sameChecks(a, b []*allocCheck) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].id != b[i].id || a[i].onUpdate != b[i].onUpdate || a[i].execTask != b[i].execTask ||
			a[i].service.PortLabel != b[i].service.PortLabel || a[i].service.Address != b[i].service.Address ||
			!reflect.DeepEqual(a[i].check, b[i].check) {
			return false
		}
	}
	return true
}

func (h *checksHook) stop() {
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.stopLocked()
}

func (h *checksHook) stopLocked() {
	h.mu.Lock()
	cancel := h.cancel
	h.cancel, h.kicks = nil, nil
	h.mu.Unlock()
	if cancel != nil {
		cancel()
		h.wg.Wait()
	}
}

// start (re)starts one goroutine per check of alloc, keeping the results
// of checks that stay.
func (h *checksHook) start(alloc *structs.Allocation) {
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.stopLocked()
	defs := allocChecks(alloc)
	ctx, cancel := context.WithCancel(context.Background())
	h.mu.Lock()
	h.defs = defs
	keep := map[string]*checkState{}
	for _, c := range defs {
		st := h.states[c.id]
		if st == nil {
			st = &checkState{result: h.pendingResult(alloc, c)}
		}
		keep[c.id] = st
	}
	h.states = keep
	h.updatePassingLocked()
	h.cancel = cancel
	h.kicks = nil
	for _, c := range defs {
		kick := make(chan struct{}, 1)
		h.kicks = append(h.kicks, kick)
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.run(ctx, alloc, c, kick)
		}()
	}
	h.mu.Unlock()
	if len(defs) > 0 {
		h.ar.logger.Debug("running service checks", zap.Int("checks", len(defs)))
	}
}

func (h *checksHook) pendingResult(alloc *structs.Allocation, c *allocCheck) *structs.CheckQueryResult {
	return &structs.CheckQueryResult{
		ID: c.id, Mode: c.mode(), Status: structs.CheckStatusPending,
		Timestamp: h.ar.agent.clock.Now().Unix(),
		Group:     alloc.Name, Task: c.task, Service: c.service.Name, Check: c.check.Name, JobID: alloc.JobID,
	}
}

// target returns the task runners whose runs the check follows: its
// service's task, a group script check's task, else every task but the
// poststop ones.
func (h *checksHook) target(c *allocCheck) []*taskRunner {
	var out []*taskRunner
	for _, tr := range h.ar.taskList() {
		switch {
		case c.execTask != "":
			if tr.task.Name == c.execTask {
				out = append(out, tr)
			}
		case !isPoststopTask(tr.task):
			out = append(out, tr)
		}
	}
	return out
}

// targetStarted returns the latest start of the check's running target
// tasks, and whether one runs.
func (h *checksHook) targetStarted(c *allocCheck) (time.Time, bool) {
	var latest time.Time
	running := false
	for _, tr := range h.target(c) {
		st := tr.State()
		if st.State != structs.TaskStateRunning {
			continue
		}
		running = true
		if st.StartedAt.After(latest) {
			latest = st.StartedAt
		}
	}
	return latest, running
}

// run is one check's loop: wait for its task to run, run the check, keep
// its result, wait its interval (cut short when the task restarts or
// stops).
func (h *checksHook) run(ctx context.Context, alloc *structs.Allocation, c *allocCheck, kick <-chan struct{}) {
	clock := h.ar.agent.clock
	interval := max(c.check.Interval, minCheckInterval)
	logger := h.ar.logger.With(zap.String("check", c.check.Name), zap.String("service", c.service.Name))
	for ctx.Err() == nil {
		started, running := h.targetStarted(c)
		if !running {
			h.observe(alloc, c, time.Time{}, false)
			select {
			case <-ctx.Done():
				return
			case <-kick:
			}
			continue
		}
		h.observe(alloc, c, started, true)
		var res checks.Result
		if run, err := h.resolve(alloc, c); err != nil {
			res = checks.Result{Status: checks.Failure, Output: err.Error()}
		} else {
			res = checks.Run(ctx, run, h.execer(c))
		}
		if ctx.Err() != nil {
			return
		}
		if h.record(c, started, res) {
			h.restartTarget(logger, c)
		}
		timer := clock.After(interval)
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return
			case <-timer:
				waiting = false
			case <-kick:
				if s, ok := h.targetStarted(c); !ok || !s.Equal(started) {
					waiting = false
				}
			}
		}
	}
}

// observe notes the check's target start: a new start (or no running
// task) puts the check back to pending and its failure count to 0.
func (h *checksHook) observe(alloc *structs.Allocation, c *allocCheck, started time.Time, running bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.states[c.id]
	if st == nil || (running && st.started.Equal(started) && !st.seenAt.IsZero()) {
		return
	}
	if !running && st.seenAt.IsZero() && st.result.Status == structs.CheckStatusPending {
		return
	}
	st.result = h.pendingResult(alloc, c)
	st.failures = 0
	st.started = started
	st.seenAt = time.Time{}
	if running {
		st.seenAt = h.ar.agent.clock.Now()
	}
	h.updatePassingLocked()
	h.ar.healthKick()
}

// resolve builds the run of c against alloc: the error says why its port
// does not resolve.
func (h *checksHook) resolve(alloc *structs.Allocation, c *allocCheck) (*checks.Check, error) {
	chk := c.check
	run := &checks.Check{
		Type: chk.Type, Protocol: chk.Protocol, Path: chk.Path, Method: chk.Method, Header: chk.Header,
		Body: chk.Body, TLSSkipVerify: chk.TLSSkipVerify, Command: chk.Command, Args: chk.Args, Timeout: chk.Timeout,
	}
	if chk.Type == checks.TypeHTTP || chk.Type == checks.TypeTCP {
		addr, err := checkAddress(alloc, c)
		if err != nil {
			return nil, err
		}
		run.Address = addr
	}
	return run, nil
}

// execer runs a script check in its task through the task's driver.
func (h *checksHook) execer(c *allocCheck) checks.Execer {
	if c.check.Type != checks.TypeScript {
		return nil
	}
	return func(ctx context.Context, cmd []string) (*checks.ExecResult, error) {
		tr, err := taskRunnerOf(h.ar, c.execTask)
		if err != nil {
			return nil, err
		}
		d, id, err := tr.runningLaunch()
		if err != nil {
			return nil, err
		}
		if !d.Capabilities().Exec {
			return nil, fmt.Errorf("driver %s of task %q cannot run commands in it", d.Name(), c.execTask)
		}
		res, err := d.Exec(ctx, id, cmd)
		if err != nil {
			return nil, execError(c.execTask, err)
		}
		return &checks.ExecResult{Output: append(append([]byte(nil), res.Stdout...), res.Stderr...), ExitCode: res.ExitCode}, nil
	}
}

// record keeps a run's result and reports whether check_restart asks for
// the target to restart (limit failures in a row past the grace period).
func (h *checksHook) record(c *allocCheck, started time.Time, res checks.Result) bool {
	now := h.ar.agent.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.states[c.id]
	if st == nil || !st.started.Equal(started) {
		return false // the checks were replaced, or the task restarted meanwhile
	}
	prev := st.result.Status
	r := *st.result
	r.Status, r.StatusCode, r.Output, r.Timestamp = string(res.Status), res.StatusCode, res.Output, now.Unix()
	st.result = &r
	if prev != r.Status {
		h.ar.logger.Debug("check status changed", zap.String("check", c.check.Name), zap.String("status", r.Status),
			zap.String("output", truncate(r.Output, 200)))
	}
	h.updatePassingLocked()
	h.ar.healthKick()
	cr := c.check.CheckRestart
	if cr == nil || cr.Limit <= 0 {
		return false
	}
	failing := res.Status == checks.Failure || (res.Status == checks.Warning && !cr.IgnoreWarnings)
	switch {
	case !failing:
		st.failures = 0
	case now.Before(st.seenAt.Add(cr.Grace)):
		// In the grace period after a (re)start: not counted.
	default:
		st.failures++
	}
	if st.failures < cr.Limit {
		return false
	}
	st.failures = 0
	return true
}

// updatePassingLocked recomputes passingSince (h.mu held).
func (h *checksHook) updatePassingLocked() {
	all := true
	for _, c := range h.defs {
		if c.mode() != structs.CheckModeHealthiness {
			continue
		}
		st := h.states[c.id]
		if st == nil || !c.passes(checks.Status(st.result.Status)) {
			all = false
			break
		}
	}
	switch {
	case !all:
		h.passingSince = time.Time{}
	case h.passingSince.IsZero():
		h.passingSince = h.ar.agent.clock.Now()
	}
}

// restartTarget restarts the check's target tasks through their restart
// policy, as Nomad's check_restart does.
func (h *checksHook) restartTarget(logger *zap.Logger, c *allocCheck) {
	for _, tr := range h.target(c) {
		if tr.State().State != structs.TaskStateRunning {
			continue
		}
		logger.Info("check unhealthy: restarting task", zap.String("task", tr.task.Name),
			zap.Int("limit", c.check.CheckRestart.Limit))
		if err := tr.restartForFailure(checkRestartEvent(c.check.Name)); err != nil {
			logger.Debug("check restart not carried out", zap.String("task", tr.task.Name), zap.Error(err))
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
