package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// execBatchJob is an exec batch job: one task of script with memory MiB.
func execBatchJob(id, script string, memory int) *api.Job {
	job := api.NewBatchJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("work", "exec").
		SetConfig("command", "/bin/sh").
		SetConfig("args", []string{"-c", script}).
		Require(&api.Resources{CPU: ptr(100), MemoryMB: ptr(memory)})
	tg := api.NewTaskGroup("batch", 1).AddTask(task)
	tg.RestartPolicy = &api.RestartPolicy{Attempts: ptr(0), Mode: ptr("fail")}
	tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: ptr(0), Unlimited: ptr(false)}
	job.AddTaskGroup(tg)
	return job
}

func ptr[T any](v T) *T { return &v }

// TestExecBatchJobWithMemoryLimit: with the real binary, an exec batch job
// runs isolated (its own PIDs, as nobody, in its chroot) and completes;
// one over its memory limit fails with an OOM kill in its task event.
func TestExecBatchJobWithMemoryLimit(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("DROVER_REQUIRE_EXEC") == "1" {
			t.Fatal("the exec driver needs root")
		}
		t.Skip("the exec driver needs root")
	}
	dir := t.TempDir()
	a := startAgent(t, dir, anyPort)
	c := a.client()
	register(t, c, execBatchJob("exec-ok", `set -- /proc/[0-9]*; echo "$* $(id -u) $NOMAD_ALLOC_DIR" > /alloc/data/report`, 32))
	register(t, c, execBatchJob("exec-oom", `x=$(head -c 200000000 /dev/zero | tr '\0' x)`, 16))

	waitFor(t, 60*time.Second, "exec-ok complete", func() bool { return count(allocsByStatus(t, c, "exec-ok"), "run/complete") == 1 })
	ok := onlyAlloc(t, c, "exec-ok", "run/complete")
	b, err := os.ReadFile(filepath.Join(dir, "client", "alloc", ok.ID, "alloc", "data", "report"))
	if err != nil || strings.TrimSpace(string(b)) != "/proc/1 65534 /alloc" {
		t.Fatalf("report %q %v: want only its own PID, nobody, /alloc", b, err)
	}

	waitFor(t, 60*time.Second, "exec-oom failed", func() bool { return count(allocsByStatus(t, c, "exec-oom"), "run/failed") == 1 })
	st := onlyAlloc(t, c, "exec-oom", "run/failed").TaskStates["work"]
	ev := findEvt(st, "Terminated")
	if ev == nil || ev.Details["oom_killed"] != "true" || !strings.Contains(ev.DisplayMessage, "OOM Killed") {
		t.Fatalf("Terminated %+v; events %v", ev, eventSummary(st))
	}
}
