package nodeagent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/drivers/mock"
	"github.com/drover-sched/drover/structs"
)

func tmplBlock(dest, data, mode string) *structs.Template {
	return &structs.Template{DestPath: dest, EmbeddedTmpl: data, ChangeMode: mode, Perms: "0644",
		LeftDelim: "{{", RightDelim: "}}"}
}

// TestTemplateRendersBeforeStart: templates are rendered into the task
// dir before the task starts, with their perms; an env = true template's
// KEY=value lines are in the task's environment; env reads the task's
// environment (NOMAD_* included).
func TestTemplateRendersBeforeStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	guardProcesses(t, dir)
	cp := newFakeCP()
	startAgent(t, cp, testConfig(t, dir))
	task := shTask("work", `echo "$GREETING" > "$NOMAD_ALLOC_DIR/out"; cat local/app.conf >> "$NOMAD_ALLOC_DIR/out"`)
	env := tmplBlock("local/app.env", `GREETING="hello {{ env "NOMAD_ALLOC_INDEX" }}"`, structs.TemplateChangeModeRestart)
	env.Envvars = true
	conf := tmplBlock("${NOMAD_TASK_DIR}/app.conf", `job={{ env "NOMAD_JOB_NAME" | toUpper }}`, structs.TemplateChangeModeNoop)
	conf.Perms = "0600"
	task.Templates = []*structs.Template{env, conf}
	job := testJob(structs.JobTypeBatch, task)
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete))

	ad := NewAllocDir(filepath.Join(dir, "alloc"), alloc.ID)
	b, err := os.ReadFile(filepath.Join(ad.SharedDir(), "out"))
	if want := "hello 0\njob=" + strings.ToUpper(job.Name); err != nil || string(b) != want {
		t.Fatalf("task saw %q (%v), want %q", b, err, want)
	}
	fi, err := os.Stat(filepath.Join(ad.TaskDir("work").LocalDir, "app.conf"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("app.conf %v %v, want mode 0600", fi, err)
	}
}

// TestTemplateChangeModes: an in-place update that changes what the
// templates read renders them again; change_mode restart restarts its
// task, signal sends its change_signal, noop does nothing to the task;
// every file holds the new content.
func TestTemplateChangeModes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cp := newFakeCP()
	m := mock.New()
	startAgent(t, cp, mockAgentConfig(t, dir, m))
	body := `name={{ env "NOMAD_JOB_NAME" }}`
	r, s, n := mockTask("r", nil), mockTask("s", nil), mockTask("n", nil)
	r.Templates = []*structs.Template{tmplBlock("local/r.conf", body, structs.TemplateChangeModeRestart)}
	sig := tmplBlock("local/s.conf", body, structs.TemplateChangeModeSignal)
	sig.ChangeSignal = "SIGHUP"
	s.Templates = []*structs.Template{sig}
	n.Templates = []*structs.Template{tmplBlock("local/n.conf", body, structs.TemplateChangeModeNoop)}
	job := testJob(structs.JobTypeService, r, s, n)
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusRunning && len(a.TaskStates) == 3 &&
			a.TaskStates["r"].State == structs.TaskStateRunning && a.TaskStates["s"].State == structs.TaskStateRunning && a.TaskStates["n"].State == structs.TaskStateRunning
	})

	upd := alloc.Copy()
	upd.Job = job.Copy()
	upd.Job.Name = "renamed"
	upd.Job.Version++
	cp.addAlloc(upd)

	rep := cp.waitReport(t, alloc.ID, "r restarted", func(a *structs.Allocation) bool {
		st := a.TaskStates["r"]
		return st != nil && st.Restarts == 1 && st.State == structs.TaskStateRunning
	})
	waitFor(t, 10*time.Second, "SIGHUP to s", func() bool { return slices.Contains(m.Signals("s"), "SIGHUP") })
	if ev := findEvent(rep.TaskStates["r"], structs.TaskRestartSignal); ev == nil || ev.DisplayMessage != templateReason {
		t.Errorf("r: Restart Signaled %+v in %v", ev, eventTypes(rep.TaskStates["r"]))
	}
	if ev := findEvent(rep.TaskStates["r"], structs.TaskRestarting); ev == nil || ev.RestartReason != templateReason {
		t.Errorf("r: Restarting %+v", ev)
	}
	ad := NewAllocDir(filepath.Join(dir, "alloc"), alloc.ID)
	for _, task := range []string{"r", "s", "n"} {
		b, err := os.ReadFile(filepath.Join(ad.TaskDir(task).LocalDir, task+".conf"))
		if err != nil || string(b) != "name=renamed" {
			t.Errorf("%s.conf = %q %v", task, b, err)
		}
	}
	if m.Starts("r") != 2 || m.Starts("s") != 1 || m.Starts("n") != 1 || len(m.Signals("n")) != 0 || len(m.Signals("r")) != 0 {
		t.Errorf("starts r=%d s=%d n=%d, signals n=%v r=%v", m.Starts("r"), m.Starts("s"), m.Starts("n"), m.Signals("n"), m.Signals("r"))
	}
}

// TestTemplateFailures: a template that cannot render (a file outside
// the task's directories) fails the task before it starts, naming the
// template; so does a destination that escapes through a symlink.
func TestTemplateFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cp := newFakeCP()
	m := mock.New()
	startAgent(t, cp, mockAgentConfig(t, dir, m))
	task := mockTask("work", nil)
	task.Templates = []*structs.Template{tmplBlock("local/x", `{{ file "/etc/hostname" }}`, structs.TemplateChangeModeNoop)}
	alloc := testAlloc(testJob(structs.JobTypeBatch, task))
	cp.addAlloc(alloc)
	st := cp.waitReport(t, alloc.ID, "failed", hasStatus(structs.AllocClientStatusFailed)).TaskStates["work"]
	ev := findEvent(st, structs.TaskSetupFailure)
	if ev == nil || !strings.Contains(ev.SetupError, `template "local/x"`) || !strings.Contains(ev.SetupError, "escapes") || m.Starts("work") != 0 {
		t.Fatalf("Setup Failure %+v, starts %d", ev, m.Starts("work"))
	}
}

// TestTemplateWatchedAfterAgentRestart: a task re-attached by a restarted
// agent still has its templates watched: an in-place update then
// re-renders them and applies change_mode.
func TestTemplateWatchedAfterAgentRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cp := newFakeCP()
	a1 := startAgent(t, cp, mockAgentConfig(t, dir, mock.New()))
	task := mockTask("web", nil)
	task.Templates = []*structs.Template{tmplBlock("local/name", `{{ env "NOMAD_JOB_NAME" }}`, structs.TemplateChangeModeRestart)}
	job := testJob(structs.JobTypeService, task)
	alloc := testAlloc(job)
	cp.addAlloc(alloc)
	cp.waitReport(t, alloc.ID, "running", hasStatus(structs.AllocClientStatusRunning))
	a1.stop(t)

	m2 := mock.New()
	startAgent(t, cp, mockAgentConfig(t, dir, m2))
	cp.waitReport(t, alloc.ID, "re-attached", hasStatus(structs.AllocClientStatusRunning))
	upd := alloc.Copy()
	upd.Job = job.Copy()
	upd.Job.Name = "renamed"
	upd.Job.Version++
	cp.addAlloc(upd)
	rep := cp.waitReport(t, alloc.ID, "restarted by its template", func(a *structs.Allocation) bool {
		st := a.TaskStates["web"]
		return st != nil && st.Restarts == 1 && st.State == structs.TaskStateRunning
	})
	if findEvent(rep.TaskStates["web"], structs.TaskRestartSignal) == nil || m2.Starts("web") != 1 {
		t.Fatalf("events %v, starts %d", eventTypes(rep.TaskStates["web"]), m2.Starts("web"))
	}
	b, _ := os.ReadFile(filepath.Join(NewAllocDir(filepath.Join(dir, "alloc"), alloc.ID).TaskDir("web").LocalDir, "name"))
	if string(b) != "renamed" {
		t.Fatalf("rendered %q", b)
	}
}
