// Package e2e runs drover as its users do: the real binary as a
// subprocess (`drover agent -dev`), a real state file, real task
// processes, driven over the HTTP API with Nomad's own Go client.
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// droverBin is the binary built once for the whole package.
var droverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "drover-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	droverBin = filepath.Join(dir, "drover")
	build := exec.Command("go", "build", "-o", droverBin, "../cmd/drover")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build drover:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// anyPort asks the agent to bind a free port of its choosing; harness
// functions read the bound address from its banner, so that no other
// process can take the port between a probe and the bind.
const anyPort = "127.0.0.1:0"

// agentProc is a `drover agent -dev` subprocess.
type agentProc struct {
	t       *testing.T
	cmd     *exec.Cmd
	addr    string
	dataDir string
	log     *syncBuffer
	done    chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// apiAddr matches the agent's banner line naming the bound API address.
var apiAddr = regexp.MustCompile(`HTTP API: https?://(127\.0\.0\.1:\d+)`)

// waitAddr waits for the agent to print the address it bound.
func (a *agentProc) waitAddr() {
	a.t.Helper()
	waitFor(a.t, 20*time.Second, "the agent's API address", func() bool {
		if m := apiAddr.FindStringSubmatch(a.log.String()); m != nil {
			a.addr = m[1]
			return true
		}
		select {
		case <-a.done:
			a.t.Fatalf("agent exited:\n%s", a.log.String())
		default:
		}
		return false
	})
}

// startAgent starts the dev agent on addr (127.0.0.1:0 picks a free port,
// which the agent reports) with dataDir and waits until its API answers;
// extra flags are added to its command line.
func startAgent(t *testing.T, dataDir, addr string, extra ...string) *agentProc {
	t.Helper()
	a := &agentProc{t: t, addr: addr, dataDir: dataDir, log: &syncBuffer{}, done: make(chan struct{})}
	args := append([]string{"agent", "-dev", "-data-dir", dataDir, "-http-addr", addr, "-log-level", "debug"}, extra...)
	a.cmd = exec.Command(droverBin, args...)
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.cmd.Wait(); close(a.done) }()
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			t.Logf("agent log:\n%s", a.log.String())
		}
	})
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
func (a *agentProc) stop() {
	select {
	case <-a.done:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

// kill ends the agent with SIGKILL, as a crash: tasks keep running under
// their supervisors.
func (a *agentProc) kill() {
	_ = a.cmd.Process.Kill()
	<-a.done
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", within, what)
}

// procsWith returns the pids whose command line contains marker.
func procsWith(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, marker) && !strings.Contains(cmd, "task-supervisor") {
			if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && isZombie(string(st)) {
				continue
			}
			pids = append(pids, pid)
		}
	}
	return pids
}

func isZombie(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
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
