package proc

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/chaos"
	"github.com/drover-sched/drover/internal/proctest"
)

// cluster is one `drover agent -server` and a few `drover agent -client`
// processes, each with its own data dir under dir, every one of them
// restartable on its data dir (the server on the same address, so that
// the clients find it again).
type cluster struct {
	t    testing.TB
	dir  string
	addr string // the server's HTTP address, fixed by its first start
	api  *api.Client
	// sleeper is the path of the tasks' sleep binary (a link under dir,
	// so that every task process names dir in its command line, even
	// one whose supervisor is gone).
	sleeper string
	// runLog gets one line per task start: the alloc's ID.
	runLog string

	mu      sync.Mutex
	server  *proctest.Proc
	clients []*client
	// logs are the outputs of every process started, by role, in order.
	logs map[string][]*proctest.Proc
}

// client is one node agent process.
type client struct {
	name, dir string
	p         *proctest.Proc
	// stopped: SIGSTOPped by a stop-client fault still in progress.
	stopped bool
	nodeID  string
}

// newCluster starts the server and n clients and waits for the clients'
// nodes to be ready with the capacity asked of them.
func newCluster(t testing.TB, n int) (*cluster, error) {
	dir := t.TempDir()
	cl := &cluster{t: t, dir: dir, addr: "127.0.0.1:0", sleeper: filepath.Join(dir, "sleeper"),
		runLog: filepath.Join(dir, "runs.log"), logs: map[string][]*proctest.Proc{}}
	// Registered first, so it runs last: nothing started here outlives
	// the test, agents, supervisors or tasks.
	t.Cleanup(cl.destroy)
	sleep, err := lookSleep()
	if err != nil {
		return nil, err
	}
	if err := os.Symlink(sleep, cl.sleeper); err != nil {
		return nil, fmt.Errorf("link the tasks' sleep binary: %w", err)
	}
	if err := cl.startServer(); err != nil {
		return nil, err
	}
	cfg := api.DefaultConfig()
	cfg.Address = "http://" + cl.addr
	cfg.HttpClient = &http.Client{Timeout: 15 * time.Second}
	if cl.api, err = api.NewClient(cfg); err != nil {
		return nil, fmt.Errorf("api client: %w", err)
	}
	for i := range n {
		c := &client{name: fmt.Sprintf("node%d", i), dir: filepath.Join(dir, fmt.Sprintf("node%d", i))}
		cl.clients = append(cl.clients, c)
		if err := cl.startClient(c); err != nil {
			return nil, err
		}
	}
	// The clients' resource flags are what their nodes offer.
	ok := proctest.Poll(30*time.Second, func() bool {
		nodes, _, err := cl.api.Nodes().List(nil)
		if err != nil || len(nodes) != n {
			return false
		}
		for _, s := range nodes {
			if s.Status != "ready" {
				return false
			}
		}
		for _, s := range nodes {
			for _, c := range cl.clients {
				if c.name == s.Name {
					c.nodeID = s.ID
				}
			}
		}
		return true
	})
	if !ok {
		return nil, fmt.Errorf("the %d nodes did not all become ready in 30 s", n)
	}
	for _, c := range cl.clients {
		node, _, err := cl.api.Nodes().Info(c.nodeID, nil)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", c.name, err)
		}
		if r := node.NodeResources; r == nil || r.Cpu.CpuShares != chaos.NodeCPU || r.Memory.MemoryMB != chaos.NodeMemory {
			return nil, fmt.Errorf("node %s offers %+v, not the -cpu-total-compute %d and -memory-total-mb %d it was started with",
				c.name, r, chaos.NodeCPU, chaos.NodeMemory)
		}
	}
	return cl, nil
}

// lookSleep finds a sleep binary (coreutils') for the tasks.
func lookSleep() (string, error) {
	for _, p := range []string{"/bin/sleep", "/usr/bin/sleep"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no sleep binary in /bin or /usr/bin")
}

func (cl *cluster) start(role string, args ...string) (*proctest.Proc, error) {
	p, err := proctest.Start(droverBin, args...)
	if err != nil {
		return nil, err
	}
	cl.logs[role] = append(cl.logs[role], p)
	return p, nil
}

// startServer starts the server on its data dir (and, after its first
// start, on its first address) and waits until its API answers.
func (cl *cluster) startServer() error {
	p, err := cl.start("server", "agent", "-server", "-data-dir", filepath.Join(cl.dir, "server"), "-http-addr", cl.addr,
		"-heartbeat-ttl", heartbeatTTL.String(), "-log-level", "debug")
	if err != nil {
		return err
	}
	cl.server = p
	addr, err := p.WaitAddr(30 * time.Second)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	cl.addr = addr
	ok := proctest.Poll(30*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/v1/nodes")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if !ok {
		return fmt.Errorf("the server's API did not answer in 30 s")
	}
	return nil
}

// startClient starts node agent c on its data dir, with the raw_exec
// driver and the schedules' node capacity.
func (cl *cluster) startClient(c *client) error {
	p, err := cl.start(c.name, "agent", "-client", "-data-dir", c.dir, "-servers", cl.addr, "-node-name", c.name,
		"-enable-raw-exec", "-cpu-total-compute", fmt.Sprint(chaos.NodeCPU), "-memory-total-mb", fmt.Sprint(chaos.NodeMemory),
		"-log-level", "debug")
	if err != nil {
		return err
	}
	c.p, c.stopped = p, false
	return nil
}

// destroy ends every process the cluster started: the agents (continued
// first if stopped), then every supervisor and task under the data dirs;
// it fails the test if any process naming the cluster's dir survives.
func (cl *cluster) destroy() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.server != nil {
		cl.server.Kill()
	}
	for _, c := range cl.clients {
		if c.p != nil {
			_ = c.p.Cmd.Process.Signal(syscall.SIGCONT)
			c.p.Kill()
		}
	}
	var left []int
	ok := proctest.Poll(10*time.Second, func() bool {
		for _, c := range cl.clients {
			proctest.KillProcsUnder(c.dir)
		}
		left = procsNaming(cl.dir)
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return len(left) == 0
	})
	if !ok {
		cl.t.Errorf("processes of the cluster outlived it: %v", left)
	}
}

// procsNaming returns the live processes whose command line names dir.
func procsNaming(dir string) []int {
	return proctest.PidsWhere(func(_ int, cmdline string, _ int) bool { return strings.Contains(cmdline, dir) })
}

// allocOfSupervisor reads the alloc ID out of a supervisor's spec path
// (<client dir>/client/alloc/<alloc ID>/<task>/.drover/spec.json).
var allocOfSupervisor = regexp.MustCompile(`/alloc/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/`)

// taskProc is a task supervisor and the task processes under it.
type taskProc struct {
	node       string
	alloc      string
	supervisor int
	tasks      []int
}

// taskProcs lists each client's supervisors and their tasks, and the
// task processes (the sleeper) that no supervisor owns.
func (cl *cluster) taskProcs() (procs []taskProc, orphans []int) {
	owned := map[int]bool{}
	for _, c := range cl.clients {
		for _, sup := range proctest.SupervisorsUnder(c.dir) {
			tp := taskProc{node: c.name, supervisor: sup}
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", sup))
			if m := allocOfSupervisor.FindSubmatch(b); m != nil {
				tp.alloc = string(m[1])
			}
			tp.tasks = proctest.PidsWhere(func(_ int, _ string, ppid int) bool { return ppid == sup })
			for _, p := range tp.tasks {
				owned[p] = true
			}
			procs = append(procs, tp)
		}
	}
	for _, p := range proctest.PidsWhere(func(_ int, cmdline string, _ int) bool { return strings.HasPrefix(cmdline, cl.sleeper) }) {
		if !owned[p] {
			orphans = append(orphans, p)
		}
	}
	return procs, orphans
}

// saveLogs writes every process's output and the run's log under a new
// directory that outlives the test, and returns its path.
func (cl *cluster) saveLogs(seed uint64, run string) string {
	dir, err := os.MkdirTemp("", fmt.Sprintf("drover-chaos-proc-seed%d-", seed))
	if err != nil {
		return "(logs not saved: " + err.Error() + ")"
	}
	for role, ps := range cl.logs {
		var b strings.Builder
		for i, p := range ps {
			fmt.Fprintf(&b, "=== %s, start %d: %v\n%s\n", role, i+1, p.Cmd.Args, p.Log.String())
		}
		_ = os.WriteFile(filepath.Join(dir, role+".log"), []byte(b.String()), 0o644)
	}
	_ = os.WriteFile(filepath.Join(dir, "run.log"), []byte(run), 0o644)
	if b, err := os.ReadFile(cl.runLog); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "task-starts.log"), b, 0o644)
	}
	return dir
}
