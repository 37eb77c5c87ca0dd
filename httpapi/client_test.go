package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// fakeNode is a ClientNode with one alloc "a1" whose task "web" runs; its
// files live in dir.
type fakeNode struct {
	fakeFS
	dir       string
	restarted []string
	signals   []string
}

func (f *fakeNode) NodeID() string { return "n1" }

func (f *fakeNode) check(allocID, task string) error {
	if allocID != "a1" {
		return fmt.Errorf("unknown allocation %q: %w", allocID, fs.ErrNotExist)
	}
	if task != "" && task != "web" {
		return fmt.Errorf("no task %q: %w", task, fs.ErrInvalid)
	}
	return nil
}

func (f *fakeNode) RestartAlloc(_ context.Context, allocID, task string, all bool) error {
	if err := f.check(allocID, task); err != nil {
		return err
	}
	f.restarted = append(f.restarted, fmt.Sprintf("%s/%v", task, all))
	return nil
}

func (f *fakeNode) SignalAlloc(_ context.Context, allocID, task, signal string) error {
	if err := f.check(allocID, task); err != nil {
		return err
	}
	if _, err := drivers.ParseSignal(signal); err != nil {
		return fmt.Errorf("%v: %w", err, fs.ErrInvalid)
	}
	f.signals = append(f.signals, task+":"+signal)
	return nil
}

func (f *fakeNode) CheckTask(_ context.Context, allocID, task string) error {
	return f.check(allocID, task)
}

// ExecAlloc echoes stdin upper-cased to stdout, the command to stderr,
// and exits with the command's length.
func (f *fakeNode) ExecAlloc(_ context.Context, allocID, task string, o *drivers.ExecOptions) (int, error) {
	b, _ := io.ReadAll(o.Stdin)
	fmt.Fprint(o.Stdout, strings.ToUpper(string(b)))
	fmt.Fprint(o.Stderr, strings.Join(o.Command, " "))
	return len(o.Command), nil
}

func (f *fakeNode) AllocStats(_ context.Context, allocID, task string) (*structs.AllocResourceUsage, error) {
	if err := f.check(allocID, task); err != nil {
		return nil, err
	}
	return &structs.AllocResourceUsage{ResourceUsage: &structs.ResourceUsage{MemoryStats: &structs.MemoryStats{RSS: 42}, CpuStats: &structs.CpuStats{Percent: 1.5}},
		Tasks: map[string]*structs.TaskResourceUsage{"web": {ResourceUsage: &structs.ResourceUsage{MemoryStats: &structs.MemoryStats{RSS: 42}, CpuStats: &structs.CpuStats{}}}}, Timestamp: 7}, nil
}

func (f *fakeNode) AllocChecks(_ context.Context, allocID string) (map[string]*structs.CheckQueryResult, error) {
	if err := f.check(allocID, ""); err != nil {
		return nil, err
	}
	return map[string]*structs.CheckQueryResult{"c1": {ID: "c1", Mode: structs.CheckModeHealthiness, Status: structs.CheckStatusSuccess,
		StatusCode: 200, Output: "ok", Timestamp: 9, Group: "web", Service: "api", Check: "alive", JobID: "j"}}, nil
}

func (f *fakeNode) HostStats(context.Context) (*structs.HostStats, error) {
	return &structs.HostStats{Memory: &structs.HostMemoryStats{Total: 1 << 30}, CPU: []*structs.HostCPUStats{{CPU: "cpu0", Idle: 90}}, Uptime: 5}, nil
}

func (f *fakeNode) path(allocID, p string) (string, error) {
	if err := f.check(allocID, ""); err != nil {
		return "", err
	}
	if strings.Contains(p, "..") {
		return "", fmt.Errorf("%q escapes: %w", p, fs.ErrPermission)
	}
	return filepath.Join(f.dir, p), nil
}

func (f *fakeNode) StatFile(_ context.Context, allocID, p string) (*structs.AllocFileInfo, error) {
	hp, err := f.path(allocID, p)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(hp)
	if err != nil {
		return nil, err
	}
	return &structs.AllocFileInfo{Name: fi.Name(), Size: fi.Size(), IsDir: fi.IsDir(), FileMode: fi.Mode().String()}, nil
}

func (f *fakeNode) ListFiles(_ context.Context, allocID, p string) ([]*structs.AllocFileInfo, error) {
	hp, err := f.path(allocID, p)
	if err != nil {
		return nil, err
	}
	es, err := os.ReadDir(hp)
	if err != nil {
		return nil, err
	}
	out := []*structs.AllocFileInfo{}
	for _, e := range es {
		out = append(out, &structs.AllocFileInfo{Name: e.Name(), IsDir: e.IsDir()})
	}
	return out, nil
}

func (f *fakeNode) OpenFile(_ context.Context, allocID, p string) (*os.File, error) {
	hp, err := f.path(allocID, p)
	if err != nil {
		return nil, err
	}
	return os.Open(hp)
}

func (f *fakeNode) StreamFile(_ context.Context, allocID, p, origin string, offset int64,
	emit func(string, int64, []byte, string) error) error {
	hp, err := f.path(allocID, p)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(hp)
	if err != nil {
		return err
	}
	if err := emit("", 0, nil, ""); err != nil {
		return err
	}
	return emit(p, int64(len(b)), b[offset:], "")
}

func TestClientRoutesWithNomadsClient(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello, alloc"), 0o644); err != nil {
		t.Fatal(err)
	}
	node := &fakeNode{dir: dir}
	srv := httptest.NewServer(NewClientServer(node, Config{}))
	defer srv.Close()
	c, err := api.NewClient(&api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	alloc := &api.Allocation{ID: "a1", NodeID: "n1"}

	if err := c.Allocations().Restart(alloc, "web", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Allocations().RestartAllTasks(alloc, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Join(node.restarted, ",") != "web/false,/true" {
		t.Errorf("restarts %v", node.restarted)
	}
	if err := c.Allocations().Signal(alloc, nil, "web", "SIGHUP"); err != nil {
		t.Fatal(err)
	}
	if len(node.signals) != 1 || node.signals[0] != "web:SIGHUP" {
		t.Errorf("signals %v", node.signals)
	}
	u, err := c.Allocations().Stats(alloc, nil)
	if err != nil || u.ResourceUsage.MemoryStats.RSS != 42 || u.Tasks["web"].ResourceUsage.MemoryStats.RSS != 42 || u.Timestamp != 7 {
		t.Errorf("stats %+v %v", u, err)
	}
	checks, err := c.Allocations().Checks("a1", nil)
	if ck := checks["c1"]; err != nil || len(checks) != 1 || ck.ID != "c1" || ck.Mode != "healthiness" || ck.Status != "success" ||
		ck.StatusCode != 200 || ck.Output != "ok" || ck.Timestamp != 9 || ck.Group != "web" || ck.Service != "api" || ck.Check != "alive" {
		t.Errorf("checks %+v %v", checks, err)
	}
	hs, err := c.Nodes().Stats("", nil)
	if err != nil || hs.Memory.Total != 1<<30 || len(hs.CPU) != 1 || hs.Uptime != 5 {
		t.Errorf("host stats %+v %v", hs, err)
	}

	// Exec over Nomad's websocket protocol.
	var stdout, stderr bytes.Buffer
	code, err := c.Allocations().Exec(context.Background(), alloc, "web", false, []string{"/bin/sh", "-c", "tr a-z A-Z"},
		strings.NewReader("ping"), &stdout, &stderr, nil, nil)
	if err != nil || code != 3 || stdout.String() != "PING" || stderr.String() != "/bin/sh -c tr a-z A-Z" {
		t.Errorf("exec: code %d err %v stdout %q stderr %q", code, err, stdout.String(), stderr.String())
	}
	if _, err := c.Allocations().Exec(context.Background(), alloc, "db", false, []string{"true"},
		strings.NewReader(""), io.Discard, io.Discard, nil, nil); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("exec in an unknown task: %v", err)
	}

	// The file routes.
	files, _, err := c.AllocFS().List(alloc, "/", nil)
	if err != nil || len(files) != 1 || files[0].Name != "hello.txt" {
		t.Errorf("ls %+v %v", files, err)
	}
	fi, _, err := c.AllocFS().Stat(alloc, "hello.txt", nil)
	if err != nil || fi.Size != 12 {
		t.Errorf("stat %+v %v", fi, err)
	}
	read := func(r io.ReadCloser, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		return string(b)
	}
	if got := read(c.AllocFS().Cat(alloc, "hello.txt", nil)); got != "hello, alloc" {
		t.Errorf("cat %q", got)
	}
	if got := read(c.AllocFS().ReadAt(alloc, "hello.txt", 7, 3, nil)); got != "all" {
		t.Errorf("readat %q", got)
	}
	if got := read(c.AllocFS().ReadAt(alloc, "hello.txt", 7, 0, nil)); got != "alloc" {
		t.Errorf("readat without a limit %q", got)
	}
	// The fake's stream ends after its frame: the client buffers the
	// frame, then sends the end (EOF) on errCh and closes frames. A select
	// on both could take the EOF first; frames gives what it buffered
	// before it reads as closed.
	frames, errCh := c.AllocFS().Stream(alloc, "hello.txt", "start", 7, make(chan struct{}), nil)
	select {
	case fr, ok := <-frames:
		if !ok {
			t.Errorf("stream ended without a frame: %v", <-errCh)
		} else if string(fr.Data) != "alloc" || fr.File != "hello.txt" {
			t.Errorf("stream frame %+v", fr)
		}
	case <-time.After(20 * time.Second):
		t.Error("no stream frame")
	}

	// Errors: each route and the status Nomad's clients see.
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{"PUT", "/v1/client/allocation/nope/restart", `{}`, 404},
		{"PUT", "/v1/client/allocation/a1/restart", `{"TaskName":"db"}`, 400},
		{"PUT", "/v1/client/allocation/a1/restart", `{"TaskName":`, 400},
		{"POST", "/v1/client/allocation/a1/signal", `{"Task":"web","Signal":"SIGNOPE"}`, 400},
		{"PUT", "/v1/client/allocation/nope/signal", `{"Signal":"HUP"}`, 404},
		{"GET", "/v1/client/allocation/nope/stats", ``, 404},
		{"GET", "/v1/client/allocation/a1/stats?task=db", ``, 400},
		{"GET", "/v1/client/allocation/nope/checks", ``, 404},
		{"GET", "/v1/client/allocation/nope/exec?task=web&command=%5B%22true%22%5D", ``, 404},
		{"GET", "/v1/client/allocation/a1/exec?task=web", ``, 400},
		{"GET", "/v1/client/allocation/a1/exec?command=%5B%22true%22%5D", ``, 400},
		{"GET", "/v1/client/allocation/a1/exec?task=web&command=true", ``, 400},
		{"GET", "/v1/client/stats?node_id=other", ``, 404},
		{"GET", "/v1/client/fs/cat/a1?path=../../etc/passwd", ``, 403},
		{"GET", "/v1/client/fs/ls/a1?path=..", ``, 403},
		{"GET", "/v1/client/fs/stat/nope?path=/", ``, 404},
		{"GET", "/v1/client/fs/readat/a1?path=hello.txt&offset=x", ``, 400},
		{"GET", "/v1/client/fs/readat/a1?path=hello.txt&offset=-1", ``, 400},
		{"GET", "/v1/client/fs/stream/a1?path=../x", ``, 403},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, resp.StatusCode, b, tc.want)
		}
	}
}

// TestEveryClientRouteDeclaresItsCapabilities: the ACL table's rows for
// the client routes exist for every one of them, and only for them.
func TestEveryClientRouteDeclaresItsCapabilities(t *testing.T) {
	routes := (&Server{}).clientRouteTable()
	seen := map[string]bool{}
	for _, r := range routes {
		seen[r.pattern] = true
		if len(ClientRouteCapabilities[r.pattern]) == 0 {
			t.Errorf("%s declares no capability", r.pattern)
		}
	}
	for p := range ClientRouteCapabilities {
		if !seen[p] {
			t.Errorf("capabilities declared for %s, which is not a client route", p)
		}
	}
}
