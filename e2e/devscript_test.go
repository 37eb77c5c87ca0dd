package e2e

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// devScript runs scripts/dev.sh (make dev / make dev-stop) with its state
// in dir, the agent on addr, and the binary under test.
func devScript(t *testing.T, dir, addr, action string, env ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("sh", "../scripts/dev.sh", action)
	cmd.Env = append(append(os.Environ(), "DROVER_DEV_DIR="+dir, "DROVER_DEV_ADDR="+addr, "DROVER_BIN="+droverBin), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestDevScript: `make dev` appends to the agent's log rather than
// truncating it (the log of a crashed agent survives the next start), and
// `make dev-stop` after a crash stops the tasks left behind without
// printing errors.
func TestDevScript(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dev")
	t.Cleanup(func() { killProcsUnder(dir) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	out, errOut, code := devScript(t, dir, addr, "start")
	if code != 0 {
		t.Fatalf("start: exit %d\n%s\n%s", code, out, errOut)
	}
	// The stop hint names the state directory make dev-stop must use.
	mustContain(t, out, "dev agent started", `The example job "hello" is running`, "(or: DROVER_DEV_DIR="+dir+" make dev-stop,")
	waitFor(t, 20*time.Second, "the example's tasks", func() bool { return len(tasksUnder(dir)) == 2 })

	// A crash: the agent dies, its tasks keep running.
	pidText, err := os.ReadFile(filepath.Join(dir, "agent.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the agent to die", func() bool {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err != nil || isZombie(string(st))
	})
	firstLog, _ := os.ReadFile(filepath.Join(dir, "agent.log"))

	out, errOut, code = devScript(t, dir, addr, "stop")
	if code != 0 || errOut != "" {
		t.Fatalf("stop after a crash: exit %d, stderr:\n%s\nstdout:\n%s", code, errOut, out)
	}
	mustContain(t, out, "is not running", "stopped tasks left by a crashed agent")
	waitFor(t, 20*time.Second, "the orphaned tasks to stop", func() bool { return len(tasksUnder(dir)) == 0 })

	// The next start keeps the crashed agent's log.
	out, errOut, code = devScript(t, dir, addr, "start")
	if code != 0 {
		t.Fatalf("second start: exit %d\n%s\n%s", code, out, errOut)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
	if !bytes.HasPrefix(log, firstLog) || len(log) <= len(firstLog) || bytes.Count(log, []byte("scripts/dev.sh starts the dev agent")) != 2 {
		t.Fatalf("the second start did not append to the log:\n%s", log)
	}
	// Another make dev on the address this one holds is refused: its job
	// would have gone to the agent already there.
	other := filepath.Join(t.TempDir(), "other")
	out, errOut, code = devScript(t, other, addr, "start")
	if code != 1 || !strings.Contains(errOut, "something already answers the API at http://"+addr) {
		t.Fatalf("start on a taken address: exit %d\n%s\n%s", code, out, errOut)
	}
	// An agent that does not stop (here: stopped by SIGSTOP) is reported,
	// its record kept, its tasks left alone.
	pidText, _ = os.ReadFile(filepath.Join(dir, "agent.pid"))
	pid, _ = strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = devScript(t, dir, addr, "stop", "DROVER_DEV_STOP_WAIT=1")
	syscall.Kill(pid, syscall.SIGCONT)
	if code != 1 || !strings.Contains(errOut, "did not stop within 1 s; it is still running, and the stop request stays pending") || strings.Contains(out, "stopped tasks left") {
		t.Fatalf("stop of a hung agent: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "agent.pid")); err != nil {
		t.Fatalf("the hung agent's record: %v", err)
	}

	out, errOut, code = devScript(t, dir, addr, "stop")
	if code != 0 || errOut != "" {
		t.Fatalf("stop: exit %d\n%s\n%s", code, out, errOut)
	}
	mustContain(t, out, "stopped; its tasks were stopped with it")
	out, errOut, code = devScript(t, dir, addr, "stop")
	if code != 0 || errOut != "" || !strings.Contains(out, "no dev agent running") {
		t.Fatalf("stop with nothing running: exit %d\n%s\n%s", code, out, errOut)
	}
}
