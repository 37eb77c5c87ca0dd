package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// cluster is one server and some clients, each a `drover agent`
// subprocess with its own data dir.
type cluster struct {
	t       *testing.T
	dir     string
	server  *agentProc
	clients map[string]*agentProc // by node name
	c       *api.Client
}

// startProc starts `drover agent` with args and returns it without
// waiting for readiness.
func startProc(t *testing.T, dataDir string, args ...string) *agentProc {
	t.Helper()
	return launch(t, dataDir, append([]string{"agent", "-data-dir", dataDir, "-log-level", "debug"}, args...)...)
}

// newCluster starts a server with a short heartbeat TTL.
func newCluster(t *testing.T, ttl time.Duration) *cluster {
	t.Helper()
	cl := &cluster{t: t, dir: t.TempDir(), clients: map[string]*agentProc{}}
	cl.server = startProc(t, filepath.Join(cl.dir, "server"), "-server", "-http-addr", anyPort, "-heartbeat-ttl", ttl.String())
	cl.server.waitAddr()
	cl.c = cl.server.client()
	waitFor(t, 20*time.Second, "the server's API", func() bool {
		_, _, err := cl.c.Nodes().List(nil)
		return err == nil
	})
	return cl
}

// addClient starts a client agent named name and waits for its node to
// be ready.
func (cl *cluster) addClient(name string) *agentProc {
	cl.t.Helper()
	// Registered first, so it runs after the agent is stopped: a client
	// outside dev mode leaves its tasks running when it stops.
	cl.t.Cleanup(func() { killProcsUnder(filepath.Join(cl.dir, name)) })
	a := startProc(cl.t, filepath.Join(cl.dir, name), "-client", "-servers", cl.server.addr, "-node-name", name, "-enable-raw-exec")
	cl.clients[name] = a
	waitFor(cl.t, 20*time.Second, "node "+name+" ready", func() bool { return cl.nodeStatus(name) == "ready" })
	return a
}

// restartClient starts the client name again on its data dir.
func (cl *cluster) restartClient(name string) *agentProc {
	cl.t.Helper()
	a := startProc(cl.t, filepath.Join(cl.dir, name), "-client", "-servers", cl.server.addr, "-node-name", name, "-enable-raw-exec")
	cl.clients[name] = a
	return a
}

func (cl *cluster) node(name string) *api.NodeListStub {
	nodes, _, err := cl.c.Nodes().List(nil)
	if err != nil {
		return nil
	}
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

func (cl *cluster) nodeStatus(name string) string {
	if n := cl.node(name); n != nil {
		return n.Status
	}
	return ""
}

// allocs returns the job's allocs (stubs).
func (cl *cluster) allocs(job string) []*api.AllocationListStub {
	stubs, _, err := cl.c.Jobs().Allocations(job, true, nil)
	if err != nil {
		cl.t.Fatalf("allocations of %s: %v", job, err)
	}
	return stubs
}

// running returns the job's allocs that run (desired run, client running)
// by node name.
func (cl *cluster) running(job string) map[string][]*api.AllocationListStub {
	out := map[string][]*api.AllocationListStub{}
	for _, a := range cl.allocs(job) {
		if a.DesiredStatus == "run" && a.ClientStatus == "running" {
			out[a.NodeName] = append(out[a.NodeName], a)
		}
	}
	return out
}

func countAll(m map[string][]*api.AllocationListStub) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

// killClientAndTasks kills a client agent and every process it started
// (its task supervisors and their tasks), as a machine dying would.
func (cl *cluster) killClientAndTasks(name string) {
	cl.clients[name].kill()
	killProcsUnder(filepath.Join(cl.dir, name))
}

// TestBlockedJobPlacedWhenClientJoins: a job that cannot be placed (one
// alloc per host, two wanted, one node) is blocked; a second client
// joining places the rest.
func TestBlockedJobPlacedWhenClientJoins(t *testing.T) {
	cl := newCluster(t, time.Second)
	cl.addClient("alpha")
	script := taskScript(t, cl.dir, "svc.sh", "while true; do sleep 1; done")
	job := serviceJob("spread", 2, script)
	job.TaskGroups[0].Constraints = []*api.Constraint{{Operand: "distinct_hosts", RTarget: "true"}}
	evalID := register(t, cl.c, job)
	waitFor(t, 20*time.Second, "one alloc running and the eval blocked", func() bool {
		ev, _, err := cl.c.Evaluations().Info(evalID, nil)
		return err == nil && ev.Status == "complete" && ev.BlockedEval != "" && countAll(cl.running("spread")) == 1
	})
	cl.addClient("beta")
	waitFor(t, 30*time.Second, "both allocs running, one per node", func() bool {
		r := cl.running("spread")
		return len(r["alpha"]) == 1 && len(r["beta"]) == 1
	})
}

// TestNodeLoss: a client dies with its tasks; after the heartbeat TTL its
// node is down, its allocs lost, and replacements run on the other node.
func TestNodeLoss(t *testing.T) {
	cl := newCluster(t, time.Second)
	cl.addClient("alpha")
	script := taskScript(t, cl.dir, "svc.sh", "while true; do sleep 1; done")
	register(t, cl.c, serviceJob("survivor", 2, script))
	waitFor(t, 30*time.Second, "both allocs on alpha", func() bool { return len(cl.running("survivor")["alpha"]) == 2 })
	cl.addClient("beta")
	var lost []string
	for _, a := range cl.running("survivor")["alpha"] {
		lost = append(lost, a.ID)
	}

	cl.killClientAndTasks("alpha")
	waitFor(t, 30*time.Second, "node alpha down", func() bool { return cl.nodeStatus("alpha") == "down" })
	waitFor(t, 30*time.Second, "alpha's allocs lost and replaced on beta", func() bool {
		for _, id := range lost {
			a, _, err := cl.c.Allocations().Info(id, nil)
			if err != nil || a.ClientStatus != "lost" || a.DesiredStatus != "stop" {
				return false
			}
		}
		return len(cl.running("survivor")["beta"]) == 2
	})
	if n := cl.nodeStatus("beta"); n != "ready" {
		t.Fatalf("the surviving node is %s", n)
	}
}

// TestDisconnectedClientReconnects: with max_client_disconnect, a client
// that stops heartbeating (its tasks still running) leaves its allocs
// "unknown" while replacements are placed; when it comes back within the
// window, the original alloc is kept and the replacement stopped.
func TestDisconnectedClientReconnects(t *testing.T) {
	cl := newCluster(t, time.Second)
	cl.addClient("alpha")
	script := taskScript(t, cl.dir, "svc.sh", "while true; do sleep 1; done")
	job := serviceJob("tolerant", 1, script)
	job.TaskGroups[0].Disconnect = &api.DisconnectStrategy{LostAfter: new(5 * time.Minute)}
	// A disconnected alloc is replaced after its reschedule delay (as in
	// Nomad); keep it short.
	job.TaskGroups[0].ReschedulePolicy = &api.ReschedulePolicy{Unlimited: new(true), Delay: new(5 * time.Second),
		DelayFunction: new("constant")}
	// No rolling-update strategy: an alloc of a running deployment is not
	// rescheduled (as in Nomad), and this test is about disconnects.
	job.Update = &api.UpdateStrategy{MaxParallel: new(0)}
	register(t, cl.c, job)
	waitFor(t, 30*time.Second, "the alloc running on alpha", func() bool { return len(cl.running("tolerant")["alpha"]) == 1 })
	cl.addClient("beta")
	original := cl.running("tolerant")["alpha"][0].ID

	cl.clients["alpha"].kill() // the agent dies; its task keeps running
	waitFor(t, 30*time.Second, "node alpha disconnected, alloc unknown, replacement on beta", func() bool {
		a, _, err := cl.c.Allocations().Info(original, nil)
		return cl.nodeStatus("alpha") == "disconnected" && err == nil && a.ClientStatus == "unknown" &&
			len(cl.running("tolerant")["beta"]) == 1
	})
	replacement := cl.running("tolerant")["beta"][0].ID

	cl.restartClient("alpha")
	waitFor(t, 30*time.Second, "the original kept and the replacement stopped", func() bool {
		orig, _, err1 := cl.c.Allocations().Info(original, nil)
		repl, _, err2 := cl.c.Allocations().Info(replacement, nil)
		return err1 == nil && err2 == nil && cl.nodeStatus("alpha") == "ready" &&
			orig.DesiredStatus == "run" && orig.ClientStatus == "running" && repl.DesiredStatus == "stop"
	})
}

// TestDrain: draining a node moves its allocs to the other node one at a
// time (migrate { max_parallel = 1 }); the drained node ends ineligible
// with no allocs.
func TestDrain(t *testing.T) {
	cl := newCluster(t, time.Second)
	cl.addClient("alpha")
	script := taskScript(t, cl.dir, "svc.sh", "while true; do sleep 1; done")
	job := serviceJob("mover", 3, script)
	job.TaskGroups[0].Migrate = &api.MigrateStrategy{MaxParallel: new(1), HealthCheck: new("task_states"),
		MinHealthyTime: new(time.Second), HealthyDeadline: new(time.Minute)}
	register(t, cl.c, job)
	waitFor(t, 30*time.Second, "3 allocs on alpha", func() bool { return len(cl.running("mover")["alpha"]) == 3 })
	cl.addClient("beta")
	alpha := cl.node("alpha")

	// Watch the drain: never fewer than count - max_parallel allocs running.
	stop := make(chan struct{})
	minRunning := make(chan int, 1)
	go func() {
		low := 3
		for {
			select {
			case <-stop:
				minRunning <- low
				return
			case <-time.After(100 * time.Millisecond):
				stubs, _, err := cl.c.Jobs().Allocations("mover", true, nil)
				if err != nil {
					continue
				}
				n := 0
				for _, a := range stubs {
					if a.ClientStatus == "running" && a.DesiredStatus == "run" {
						n++
					}
				}
				if n < low {
					low = n
				}
			}
		}
	}()
	if _, err := cl.c.Nodes().UpdateDrain(alpha.ID, &api.DrainSpec{Deadline: 10 * time.Minute}, false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "all allocs on beta and alpha's drain complete", func() bool {
		r := cl.running("mover")
		n, _, err := cl.c.Nodes().Info(alpha.ID, nil)
		return len(r["beta"]) == 3 && len(r["alpha"]) == 0 && err == nil && !n.Drain
	})
	close(stop)
	if low := <-minRunning; low < 2 {
		t.Fatalf("%d allocs running at the low point of the drain: more than max_parallel moved at once", low)
	}
	n, _, _ := cl.c.Nodes().Info(alpha.ID, nil)
	if n.SchedulingEligibility != "ineligible" {
		t.Fatalf("drained node eligibility %s", n.SchedulingEligibility)
	}
	nodeAllocs, _, _ := cl.c.Nodes().Allocations(alpha.ID, nil)
	for _, a := range nodeAllocs {
		if a.DesiredStatus == "run" && a.ClientStatus != "complete" {
			t.Fatalf("alloc %s still on the drained node: %s/%s", a.ID, a.DesiredStatus, a.ClientStatus)
		}
	}
}
