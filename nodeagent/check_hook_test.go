package nodeagent

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-sched/drover/drivers/mock"
	"github.com/drover-sched/drover/structs"
)

// healthServer is a local HTTP endpoint whose /health answers status.
type healthServer struct {
	srv    *httptest.Server
	status atomic.Int32
	hits   atomic.Int32
}

func newHealthServer(t *testing.T, status int) *healthServer {
	t.Helper()
	h := &healthServer{}
	h.status.Store(int32(status))
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(h.status.Load()))
		_, _ = w.Write([]byte("status " + strconv.Itoa(int(h.status.Load()))))
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *healthServer) port(t *testing.T) int {
	_, p, err := net.SplitHostPort(strings.TrimPrefix(h.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// withPort gives alloc a host port labelled label on 127.0.0.1.
func withPort(alloc *structs.Allocation, label string, port int) {
	alloc.AllocatedResources.Shared.Ports = append(alloc.AllocatedResources.Shared.Ports,
		structs.AllocatedPortMapping{Label: label, Value: port, HostIP: "127.0.0.1"})
}

// closedPort returns a local port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return p
}

func checkResults(t *testing.T, a *Agent, allocID string) map[string]*structs.CheckQueryResult {
	t.Helper()
	res, err := a.AllocChecks(context.Background(), allocID)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func resultByName(res map[string]*structs.CheckQueryResult, name string) *structs.CheckQueryResult {
	for _, r := range res {
		if r.Check == name {
			return r
		}
	}
	return nil
}

// waitersAt counts the fake clock's timers due at exactly at.
func (c *fakeClock) waitersAt(at time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, w := range c.waiters {
		if w.at.Equal(at) {
			n++
		}
	}
	return n
}

// checkStepper moves a fake clock one check interval at a time, each step
// waiting until the named running checks have run at the new time and
// set their next timers.
type checkStepper struct {
	t        *testing.T
	a        *Agent
	clk      *fakeClock
	allocID  string
	names    []string
	interval time.Duration
}

// settle waits until every named check has a result taken now and a
// timer for its next run.
func (s *checkStepper) settle() {
	s.t.Helper()
	waitFor(s.t, 20*time.Second, "checks "+strings.Join(s.names, ",")+" ran at the current time", func() bool {
		now := s.clk.Now()
		res := checkResults(s.t, s.a, s.allocID)
		for _, n := range s.names {
			r := resultByName(res, n)
			if r == nil || r.Status == structs.CheckStatusPending || r.Timestamp != now.Unix() {
				return false
			}
		}
		return s.clk.waitersAt(now.Add(s.interval)) >= len(s.names)
	})
}

func (s *checkStepper) step() {
	s.t.Helper()
	s.clk.Advance(s.interval)
	s.settle()
}

// checkedAlloc is a deployed service alloc (deployment d1) of one mock
// task with a group service "api" on port label "http".
func checkedAlloc(minHealthy, deadline time.Duration, checks ...*structs.ServiceCheck) *structs.Allocation {
	alloc := deployedAlloc(minHealthy, deadline, mockTask("web", map[string]any{}))
	alloc.Job.TaskGroups[0].Services = []*structs.Service{{Name: "api", PortLabel: "http", Provider: structs.ServiceProviderNomad, Checks: checks}}
	return alloc
}

// TestChecksGateDeploymentHealth: with health_check = "checks", an alloc
// whose task runs is not healthy while its http check fails, however
// long; once the check passes it is healthy after min_healthy_time of
// passing. A check with on_update = "ignore" (readiness) fails throughout
// without holding the deployment back. Results are served in Nomad's
// shape.
func TestChecksGateDeploymentHealth(t *testing.T) {
	t.Parallel()
	cp := newFakeCP()
	clk := newFakeClock()
	cfg := mockAgentConfig(t, t.TempDir(), mock.New())
	cfg.Clock = clk
	ta := startAgent(t, cp, cfg)
	hs := newHealthServer(t, http.StatusServiceUnavailable)

	alloc := checkedAlloc(2500*time.Millisecond, time.Hour,
		&structs.ServiceCheck{Name: "alive", Type: "http", Path: "/health", Interval: time.Second, Timeout: 2 * time.Second},
		&structs.ServiceCheck{Name: "ready", Type: "tcp", PortLabel: "closed", Interval: time.Second, Timeout: time.Second, OnUpdate: structs.OnUpdateIgnore})
	withPort(alloc, "http", hs.port(t))
	withPort(alloc, "closed", closedPort(t))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))

	st := &checkStepper{t: t, a: ta.Agent, clk: clk, allocID: alloc.ID, names: []string{"alive", "ready"}, interval: time.Second}
	st.settle()
	for range 6 {
		st.step()
	}
	res := checkResults(t, ta.Agent, alloc.ID)
	alive, ready := resultByName(res, "alive"), resultByName(res, "ready")
	if alive.Status != structs.CheckStatusFailure || alive.StatusCode != 503 || alive.Output != "status 503" ||
		alive.Mode != structs.CheckModeHealthiness || alive.Group != alloc.Name || alive.Service != "api" || alive.Task != "" ||
		alive.JobID != alloc.JobID || res[alive.ID] != alive {
		t.Fatalf("alive: %+v", alive)
	}
	if ready.Status != structs.CheckStatusFailure || ready.Mode != structs.CheckModeReadiness {
		t.Fatalf("ready: %+v", ready)
	}
	if got := health(cp.latest(alloc.ID)); got != "unset" {
		t.Fatalf("health with a failing check after 6s of running (min_healthy_time 2.5s): %s", got)
	}

	hs.status.Store(http.StatusOK)
	st.step() // passing from now
	st.step() // 1s of passing
	st.step() // 2s
	if got := health(cp.latest(alloc.ID)); got != "unset" {
		t.Fatalf("healthy before min_healthy_time of passing checks: %s", got)
	}
	clk.Advance(time.Second) // 3s > 2.5s
	cp.waitReport(t, alloc.ID, "healthy", hasHealth("healthy"))
	if r := resultByName(checkResults(t, ta.Agent, alloc.ID), "alive"); r.Status != structs.CheckStatusSuccess || r.StatusCode != 200 {
		t.Fatalf("alive after recovery: %+v", r)
	}
}

// TestChecksPastHealthyDeadlineUnhealthy: a check that never passes makes
// the alloc unhealthy at healthy_deadline; the same failing check is
// ignored when health_check = "task_states".
func TestChecksPastHealthyDeadlineUnhealthy(t *testing.T) {
	t.Parallel()
	cp := newFakeCP()
	clk := newFakeClock()
	cfg := mockAgentConfig(t, t.TempDir(), mock.New())
	cfg.Clock = clk
	ta := startAgent(t, cp, cfg)
	port := closedPort(t)
	check := func() *structs.ServiceCheck {
		return &structs.ServiceCheck{Name: "alive", Type: "tcp", Interval: time.Second, Timeout: time.Second}
	}
	byChecks := checkedAlloc(1500*time.Millisecond, 5500*time.Millisecond, check())
	withPort(byChecks, "http", port)
	byTasks := checkedAlloc(1500*time.Millisecond, 5500*time.Millisecond, check())
	byTasks.Job.TaskGroups[0].Update.HealthCheck = structs.UpdateHealthCheckTaskStates
	withPort(byTasks, "http", port)
	cp.addAlloc(byChecks)
	cp.addAlloc(byTasks)
	for _, a := range []*structs.Allocation{byChecks, byTasks} {
		cp.waitReport(t, a.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	}
	s1 := &checkStepper{t: t, a: ta.Agent, clk: clk, allocID: byChecks.ID, names: []string{"alive"}, interval: time.Second}
	s2 := &checkStepper{t: t, a: ta.Agent, clk: clk, allocID: byTasks.ID, names: []string{"alive"}, interval: time.Second}
	s1.settle()
	s2.settle()
	for range 2 {
		clk.Advance(time.Second)
		s1.settle()
		s2.settle()
	}
	cp.waitReport(t, byTasks.ID, "healthy by task states", hasHealth("healthy"))
	if got := health(cp.latest(byChecks.ID)); got != "unset" {
		t.Fatalf("health by checks with a failing check: %s", got)
	}
	for range 3 {
		clk.Advance(time.Second)
		s1.settle()
	}
	if got := health(cp.latest(byChecks.ID)); got != "unset" {
		t.Fatalf("health by checks before the deadline: %s", got)
	}
	clk.Advance(time.Second) // 6s > 5.5s
	cp.waitReport(t, byChecks.ID, "unhealthy at the deadline", hasHealth("unhealthy"))
	if r := resultByName(checkResults(t, ta.Agent, byTasks.ID), "alive"); r.Status != structs.CheckStatusFailure {
		t.Fatalf("the ignored check still runs and reports: %+v", r)
	}
}

// TestCheckRestartLimitAndGrace: a failing check with check_restart
// restarts its task after limit failures in a row, counting none in the
// grace period after the task (re)started; the restart goes through the
// restart policy, which fails the task once its attempts are used up.
func TestCheckRestartLimitAndGrace(t *testing.T) {
	t.Parallel()
	cp := newFakeCP()
	clk := newFakeClock()
	cfg := mockAgentConfig(t, t.TempDir(), mock.New())
	cfg.Clock = clk
	ta := startAgent(t, cp, cfg)

	job := testJob(structs.JobTypeService, mockTask("web", map[string]any{}))
	job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 1, Interval: time.Hour, Delay: 0, Mode: structs.RestartPolicyModeFail}
	job.TaskGroups[0].Tasks[0].Services = []*structs.Service{{Name: "api", PortLabel: "http", Provider: structs.ServiceProviderNomad,
		Checks: []*structs.ServiceCheck{{Name: "alive", Type: "tcp", Interval: time.Second, Timeout: time.Second,
			CheckRestart: &structs.CheckRestart{Limit: 3, Grace: 5 * time.Second}}}}}
	alloc := testAlloc(job)
	withPort(alloc, "http", closedPort(t))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))

	st := &checkStepper{t: t, a: ta.Agent, clk: clk, allocID: alloc.ID, names: []string{"alive"}, interval: time.Second}
	st.settle() // failure at 0s, in grace
	for range 4 {
		st.step() // 1s .. 4s: in grace
	}
	if r := cp.latest(alloc.ID).TaskStates["web"]; r.Restarts != 0 {
		t.Fatalf("restarted within the grace period: %d restarts", r.Restarts)
	}
	if r := resultByName(checkResults(t, ta.Agent, alloc.ID), "alive"); r.Task != "web" || r.Status != structs.CheckStatusFailure {
		t.Fatalf("result %+v", r)
	}
	st.step() // 5s: 1st counted
	st.step() // 6s: 2nd
	if r := cp.latest(alloc.ID).TaskStates["web"]; r.Restarts != 0 {
		t.Fatalf("restarted before the limit: %d restarts", r.Restarts)
	}
	clk.Advance(time.Second) // 7s: 3rd → restart
	rep := cp.waitReport(t, alloc.ID, "restarted by its check", func(a *structs.Allocation) bool {
		ts := a.TaskStates["web"]
		return ts != nil && ts.Restarts == 1 && ts.State == structs.TaskStateRunning
	})
	ev := findEvent(rep.TaskStates["web"], structs.TaskRestartSignal)
	if ev == nil || ev.RestartReason != `healthcheck: check "alive" unhealthy` {
		t.Fatalf("restart event %+v in %v", ev, eventTypes(rep.TaskStates["web"]))
	}
	if ev := findEvent(rep.TaskStates["web"], structs.TaskRestarting); ev == nil || ev.RestartReason != ReasonWithinPolicy {
		t.Fatalf("the restart did not go through the restart policy: %+v", ev)
	}

	// The grace period starts again with the new run; then the policy's
	// only attempt is used up: the task fails.
	st.settle()
	for range 4 {
		st.step()
	}
	if r := cp.latest(alloc.ID).TaskStates["web"]; r.Restarts != 1 || r.State != structs.TaskStateRunning {
		t.Fatalf("restarted again within the new grace period: %+v", r)
	}
	st.step()
	st.step()
	clk.Advance(time.Second)
	rep = cp.waitReport(t, alloc.ID, "failed once the attempts are used up", hasStatus(structs.AllocClientStatusFailed))
	if ev := findEvent(rep.TaskStates["web"], structs.TaskNotRestarting); ev == nil || !strings.Contains(ev.RestartReason, "Exceeded allowed attempts") {
		t.Fatalf("not restarting: %+v", ev)
	}
}

// TestScriptCheckRunsInTask: a script check runs its command in the task
// through the driver's exec (raw_exec: a real process); exit 0 passes, 1
// warns (passing with on_update = "ignore_warnings"), others fail.
func TestScriptCheckRunsInTask(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	clk := newFakeClock()
	cfg := testConfig(t, dir)
	cfg.Clock = clk
	cfg.DevMode = true
	ta := startAgent(t, cp, cfg)

	codeFile := filepath.Join(t.TempDir(), "code")
	writeCode := func(code string) {
		if err := os.WriteFile(codeFile, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeCode("0")
	task := shTask("web", "while true; do sleep 0.1; done")
	task.Services = []*structs.Service{{Name: "api", Provider: structs.ServiceProviderNomad, Checks: []*structs.ServiceCheck{{
		Name: "script", Type: "script", Command: "/bin/sh", Args: []string{"-c", `echo "in $NOMAD_TASK_NAME"; exit $(cat ` + codeFile + `)`},
		Interval: time.Second, Timeout: 5 * time.Second, OnUpdate: structs.OnUpdateIgnoreWarn}}}}
	alloc := testAlloc(testJob(structs.JobTypeService, task))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	st := &checkStepper{t: t, a: ta.Agent, clk: clk, allocID: alloc.ID, names: []string{"script"}, interval: time.Second}
	ar := ta.runner(alloc.ID)

	st.settle()
	r := resultByName(checkResults(t, ta.Agent, alloc.ID), "script")
	if r.Status != structs.CheckStatusSuccess || r.StatusCode != 0 || strings.TrimSpace(r.Output) != "in web" || r.Task != "web" {
		t.Fatalf("exit 0: %+v", r)
	}
	writeCode("1")
	st.step()
	if r := resultByName(checkResults(t, ta.Agent, alloc.ID), "script"); r.Status != structs.CheckStatusWarning || r.StatusCode != 1 {
		t.Fatalf("exit 1: %+v", r)
	}
	if _, ok := ar.checks.Passing(); !ok {
		t.Fatal("a warning does not pass with on_update = ignore_warnings")
	}
	writeCode("2")
	st.step()
	if r := resultByName(checkResults(t, ta.Agent, alloc.ID), "script"); r.Status != structs.CheckStatusFailure || r.StatusCode != 2 {
		t.Fatalf("exit 2: %+v", r)
	}
	if _, ok := ar.checks.Passing(); ok {
		t.Fatal("a failing script check passes")
	}
}

// TestCheckAddress: a check's port resolves from the group's network by
// label (the check's, else the service's), or as a number on the host's
// address; an unknown label is an error naming it.
func TestCheckAddress(t *testing.T) {
	alloc := &structs.Allocation{AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Ports: []structs.AllocatedPortMapping{{Label: "http", Value: 25000, To: 8080, HostIP: "10.0.0.5"}, {Label: "admin", Value: 25001, HostIP: "10.0.0.5"}}}}}
	svc := &structs.Service{Name: "api", PortLabel: "http"}
	for _, tc := range []struct {
		check, want, err string
	}{
		{"", "10.0.0.5:25000", ""},
		{"admin", "10.0.0.5:25001", ""},
		{"9090", "10.0.0.5:9090", ""},
		{"metrics", "", `port "metrics" is not a port label`},
	} {
		got, err := checkAddress(alloc, &allocCheck{service: svc, check: &structs.ServiceCheck{Name: "c", PortLabel: tc.check}})
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("port %q: %q %v, want %q %q", tc.check, got, err, tc.want, tc.err)
		}
	}
	if _, err := checkAddress(alloc, &allocCheck{service: &structs.Service{Name: "api"}, check: &structs.ServiceCheck{Name: "c"}}); err == nil {
		t.Error("no port anywhere resolved")
	}
}

// TestChecksResumeAfterAgentRestart: an agent restarted while the alloc
// runs re-attaches to the task and runs its checks again (real clock,
// real process): the new agent serves passing results, and the task was
// not restarted.
func TestChecksResumeAfterAgentRestart(t *testing.T) {
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	a1 := startAgent(t, cp, testConfig(t, dir))
	hs := newHealthServer(t, http.StatusOK)

	task := shTask("server", "while true; do sleep 0.1; done")
	task.Services = []*structs.Service{{Name: "api", PortLabel: "http", Provider: structs.ServiceProviderNomad,
		Checks: []*structs.ServiceCheck{{Name: "alive", Type: "http", Path: "/health", Interval: time.Second, Timeout: 2 * time.Second,
			CheckRestart: &structs.CheckRestart{Limit: 1}}}}}
	alloc := testAlloc(testJob(structs.JobTypeService, task))
	withPort(alloc, "http", hs.port(t))
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	passing := func(a *Agent) func() bool {
		return func() bool {
			r := resultByName(checkResults(t, a, alloc.ID), "alive")
			return r != nil && r.Status == structs.CheckStatusSuccess
		}
	}
	waitFor(t, 20*time.Second, "the check passing", passing(a1.Agent))
	a1.stop(t)

	a2 := startAgent(t, cp, testConfig(t, dir))
	cp.waitReport(t, alloc.ID, "restored alloc running", hasStatus(structs.AllocClientStatusRunning))
	hits := hs.hits.Load()
	waitFor(t, 20*time.Second, "the check passing under the new agent", func() bool {
		return hs.hits.Load() > hits && passing(a2.Agent)()
	})
	if st := cp.latest(alloc.ID).TaskStates["server"]; st.Restarts != 0 {
		t.Fatalf("the re-attached task was restarted: %+v", eventTypes(st))
	}
	cp.stopAlloc(alloc.ID)
	cp.waitReport(t, alloc.ID, "stopped", hasStatus(structs.AllocClientStatusComplete))
}
