package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
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
	// The restarted task's running report may trail its log line: wait for
	// it, then the job must still have its one alloc (updated in place).
	waitFor(t, 30*time.Second, "the restarted alloc reported running", func() bool {
		return count(allocsByStatus(t, c, "tmpl-restart"), "run/running") == 1
	})
	if got := allocsByStatus(t, c, "tmpl-restart"); count(got, "run/running") != 1 || len(got) != 1 {
		t.Fatalf("the update was not in place: %v", got)
	}
}

// serveFile serves body at /path on 127.0.0.1 (a free port) and returns
// the URL.
func serveFile(t *testing.T, path string, body []byte) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String() + path
}

// TestArtifactsEndToEnd: with the real binary, an artifact is fetched from
// a local server with its checksum verified and the task reads it; one
// with a wrong checksum fails its task with a "Failed Artifact Download"
// event saying the checksums did not match.
func TestArtifactsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir, anyPort)
	c := a.client()
	body := []byte("artifact payload\n")
	sum := sha256.Sum256(body)
	src := serveFile(t, "/payload.txt", body)

	ok := rawExecTask("read", `cat local/payload.txt`)
	ok.Artifacts = []*api.TaskArtifact{{GetterSource: ptr(src), GetterOptions: map[string]string{"checksum": "sha256:" + hex.EncodeToString(sum[:])}}}
	good := api.NewBatchJob("artifact-ok", "artifact-ok", "global", 50)
	good.AddTaskGroup(noRestartGroup("g", ok))
	register(t, c, good)

	bad := rawExecTask("read", `cat local/payload.txt`)
	bad.Artifacts = []*api.TaskArtifact{{GetterSource: ptr(src), GetterOptions: map[string]string{"checksum": "sha256:" + strings.Repeat("ab", 32)}}}
	wrong := api.NewBatchJob("artifact-bad", "artifact-bad", "global", 50)
	wrong.AddTaskGroup(noRestartGroup("g", bad))
	register(t, c, wrong)

	waitFor(t, 60*time.Second, "artifact-ok complete", func() bool { return count(allocsByStatus(t, c, "artifact-ok"), "run/complete") == 1 })
	if out := taskLog(dir, onlyAlloc(t, c, "artifact-ok", "run/complete").ID, "read"); out != string(body) {
		t.Fatalf("task read %q", out)
	}
	waitFor(t, 60*time.Second, "artifact-bad failed", func() bool { return count(allocsByStatus(t, c, "artifact-bad"), "run/failed") == 1 })
	st := onlyAlloc(t, c, "artifact-bad", "run/failed").TaskStates["read"]
	ev := findEvt(st, "Failed Artifact Download")
	if ev == nil || !strings.Contains(ev.DisplayMessage, "Checksums did not match") || findEvt(st, "Started") != nil {
		t.Fatalf("Failed Artifact Download %+v; events %v", ev, eventSummary(st))
	}
}

// TestMaxRunDurationEndToEnd: with the real binary, a batch task that runs
// past its group's max_run_duration is killed and the alloc ends
// complete with Nomad's reason.
func TestMaxRunDurationEndToEnd(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir, anyPort)
	c := a.client()
	script := taskScript(t, dir, "forever.sh", `while true; do sleep 1; done`)
	task := api.NewTask("work", "raw_exec").SetConfig("command", script).
		Require(&api.Resources{CPU: ptr(100), MemoryMB: ptr(32)})
	job := api.NewBatchJob("mrd", "mrd", "global", 50)
	tg := noRestartGroup("g", task)
	tg.MaxRunDuration = ptr(2 * time.Second)
	job.AddTaskGroup(tg)
	register(t, c, job)
	waitFor(t, 60*time.Second, "mrd complete", func() bool { return count(allocsByStatus(t, c, "mrd"), "run/complete") == 1 })
	al := onlyAlloc(t, c, "mrd", "run/complete")
	ev := findEvt(al.TaskStates["work"], "Killing")
	if al.ClientDescription != "allocation exceeded max_run_duration" || ev == nil || ev.DisplayMessage != "allocation exceeded max_run_duration" {
		t.Fatalf("description %q, Killing %+v", al.ClientDescription, ev)
	}
	if len(procsWith(script)) != 0 {
		t.Fatal("the task still runs")
	}
}

// TestHostVolumesEndToEnd: with the real binary and -host-volume, a
// raw_exec task sees the volume at its destination inside its task dir
// (a symlink) and an exec task inside its chroot (a bind mount, read-only
// when the mount says so); a job asking for a volume the node lacks is
// not placed, with Nomad's filter reason.
func TestHostVolumesEndToEnd(t *testing.T) {
	dir := t.TempDir()
	vol := filepath.Join(dir, "vol")
	if err := os.MkdirAll(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(vol, 0o755)
	if err := os.WriteFile(filepath.Join(vol, "in.txt"), []byte("from the host volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, filepath.Join(dir, "data"), anyPort, "-host-volume", "shared="+vol)
	c := a.client()
	nodes, _, err := c.Nodes().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := c.Nodes().Info(nodes[0].ID, nil)
	if err != nil || n.HostVolumes["shared"] == nil || n.HostVolumes["shared"].Path != vol {
		t.Fatalf("node host volumes %+v %v", n.HostVolumes, err)
	}

	volJob := func(id string, task *api.Task, readOnly bool) *api.Job {
		task.VolumeMounts = []*api.VolumeMount{{Volume: ptr("v"), Destination: ptr("/data"), ReadOnly: ptr(readOnly)}}
		job := api.NewBatchJob(id, id, "global", 50)
		tg := noRestartGroup("g", task)
		tg.Volumes = map[string]*api.VolumeRequest{"v": {Name: "v", Type: "host", Source: "shared"}}
		job.AddTaskGroup(tg)
		return job
	}
	register(t, c, volJob("vol-raw", rawExecTask("read", `cat data/in.txt`), false))
	exec := os.Geteuid() == 0
	if exec {
		task := api.NewTask("read", "exec").SetConfig("command", "/bin/sh").
			SetConfig("args", []string{"-c", `cat /data/in.txt; echo; touch /data/new 2>/dev/null && echo rw || echo ro`}).
			Require(&api.Resources{CPU: ptr(100), MemoryMB: ptr(32)})
		register(t, c, volJob("vol-exec", task, true))
	}
	missing := volJob("vol-missing", rawExecTask("read", "true"), false)
	missing.TaskGroups[0].Volumes["v"].Source = "nope"
	register(t, c, missing)

	waitFor(t, 60*time.Second, "vol-raw complete", func() bool { return count(allocsByStatus(t, c, "vol-raw"), "run/complete") == 1 })
	if out := taskLog(filepath.Join(dir, "data"), onlyAlloc(t, c, "vol-raw", "run/complete").ID, "read"); out != "from the host volume" {
		t.Fatalf("raw_exec task read %q", out)
	}
	if exec {
		waitFor(t, 60*time.Second, "vol-exec complete", func() bool { return count(allocsByStatus(t, c, "vol-exec"), "run/complete") == 1 })
		if out := taskLog(filepath.Join(dir, "data"), onlyAlloc(t, c, "vol-exec", "run/complete").ID, "read"); out != "from the host volume\nro\n" {
			t.Fatalf("exec task printed %q", out)
		}
		if _, err := os.Stat(filepath.Join(vol, "new")); err == nil {
			t.Fatal("the read-only mount was written")
		}
	} else {
		t.Log("exec part skipped: the exec driver needs root")
	}
	waitFor(t, 30*time.Second, "vol-missing's placement failure", func() bool {
		evals, _, err := c.Jobs().Evaluations("vol-missing", nil)
		if err != nil {
			return false
		}
		for _, e := range evals {
			if m := e.FailedTGAllocs["g"]; m != nil && m.ConstraintFiltered["missing compatible host volumes"] == 1 {
				return true
			}
		}
		return false
	})
	if got := allocsByStatus(t, c, "vol-missing"); len(got) != 0 {
		t.Fatalf("vol-missing placed: %v", got)
	}
}

// TestScalingEndToEnd: with the real binary and Nomad's Go client, a
// group's scaling block is listed and read back as Nomad's scaling
// policy, and job scale is refused outside min..max (the CLI exits 1 with
// the reason) but allowed within.
func TestScalingEndToEnd(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t, dir, anyPort)
	c := a.client()
	script := taskScript(t, dir, "scaled.sh", `while true; do sleep 1; done`)
	task := api.NewTask("web", "raw_exec").SetConfig("command", script).Require(&api.Resources{CPU: ptr(100), MemoryMB: ptr(32)})
	job := api.NewServiceJob("scaled", "scaled", "global", 50)
	tg := api.NewTaskGroup("g", 1).AddTask(task)
	tg.Scaling = &api.ScalingPolicy{Min: ptr(int64(1)), Max: ptr(int64(2)), Policy: map[string]any{"cooldown": "1m"}}
	job.AddTaskGroup(tg)
	register(t, c, job)

	stubs, _, err := c.Scaling().ListPolicies(nil)
	if err != nil || len(stubs) != 1 || stubs[0].Target["Group"] != "g" {
		t.Fatalf("policies %+v %v", stubs, err)
	}
	p, _, err := c.Scaling().GetPolicy(stubs[0].ID, nil)
	if err != nil || *p.Min != 1 || *p.Max != 2 || p.Policy["cooldown"] != "1m" {
		t.Fatalf("policy %+v %v", p, err)
	}
	if _, _, err := c.Jobs().Scale("scaled", "g", ptr(3), "too many", false, nil, nil); err == nil || !strings.Contains(err.Error(), "greater than scaling policy maximum: 3 > 2") {
		t.Fatalf("scale to 3: %v", err)
	}
	out, code := cli(t, a.addr, "job", "scale", "-detach", "scaled", "g", "0")
	if code != 1 || !strings.Contains(out, "less than scaling policy minimum: 0 < 1") {
		t.Fatalf("drover job scale 0: exit %d: %s", code, out)
	}
	if _, _, err := c.Jobs().Scale("scaled", "g", ptr(2), "ok", false, nil, nil); err != nil {
		t.Fatalf("scale to 2: %v", err)
	}
	waitFor(t, 60*time.Second, "two running", func() bool { return count(allocsByStatus(t, c, "scaled"), "run/running") == 2 })
}
