package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNodeAgentFigures measures the node agent's figures for the README
// (not a pass/fail test; skipped unless DROVER_FIGURES=1):
//
//	DROVER_FIGURES=1 go test -run TestNodeAgentFigures -v ./e2e/
//
// A server and one client agent (`drover agent -client`, polling every
// 1 s over the HTTP API) run 10 service allocs, placed one at a time; it
// reports the time from an alloc's commit (when the node's assignment
// index moves) to its task's start, then the client agent's memory once
// idle and its CPU time per idle second (one index poll, plus a heartbeat
// every TTL/3), and the task supervisors' memory.
func TestNodeAgentFigures(t *testing.T) {
	if os.Getenv("DROVER_FIGURES") != "1" {
		t.Skip("set DROVER_FIGURES=1 to measure")
	}
	cl := newCluster(t, 10*time.Second)
	client := cl.addClient("figures")
	script := taskScript(t, cl.dir, "idle.sh", "while true; do sleep 1; done")

	// Latency: one alloc at a time, at times unrelated to the poll ticks.
	var lat []time.Duration
	for i := 0; i < 10; i++ {
		id := "figures-" + strconv.Itoa(i)
		register(t, cl.c, serviceJob(id, 1, script))
		waitFor(t, 30*time.Second, id+" running", func() bool { return countAll(cl.running(id)) == 1 })
		stub := cl.allocs(id)[0]
		a, _, err := cl.c.Allocations().Info(stub.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		lat = append(lat, a.TaskStates["server"].StartedAt.Sub(time.Unix(0, a.CreateTime)))
		time.Sleep(time.Duration(137*(i+1)%1000) * time.Millisecond)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	t.Logf("assignment committed → task started (10 allocs one by one, poll interval 1 s): min %v, median %v, mean %v, max %v",
		lat[0].Round(time.Millisecond), lat[len(lat)/2].Round(time.Millisecond),
		(sum / time.Duration(len(lat))).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))

	pid := client.Cmd.Process.Pid
	time.Sleep(5 * time.Second) // settle
	const window = 30 * time.Second
	cpu0 := procCPU(t, pid)
	time.Sleep(window)
	cpu1 := procCPU(t, pid)
	mem := procMem(t, pid)
	perSecond := (cpu1 - cpu0) / time.Duration(window/time.Second)
	t.Logf("client agent idle with 10 running allocs: RSS %.1f MiB (anonymous %.1f MiB); CPU %v per idle second (= per poll) over %v",
		mem["Rss"]/1024, mem["Anonymous"]/1024, perSecond.Round(time.Microsecond), window)
	var rss, pss, anon float64
	sups := supervisorsUnder(filepath.Join(cl.dir, "figures"))
	for _, p := range sups {
		m := procMem(t, p)
		rss, pss, anon = rss+m["Rss"], pss+m["Pss"], anon+m["Anonymous"]
	}
	if n := float64(len(sups)); n > 0 {
		t.Logf("task supervisors: %d; per supervisor RSS %.1f MiB, PSS %.1f MiB, anonymous %.1f MiB (the binary's pages are shared)",
			len(sups), rss/1024/n, pss/1024/n, anon/1024/n)
	}
}

// procCPU returns the CPU time pid's threads have used (the sum of their
// schedstat, in ns).
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var total time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "schedstat"))
		if err != nil {
			continue // the thread is gone
		}
		ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
		if err == nil {
			total += time.Duration(ns)
		}
	}
	return total
}

// procMem returns pid's smaps_rollup figures in KiB (Rss, Pss, Anonymous...).
func procMem(t *testing.T, pid int) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64); err == nil {
			out[k] = n
		}
	}
	return out
}
