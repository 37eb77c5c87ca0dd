package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/agent"
	"github.com/drover-sched/drover/nodeagent"
)

// TestMain lets the test binary be the task supervisor the in-process
// dev agents start (they re-execute their own executable, which is this
// binary, as "task-supervisor SPEC"), through the same command registry
// as the drover binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == nodeagent.SupervisorSubcommand {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// testAgent is an in-process dev agent (API, evaluator and one node with
// raw_exec) on a free port, stopped with its tasks at the end of the test.
type testAgent struct {
	addr   string
	client *api.Client
	// dir is the agent's data dir.
	dir string
}

// newTestAgent starts the agent; opts change its configuration (with
// ACLs or TLS on it does not wait for the node, which needs a token or a
// certificate to see).
func newTestAgent(t *testing.T, opts ...func(*agent.Config)) *testAgent {
	t.Helper()
	dir := t.TempDir()
	cfg := agent.Config{Dev: true, DataDir: dir, HTTPAddr: "127.0.0.1:0", PollInterval: 100 * time.Millisecond,
		NodeName: "test-node", Logger: zap.NewNop()}
	for _, o := range opts {
		o(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	select {
	case <-a.Ready():
	case err := <-done:
		t.Fatalf("agent stopped: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("agent not ready")
	}
	ta := &testAgent{addr: a.ListenAddr(), dir: dir}
	ccfg := api.DefaultConfig()
	ccfg.Address = "http://" + ta.addr
	if ta.client, err = api.NewClient(ccfg); err != nil {
		t.Fatal(err)
	}
	if cfg.ACLEnabled || cfg.TLS.Enabled() {
		return ta
	}
	waitFor(t, 20*time.Second, "the node to be ready", func() bool {
		nodes, _, err := ta.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	return ta
}

// result is what a command printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return "exit " + strconv.Itoa(r.code) + "\n--- stdout:\n" + r.stdout + "--- stderr:\n" + r.stderr
}

// run runs a command in-process against the agent: the -address flag is
// put right after the command's name.
func (ta *testAgent) run(t *testing.T, args ...string) result {
	t.Helper()
	return runCmd(t, withAddress(args, ta.addr)...)
}

// runCmd runs a command in-process and captures its output.
func runCmd(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// withAddress inserts -address=addr after the longest command name that
// args start with.
func withAddress(args []string, addr string) []string {
	cmds := commands(Meta{})
	n := 0
	for i := 1; i <= len(args) && i <= 3; i++ {
		if _, ok := cmds[strings.Join(args[:i], " ")]; ok {
			n = i
		}
	}
	out := append([]string{}, args[:n]...)
	out = append(out, "-address=http://"+addr)
	return append(out, args[n:]...)
}

// mustCode fails the test unless the command exited with code.
func mustCode(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("want exit %d, got %s", code, r)
	}
}

// mustContain fails the test unless s holds every want.
func mustContain(t *testing.T, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Fatalf("output lacks %q:\n%s", w, s)
		}
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeFile writes content to name in a new temporary directory and
// returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// serviceJobJSON is a small raw_exec service job (count allocs of a
// sleeping task) whose deployment becomes healthy fast.
func serviceJobJSON(id string, count int) string {
	return `{"Job": {"ID": "` + id + `", "Type": "service", "TaskGroups": [{"Name": "web", "Count": ` + strconv.Itoa(count) + `,
		"Update": {"MaxParallel": 1, "MinHealthyTime": 100000000, "HealthyDeadline": 20000000000, "ProgressDeadline": 30000000000},
		"Tasks": [{"Name": "server", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["300"]},
		"Resources": {"CPU": 100, "MemoryMB": 32}, "KillTimeout": 1000000000}]}]}}`
}

// allocsOf returns the job's allocations, waiting until there are n.
func (ta *testAgent) allocsOf(t *testing.T, jobID string, n int) []*api.AllocationListStub {
	t.Helper()
	var allocs []*api.AllocationListStub
	waitFor(t, 20*time.Second, "the job's allocations", func() bool {
		var err error
		allocs, _, err = ta.client.Jobs().Allocations(jobID, false, nil)
		return err == nil && len(allocs) == n
	})
	return allocs
}
