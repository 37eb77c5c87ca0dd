package nodeagent

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-sched/drover/drivers/mock"
	"github.com/drover-sched/drover/structs"
)

// tarGz builds a .tar.gz of files (name → content; content "->target"
// makes a symlink).
func tarGz(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}
		if target, ok := strings.CutPrefix(body, "->"); ok {
			hdr = &tar.Header{Name: name, Linkname: target, Typeflag: tar.TypeSymlink, Mode: 0o777}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			tw.Write([]byte(body))
		}
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func zipOf(t *testing.T, name, body string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create(name)
	w.Write([]byte(body))
	zw.Close()
	return buf.Bytes()
}

// serveFiles serves path → body on 127.0.0.1 and records the headers of
// the requests by path.
func serveFiles(t *testing.T, files map[string][]byte) (string, *sync.Map) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var seen sync.Map
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		seen.Store(r.URL.Path, r.Header.Clone())
		w.Write(b)
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String(), &seen
}

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestArtifactsFetched: artifacts are fetched into the task dir before the
// task starts: a tar.gz unpacked into local/ with its checksum verified and
// a header sent, a zip into a destination of its own, a file in file mode.
func TestArtifactsFetched(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tgz := tarGz(t, map[string]string{"app/run.sh": "echo hi", "README": "read me"})
	base, seen := serveFiles(t, map[string][]byte{"/app.tar.gz": tgz, "/conf.zip": zipOf(t, "c.ini", "k=v"), "/plain.txt": []byte("plain")})
	cp := newFakeCP()
	m := mock.New()
	startAgent(t, cp, mockAgentConfig(t, dir, m))
	task := mockTask("work", map[string]any{"run_for": "10ms"})
	task.Artifacts = []*structs.TaskArtifact{
		{GetterSource: base + "/app.tar.gz", GetterMode: "any", RelativeDest: "local/",
			GetterOptions: map[string]string{"checksum": "sha256:" + sha256Hex(tgz)},
			GetterHeaders: map[string]string{"X-Alloc": "${NOMAD_ALLOC_ID}"}},
		{GetterSource: base + "/conf.zip", GetterMode: "any", RelativeDest: "local/conf"},
		{GetterSource: base + "/plain.txt", GetterMode: "file", RelativeDest: "local/plain.txt"},
	}
	alloc := testAlloc(testJob(structs.JobTypeBatch, task))
	cp.addAlloc(alloc)
	st := cp.waitReport(t, alloc.ID, "complete", hasStatus(structs.AllocClientStatusComplete)).TaskStates["work"]
	if findEvent(st, structs.TaskDownloadingArtifacts) == nil {
		t.Errorf("no Downloading Artifacts event: %v", eventTypes(st))
	}
	local := NewAllocDir(filepath.Join(dir, "alloc"), alloc.ID).TaskDir("work").LocalDir
	for p, want := range map[string]string{"app/run.sh": "echo hi", "README": "read me", "conf/c.ini": "k=v", "plain.txt": "plain"} {
		if b, err := os.ReadFile(filepath.Join(local, p)); err != nil || string(b) != want {
			t.Errorf("local/%s = %q %v", p, b, err)
		}
	}
	h, _ := seen.Load("/app.tar.gz")
	if got := h.(http.Header).Get("X-Alloc"); got != alloc.ID {
		t.Errorf("header X-Alloc = %q, want the interpolated alloc ID", got)
	}
}

// TestArtifactFailures: a wrong checksum fails the task before it starts,
// with a "Failed Artifact Download" event naming the cause; the restart
// policy decides (here: one attempt, so two downloads). An archive's
// symlink to a host file is never made a link (go-getter writes no
// symlinks: the host file stays out of reach).
func TestArtifactFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := []byte("the real thing")
	evil := tarGz(t, map[string]string{"passwd": "->/etc/passwd"})
	base, _ := serveFiles(t, map[string][]byte{"/bin": good, "/evil.tgz": evil})
	cp := newFakeCP()
	m := mock.New()
	startAgent(t, cp, mockAgentConfig(t, dir, m))
	policy := &structs.RestartPolicy{Attempts: 1, Interval: time.Hour, Delay: 10 * time.Millisecond, Mode: structs.RestartPolicyModeFail}

	bad := mockTask("work", nil)
	bad.Artifacts = []*structs.TaskArtifact{{GetterSource: base + "/bin", GetterMode: "file", RelativeDest: "local/bin",
		GetterOptions: map[string]string{"checksum": "sha256:" + strings.Repeat("0", 64)}}}
	j1 := testJob(structs.JobTypeBatch, bad)
	j1.TaskGroups[0].RestartPolicy = policy
	bad.RestartPolicy = policy
	a1 := testAlloc(j1)

	link := mockTask("work", map[string]any{"run_for": "10ms"})
	link.Artifacts = []*structs.TaskArtifact{{GetterSource: base + "/evil.tgz", GetterMode: "any", RelativeDest: "local/"}}
	a2 := testAlloc(testJob(structs.JobTypeBatch, link))
	cp.addAlloc(a1)
	cp.addAlloc(a2)

	st := cp.waitReport(t, a1.ID, "failed", hasStatus(structs.AllocClientStatusFailed)).TaskStates["work"]
	ev := findEvent(st, structs.TaskArtifactDownloadFailed)
	if ev == nil || !strings.Contains(ev.Details["download_error"], "Checksums did not match") || countEvents(st, structs.TaskArtifactDownloadFailed) != 2 || st.Restarts != 1 {
		t.Fatalf("wrong checksum: %+v, events %v, restarts %d", ev, eventTypes(st), st.Restarts)
	}
	cp.waitReport(t, a2.ID, "complete", hasStatus(structs.AllocClientStatusComplete))
	p := filepath.Join(NewAllocDir(filepath.Join(dir, "alloc"), a2.ID).TaskDir("work").LocalDir, "passwd")
	fi, err := os.Lstat(p)
	if b, _ := os.ReadFile(p); err != nil || fi.Mode()&os.ModeSymlink != 0 || len(b) != 0 {
		t.Fatalf("archive symlink became %v %v holding %q", fi, err, b)
	}
	if m.Starts("work") != 1 {
		t.Fatalf("starts %d: only the second job's task may start", m.Starts("work"))
	}
}

// TestArtifactLinkInspection: after a download, a symlink that resolves
// outside the task's directories is refused (Nomad's artifact
// inspection); one inside them is fine.
func TestArtifactLinkInspection(t *testing.T) {
	root := t.TempDir()
	task, alloc := filepath.Join(root, "task"), filepath.Join(root, "alloc")
	os.MkdirAll(filepath.Join(task, "local"), 0o755)
	os.MkdirAll(alloc, 0o755)
	os.WriteFile(filepath.Join(task, "local", "a"), []byte("a"), 0o644)
	os.Symlink("a", filepath.Join(task, "local", "ok"))
	sb := []string{task, alloc}
	if err := checkNoEscapingLinks(sb, filepath.Join(task, "local")); err != nil {
		t.Fatalf("link inside refused: %v", err)
	}
	os.Symlink("/etc/passwd", filepath.Join(task, "local", "evil"))
	if err := checkNoEscapingLinks(sb, filepath.Join(task, "local")); err == nil || !strings.Contains(err.Error(), "points outside") {
		t.Fatalf("escaping link: %v", err)
	}
}
