package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// taskLog reads a task's stdout log in the dev agent's data dir.
func taskLog(dir, allocID, task string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "client", "alloc", allocID, "alloc", "logs", task+".stdout.0"))
	return string(b)
}

func rawExecTask(name, script string) *api.Task {
	return api.NewTask(name, "raw_exec").
		SetConfig("command", "/bin/sh").
		SetConfig("args", []string{"-c", script}).
		Require(&api.Resources{CPU: ptr(100), MemoryMB: ptr(32)})
}

func noRestartGroup(name string, tasks ...*api.Task) *api.TaskGroup {
	tg := api.NewTaskGroup(name, 1)
	for _, t := range tasks {
		tg.AddTask(t)
	}
	tg.RestartPolicy = &api.RestartPolicy{Attempts: ptr(0), Mode: ptr("fail")}
	tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: ptr(0), Unlimited: ptr(false)}
	return tg
}

// TestTemplatesEndToEnd: with the real binary, an env = true template's
// value is in the task's environment (the task prints it); a job update
// that changes what a change_mode restart template renders (in place:
// the job's name, which NOMAD_JOB_NAME carries) re-renders it and
// restarts the task, which then reads the new content.
func TestTemplatesEndToEnd(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir, anyPort)
	c := a.client()

	envTask := rawExecTask("hello", `echo "$GREETING"`)
	envTask.Templates = []*api.Template{{
		DestPath: ptr("local/app.env"), Envvars: ptr(true),
		EmbeddedTmpl: ptr(`GREETING=hello from {{ env "NOMAD_JOB_NAME" }} alloc {{ env "NOMAD_ALLOC_INDEX" }}`),
	}}
	batch := api.NewBatchJob("tmpl-env", "tmpl-env", "global", 50)
	batch.AddTaskGroup(noRestartGroup("g", envTask))
	register(t, c, batch)

	script := taskScript(t, dir, "tmpl-restart.sh", `cat local/name.txt; echo; while true; do sleep 1; done`)
	svcTask := api.NewTask("web", "raw_exec").SetConfig("command", script).
		Require(&api.Resources{CPU: ptr(100), MemoryMB: ptr(32)})
	svcTask.Templates = []*api.Template{{
		DestPath: ptr("local/name.txt"), ChangeMode: ptr("restart"), Splay: ptr(time.Duration(0)),
		EmbeddedTmpl: ptr(`{{ env "NOMAD_JOB_NAME" }}`),
	}}
	svc := api.NewServiceJob("tmpl-restart", "tmpl-restart", "global", 50)
	svc.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(svcTask))
	register(t, c, svc)

	waitFor(t, 60*time.Second, "tmpl-env complete", func() bool { return count(allocsByStatus(t, c, "tmpl-env"), "run/complete") == 1 })
	done := onlyAlloc(t, c, "tmpl-env", "run/complete")
	if out := taskLog(dir, done.ID, "hello"); out != "hello from tmpl-env alloc 0\n" {
		t.Fatalf("task printed %q", out)
	}

	waitFor(t, 60*time.Second, "tmpl-restart running", func() bool { return count(allocsByStatus(t, c, "tmpl-restart"), "run/running") == 1 })
	run := onlyAlloc(t, c, "tmpl-restart", "run/running")
	waitFor(t, 20*time.Second, "first render printed", func() bool { return taskLog(dir, run.ID, "web") == "tmpl-restart\n" })

	svc.Name = ptr("renamed")
	register(t, c, svc)
	waitFor(t, 60*time.Second, "the task restarted by its template", func() bool {
		al, _, err := c.Allocations().Info(run.ID, nil)
		return err == nil && al.TaskStates["web"] != nil && al.TaskStates["web"].Restarts == 1 &&
			strings.HasSuffix(taskLog(dir, run.ID, "web"), "renamed\n")
	})
	al, _, _ := c.Allocations().Info(run.ID, nil)
	ev := findEvt(al.TaskStates["web"], "Restart Signaled")
	if ev == nil || ev.DisplayMessage != "Template with change_mode restart re-rendered" {
		t.Fatalf("Restart Signaled %+v; events %v", ev, eventSummary(al.TaskStates["web"]))
	}
	if got := allocsByStatus(t, c, "tmpl-restart"); count(got, "run/running") != 1 || len(got) != 1 {
		t.Fatalf("the update was not in place: %v", got)
	}
}
