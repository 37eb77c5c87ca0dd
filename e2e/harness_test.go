// Package e2e runs drover as its users do: the real binary as a
// subprocess (`drover agent -dev`), a real state file, real task
// processes, driven over the HTTP API with Nomad's own Go client.
package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/internal/proctest"
)

// droverBin is the binary built once for the whole package.
var droverBin string

func TestMain(m *testing.M) { os.Exit(proctest.MainWithDrover(m, &droverBin)) }

// anyPort asks the agent to bind a free port of its choosing; harness
// functions read the bound address from its banner, so that no other
// process can take the port between a probe and the bind.
const anyPort = "127.0.0.1:0"

// agentProc is a `drover agent` subprocess.
type agentProc struct {
	*proctest.Proc
	t       *testing.T
	addr    string
	dataDir string
}

// The shared harness of the suites that run the binary.
var (
	waitFor          = proctest.WaitFor
	isZombie         = proctest.IsZombie
	pidsWhere        = proctest.PidsWhere
	supervisorsUnder = proctest.SupervisorsUnder
	tasksUnder       = proctest.TasksUnder
	killProcsUnder   = proctest.KillProcsUnder
)

// launch starts `drover` with args as agent a, stopped when the test ends
// (its log logged when the test failed).
func launch(t *testing.T, dataDir string, args ...string) *agentProc {
	t.Helper()
	p, err := proctest.Start(droverBin, args...)
	if err != nil {
		t.Fatal(err)
	}
	a := &agentProc{Proc: p, t: t, dataDir: dataDir}
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			t.Logf("log of agent %v:\n%s", args, a.Log.String())
		}
	})
	return a
}

// waitAddr waits for the agent to print the address it bound.
func (a *agentProc) waitAddr() {
	a.t.Helper()
	addr, err := a.WaitAddr(20 * time.Second)
	if err != nil {
		a.t.Fatal(err)
	}
	a.addr = addr
}

// startAgent starts the dev agent on addr (127.0.0.1:0 picks a free port,
// which the agent reports) with dataDir and waits until its API answers;
// extra flags are added to its command line.
func startAgent(t *testing.T, dataDir, addr string, extra ...string) *agentProc {
	t.Helper()
	a := launch(t, dataDir, append([]string{"agent", "-dev", "-data-dir", dataDir, "-http-addr", addr, "-log-level", "debug"}, extra...)...)
	a.waitAddr()
	c := a.client()
	waitFor(t, 20*time.Second, "the agent's API and its node", func() bool {
		nodes, _, err := c.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	return a
}

func (a *agentProc) client() *api.Client {
	cfg := api.DefaultConfig()
	cfg.Address = "http://" + a.addr
	c, err := api.NewClient(cfg)
	if err != nil {
		a.t.Fatal(err)
	}
	return c
}

// stop ends the agent gracefully (SIGTERM): the dev agent stops its tasks.
func (a *agentProc) stop() { a.Stop(30 * time.Second) }

// kill ends the agent with SIGKILL, as a crash: tasks keep running under
// their supervisors.
func (a *agentProc) kill() { a.Kill() }

// procsWith returns the pids whose command line contains marker (task
// supervisors left out).
func procsWith(marker string) []int {
	return pidsWhere(func(_ int, cmdline string, _ int) bool {
		return strings.Contains(cmdline, marker) && !strings.Contains(cmdline, "task-supervisor")
	})
}

// killLeftovers kills any process still running marker (a failed test
// must not leave processes behind for the next one).
func killLeftovers(marker string) {
	for _, pid := range procsWith(marker) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// taskScript writes a shell script that runs until killed and returns its
// path, which marks its processes in /proc.
func taskScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killLeftovers(path) })
	return path
}
