package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// The node agent's issue-5 behaviour with the real binary: kill -9 of the
// agent (tasks run on under their supervisors), restore, sticky disks and
// logs.

func lines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// onlyAlloc returns the job's single alloc in state desired/client.
func onlyAlloc(t *testing.T, c *api.Client, jobID, state string) *api.Allocation {
	t.Helper()
	ids := allocsByStatus(t, c, jobID)[state]
	if len(ids) != 1 {
		t.Fatalf("job %s: %d allocs %s", jobID, len(ids), state)
	}
	a, _, err := c.Allocations().Info(ids[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func eventSummary(st *api.TaskState) []string {
	var out []string
	for _, e := range st.Events {
		out = append(out, e.Type+"@"+time.Unix(0, e.Time).UTC().Format(time.RFC3339Nano))
	}
	return out
}

func findEvt(st *api.TaskState, typ string) *api.TaskEvent {
	for i := len(st.Events) - 1; i >= 0; i-- {
		if st.Events[i].Type == typ {
			return st.Events[i]
		}
	}
	return nil
}

// TestAgentKill9ReattachesService: kill -9 of the agent while a service
// alloc runs; the restarted agent re-attaches to the same process (no
// restart counted, events intact), really watches it (killed by hand, it
// is restarted per the restart policy), and stopping the job kills it.
func TestAgentKill9ReattachesService(t *testing.T) {
	dir := t.TempDir()
	data, addr := dir+"/data", anyPort
	a := startAgent(t, data, addr)
	c := a.client()
	runs := dir + "/runs"
	script := taskScript(t, dir, "svc.sh", `echo run >> "`+runs+`"; while true; do sleep 0.2; done`)
	job := serviceJob("reattach", 1, script)
	job.TaskGroups[0].RestartPolicy = &api.RestartPolicy{Attempts: new(2), Interval: new(time.Hour), Delay: new(time.Second), Mode: new("fail")}
	register(t, c, job)
	waitFor(t, 20*time.Second, "the alloc running", func() bool {
		return count(allocsByStatus(t, c, "reattach"), "run/running") == 1 && len(procsWith(script)) == 1
	})
	before := onlyAlloc(t, c, "reattach", "run/running")
	pid := procsWith(script)[0]

	a.kill()
	if got := procsWith(script); len(got) != 1 || got[0] != pid {
		t.Fatalf("task processes after kill -9 of the agent: %v, want [%d]", got, pid)
	}
	a = startAgent(t, data, addr)
	c = a.client()
	time.Sleep(1500 * time.Millisecond) // room for a wrong restore to start a second copy
	if got := procsWith(script); len(got) != 1 || got[0] != pid {
		t.Fatalf("task processes after restart: %v, want the same pid %d", got, pid)
	}
	if n := lines(runs); n != 1 {
		t.Fatalf("the task ran %d times", n)
	}
	after := onlyAlloc(t, c, "reattach", "run/running")
	bst, ast := before.TaskStates["server"], after.TaskStates["server"]
	if ast.Restarts != 0 || ast.State != "running" {
		t.Errorf("after re-attach: restarts %d state %s", ast.Restarts, ast.State)
	}
	if b, a := strings.Join(eventSummary(bst), " "), strings.Join(eventSummary(ast), " "); b != a {
		t.Errorf("events changed across the restart:\nbefore %s\nafter  %s", b, a)
	}

	// The restored task is watched: killed by hand, it is restarted.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the task restarted by the policy", func() bool {
		a, _, err := c.Allocations().Info(after.ID, nil)
		if err != nil {
			return false
		}
		st := a.TaskStates["server"]
		got := procsWith(script)
		return st.Restarts == 1 && st.State == "running" && len(got) == 1 && got[0] != pid
	})
	al, _, _ := c.Allocations().Info(after.ID, nil)
	st := al.TaskStates["server"]
	if term := findEvt(st, api.TaskTerminated); term == nil || term.Signal != int(syscall.SIGKILL) {
		t.Errorf("Terminated event %+v", term)
	}
	if r := findEvt(st, api.TaskRestarting); r == nil || r.RestartReason == "" {
		t.Errorf("Restarting event %+v", r)
	}

	if _, _, err := c.Jobs().Deregister("reattach", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the task gone after stop", func() bool {
		return len(procsWith(script)) == 0 && count(allocsByStatus(t, c, "reattach"), "stop/complete") == 1
	})
}

// TestAgentKill9BatchEndsWhileDown: batch tasks finish while the agent is
// dead: exit 0 → complete, exit 1 → failed with the exit code in the
// events; neither runs again.
func TestAgentKill9BatchEndsWhileDown(t *testing.T) {
	dir := t.TempDir()
	data, addr := dir+"/data", anyPort
	a := startAgent(t, data, addr)
	c := a.client()
	gate := dir + "/go"
	script := func(name, code string) string {
		return taskScript(t, dir, name+".sh", `echo run >> "`+dir+`/runs-`+name+`"
while [ ! -f "`+gate+`" ]; do sleep 0.1; done
exit `+code)
	}
	ok, bad := script("ok", "0"), script("bad", "1")
	register(t, c, batchJob("b-ok", ok))
	register(t, c, batchJob("b-bad", bad))
	waitFor(t, 20*time.Second, "both batch tasks running", func() bool {
		return len(procsWith(ok)) == 1 && len(procsWith(bad)) == 1 &&
			count(allocsByStatus(t, c, "b-ok"), "run/running") == 1 && count(allocsByStatus(t, c, "b-bad"), "run/running") == 1
	})

	a.kill()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the tasks to end while no agent runs", func() bool {
		return len(procsWith(ok)) == 0 && len(procsWith(bad)) == 0
	})
	a = startAgent(t, data, addr)
	c = a.client()
	waitFor(t, 20*time.Second, "complete and failed", func() bool {
		return count(allocsByStatus(t, c, "b-ok"), "run/complete") == 1 && count(allocsByStatus(t, c, "b-bad"), "run/failed") == 1
	})
	time.Sleep(time.Second) // room for a wrong restore to run them again
	if n, m := lines(dir+"/runs-ok"), lines(dir+"/runs-bad"); n != 1 || m != 1 {
		t.Errorf("runs: ok %d, bad %d; want 1 each", n, m)
	}
	st := onlyAlloc(t, c, "b-bad", "run/failed").TaskStates["main"]
	if term := findEvt(st, api.TaskTerminated); term == nil || term.ExitCode != 1 || !st.Failed {
		t.Errorf("failed task: %+v, events %v", st, eventSummary(st))
	}
	if findEvt(st, api.TaskNotRestarting) == nil {
		t.Errorf("no Not Restarting event: %v", eventSummary(st))
	}
	st = onlyAlloc(t, c, "b-ok", "run/complete").TaskStates["main"]
	if term := findEvt(st, api.TaskTerminated); term == nil || term.ExitCode != 0 || st.Failed {
		t.Errorf("complete task: %+v, events %v", st, eventSummary(st))
	}
}

// TestAgentCorruptStateFailsAlloc: the agent's state file is damaged while
// it is down: it starts anyway, kills what the lost alloc left running and
// reports the alloc failed with the reason.
func TestAgentCorruptStateFailsAlloc(t *testing.T) {
	dir := t.TempDir()
	data, addr := dir+"/data", anyPort
	a := startAgent(t, data, addr)
	c := a.client()
	script := taskScript(t, dir, "svc.sh", "while true; do sleep 0.2; done")
	register(t, c, serviceJob("corrupt", 1, script))
	waitFor(t, 20*time.Second, "running", func() bool {
		return count(allocsByStatus(t, c, "corrupt"), "run/running") == 1 && len(procsWith(script)) == 1
	})
	allocID := allocsByStatus(t, c, "corrupt")["run/running"][0]
	a.kill()
	state := filepath.Join(data, "client", "client", "state.db")
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("state file: %v", err)
	}
	if err := os.WriteFile(state, bytes.Repeat([]byte{0xab}, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	a = startAgent(t, data, addr)
	c = a.client()
	var al *api.Allocation
	waitFor(t, 20*time.Second, "the alloc failed", func() bool {
		al, _, _ = c.Allocations().Info(allocID, nil)
		return al != nil && al.ClientStatus == "failed"
	})
	if !strings.Contains(al.ClientDescription, "state") {
		t.Errorf("description %q does not give the reason", al.ClientDescription)
	}
	if got := procsWith(script); len(got) != 0 {
		t.Errorf("the lost alloc's task still runs: %v", got)
	}
}

// TestStickyDiskAndLogs: v1 → v2 destructive update of a group with
// ephemeral_disk { sticky = true }: v2 runs on the same node with v1's
// alloc/data; `drover alloc logs` shows each version's output.
func TestStickyDiskAndLogs(t *testing.T) {
	dir := t.TempDir()
	data, addr := dir+"/data", anyPort
	a := startAgent(t, data, addr)
	c := a.client()
	script := taskScript(t, dir, "sticky.sh", `echo "seen=$(cat "$NOMAD_ALLOC_DIR/data/file" 2>/dev/null)"
echo "$1" > "$NOMAD_ALLOC_DIR/data/file"
echo "to stderr $1" >&2
while true; do sleep 0.2; done`)
	sticky := func(version string) *api.Job {
		j := serviceJob("sticky", 1, script, version)
		j.TaskGroups[0].EphemeralDisk = &api.EphemeralDisk{Sticky: new(true), SizeMB: new(300)}
		return j
	}
	register(t, c, sticky("v1"))
	waitFor(t, 20*time.Second, "v1 running", func() bool {
		return count(allocsByStatus(t, c, "sticky"), "run/running") == 1 && len(procsWith(script+" v1")) == 1
	})
	v1 := allocsByStatus(t, c, "sticky")["run/running"][0]
	waitFor(t, 10*time.Second, "v1's output", func() bool {
		out, code := cli(t, a.addr, "alloc", "logs", v1[:8])
		return code == 0 && out == "seen=\n"
	})
	out, code := cli(t, a.addr, "alloc", "logs", "-stderr", v1, "server")
	if code != 0 || out != "to stderr v1\n" {
		t.Errorf("stderr: %d %q", code, out)
	}

	register(t, c, sticky("v2"))
	var v2 string
	waitFor(t, 30*time.Second, "v2 running in v1's place", func() bool {
		m := allocsByStatus(t, c, "sticky")
		if count(m, "run/running") != 1 || m["run/running"][0] == v1 {
			return false
		}
		v2 = m["run/running"][0]
		return len(procsWith(script+" v1")) == 0 && len(procsWith(script+" v2")) == 1
	})
	al, _, err := c.Allocations().Info(v2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if al.PreviousAllocation != v1 {
		t.Errorf("v2 replaces %q, want %q", al.PreviousAllocation, v1)
	}
	waitFor(t, 10*time.Second, "v2's output", func() bool {
		out, _ = cli(t, a.addr, "alloc", "logs", v2)
		return out != ""
	})
	if out != "seen=v1\n" {
		t.Errorf("v2 saw %q: v1's data did not move over", out)
	}
	b, err := os.ReadFile(filepath.Join(data, "client", "alloc", v2, "alloc", "data", "file"))
	if err != nil || string(b) != "v2\n" {
		t.Errorf("v2's data file %q %v", b, err)
	}

	// -tail and -f on a batch task that ends while followed.
	many := taskScript(t, dir, "many.sh", `i=0; while [ $i -lt 30 ]; do i=$((i+1)); echo "line $i"; done; sleep 1; echo last`)
	register(t, c, batchJob("many", many))
	var batch string
	waitFor(t, 20*time.Second, "the batch alloc", func() bool {
		m := allocsByStatus(t, c, "many")
		for _, k := range []string{"run/running", "run/complete"} {
			if len(m[k]) == 1 {
				batch = m[k][0]
			}
		}
		return batch != ""
	})
	out, code = cli(t, a.addr, "alloc", "logs", "-f", batch)
	if code != 0 || !strings.HasPrefix(out, "line 1\nline 2\n") || !strings.HasSuffix(out, "line 30\nlast\n") {
		t.Errorf("-f: %d %q", code, out)
	}
	out, code = cli(t, a.addr, "alloc", "logs", "-tail", "-n", "3", batch)
	if code != 0 || out != "line 29\nline 30\nlast\n" {
		t.Errorf("-tail -n 3: %d %q", code, out)
	}
	out, code = cli(t, a.addr, "alloc", "logs", "-tail", "-c", "5", batch)
	if code != 0 || out != "last\n" {
		t.Errorf("-tail -c 5: %d %q", code, out)
	}
	if _, code = cli(t, a.addr, "alloc", "logs", batch, "nope"); code == 0 {
		t.Error("logs of an unknown task succeeded")
	}
}
