package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// TestClientRoutesThroughServer: one server, one client (real binaries).
// Nomad's Go client drives every client route through the server, which
// forwards each to the client's own listener (the node's HTTPAddr):
// restart, signal, exec over the websocket, alloc and node stats, the fs
// family and logs. The client refuses a forged forward; a stopped client
// is a 502 naming its node.
func TestClientRoutesThroughServer(t *testing.T) {
	// Nomad's client tries a node's HTTPAddr first for exec, cat, readat
	// and logs; a timeout that cannot be met sends it to the server, so
	// that forwarding is what answers.
	saved := api.ClientConnTimeout
	api.ClientConnTimeout = time.Nanosecond
	t.Cleanup(func() { api.ClientConnTimeout = saved })

	cl := newCluster(t, 2*time.Second)
	cl.addClient("a")
	node := cl.node("a")
	script := taskScript(t, cl.dir, "svc.sh", `trap 'echo got-hup' HUP; echo started; while true; do sleep 0.2; done`)
	register(t, cl.c, serviceJob("routes", 1, script))
	var alloc *api.Allocation
	waitFor(t, 30*time.Second, "the alloc running", func() bool {
		r := cl.running("routes")["a"]
		if len(r) != 1 {
			return false
		}
		alloc, _, _ = cl.c.Allocations().Info(r[0].ID, nil)
		return alloc != nil
	})
	full, _, err := cl.c.Nodes().Info(node.ID, nil)
	if err != nil || full.HTTPAddr == "" || full.HTTPAddr == cl.server.addr {
		t.Fatalf("node HTTPAddr %q (server %s): %v", full.HTTPAddr, cl.server.addr, err)
	}

	// Stats, as `nomad alloc status` reads them, and the node's.
	u, err := cl.c.Allocations().Stats(alloc, nil)
	if err != nil || u.Tasks["server"] == nil || u.Tasks["server"].ResourceUsage.MemoryStats.RSS == 0 {
		t.Fatalf("alloc stats %+v: %v", u, err)
	}
	hs, err := cl.c.Nodes().Stats(node.ID, nil)
	if err != nil || hs.Memory.Total == 0 || len(hs.CPU) == 0 || hs.Uptime == 0 {
		t.Fatalf("node stats %+v: %v", hs, err)
	}

	// Exec: stdin in, stdout and stderr out, the exit code, in the task's
	// environment and directory.
	var stdout, stderr bytes.Buffer
	code, err := cl.c.Allocations().Exec(context.Background(), alloc, "server", false,
		[]string{"/bin/sh", "-c", `read l; echo "in:$l"; echo "$NOMAD_ALLOC_ID"; echo err >&2; exit 7`},
		strings.NewReader("ping\n"), &stdout, &stderr, nil, nil)
	if err != nil || code != 7 || stdout.String() != "in:ping\n"+alloc.ID+"\n" || stderr.String() != "err\n" {
		t.Fatalf("exec: code %d err %v stdout %q stderr %q", code, err, stdout.String(), stderr.String())
	}

	// Signal: the task's trap writes to its log. The script prints
	// "started" once its trap is set; a signal before that would meet the
	// shell's default action (or a shell still starting), not the trap.
	waitFor(t, 20*time.Second, "the task's trap set", func() bool {
		return strings.Contains(catFile(t, cl.c, alloc, "alloc/logs/server.stdout.0"), "started")
	})
	if err := cl.c.Allocations().Signal(alloc, nil, "server", "SIGHUP"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the task's log shows the signal", func() bool {
		return strings.Contains(catFile(t, cl.c, alloc, "alloc/logs/server.stdout.0"), "got-hup")
	})

	// The fs family.
	files, _, err := cl.c.AllocFS().List(alloc, "alloc/logs", nil)
	if err != nil || !slices.ContainsFunc(files, func(f *api.AllocFileInfo) bool { return f.Name == "server.stdout.0" }) {
		t.Fatalf("ls: %+v %v", files, err)
	}
	fi, _, err := cl.c.AllocFS().Stat(alloc, "alloc/logs/server.stdout.0", nil)
	if err != nil || fi.Size == 0 || fi.IsDir {
		t.Fatalf("stat: %+v %v", fi, err)
	}
	r, err := cl.c.AllocFS().ReadAt(alloc, "alloc/logs/server.stdout.0", 0, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "started" {
		t.Fatalf("readat: %q", b)
	}
	cancel := make(chan struct{})
	frames, errs := cl.c.AllocFS().Logs(alloc, false, "server", "stdout", "start", 0, cancel, nil)
	var logs strings.Builder
	for fr := range frames {
		logs.Write(fr.Data)
	}
	close(cancel)
	select {
	case err := <-errs:
		if err != nil && err != io.EOF {
			t.Fatalf("logs: %v", err)
		}
	default:
	}
	if !strings.HasPrefix(logs.String(), "started\n") || !strings.Contains(logs.String(), "got-hup") {
		t.Fatalf("logs %q", logs.String())
	}
	if _, err := cl.c.AllocFS().Cat(alloc, "../../server/state.db", nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("path escape through the server: %v", err)
	}

	// Restart: counted as a restart, the alloc still running.
	if err := cl.c.Allocations().Restart(alloc, "server", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the task restarted", func() bool {
		a, _, err := cl.c.Allocations().Info(alloc.ID, nil)
		if err != nil {
			return false
		}
		st := a.TaskStates["server"]
		return st != nil && st.Restarts == 1 && st.State == "running" && !st.Failed && a.ClientStatus == "running" &&
			slices.ContainsFunc(st.Events, func(e *api.TaskEvent) bool { return e.Type == "Restart Signaled" })
	})

	// The client's own listener: a direct request is admitted by its
	// token (checked with the server: no ACLs here); a forged forward is
	// refused.
	direct := fmt.Sprintf("http://%s/v1/client/allocation/%s/stats", full.HTTPAddr, alloc.ID)
	if code, body := httpGet(t, direct, nil); code != 200 {
		t.Fatalf("direct stats: %d %s", code, body)
	}
	forged := map[string]string{"X-Drover-Forward-Node": node.ID, "X-Drover-Forward-At": fmt.Sprint(time.Now().Unix()),
		"X-Drover-Forward-Signature": "AAAA"}
	if code, body := httpGet(t, direct, forged); code != 403 {
		t.Fatalf("forged forward: %d %s", code, body)
	}

	// drover's CLI in server + client mode: logs and exec reach the client.
	cli := func(args ...string) (string, int) {
		cmd := exec.Command(droverBin, args...)
		cmd.Stdin = strings.NewReader("from-stdin\n")
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	addr := "-address=http://" + cl.server.addr
	if out, code := cli("alloc", "logs", addr, alloc.ID[:8]); code != 0 || !strings.HasPrefix(out, "started\n") {
		t.Fatalf("drover alloc logs: exit %d\n%s", code, out)
	}
	if out, code := cli("alloc", "exec", addr, alloc.ID[:8], "/bin/sh", "-c", "cat; exit 5"); code != 5 || out != "from-stdin\n" {
		t.Fatalf("drover alloc exec: exit %d\n%s", code, out)
	}

	// The client gone: the server says which node it could not reach.
	cl.clients["a"].stop()
	code2, body := httpGet(t, fmt.Sprintf("http://%s/v1/client/allocation/%s/stats", cl.server.addr, alloc.ID), nil)
	if code2 != http.StatusBadGateway || !strings.Contains(body, node.ID) {
		t.Fatalf("unreachable node: %d %s", code2, body)
	}
}

func catFile(t *testing.T, c *api.Client, alloc *api.Allocation, path string) string {
	t.Helper()
	r, err := c.AllocFS().Cat(alloc, path, nil)
	if err != nil {
		return ""
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	return string(b)
}

func httpGet(t *testing.T, url string, headers map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
