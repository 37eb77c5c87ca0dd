package docker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/drivers/shared/logfiles"
	"github.com/drover-sched/drover/internal/dockertest"
	"github.com/drover-sched/drover/internal/drivertest"
)

func newDriver(t *testing.T, opts drivers.Options) *Driver {
	t.Helper()
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// taskConfig is a launch of the test image with args.
func taskConfig(t *testing.T, image string, args ...string) *drivers.TaskConfig {
	cfg := drivertest.TaskConfig(t, "app", map[string]any{"image": image, "args": toAny(args)})
	if err := os.Chmod(filepath.Join(cfg.SharedDir, "data"), 0o777); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func start(t *testing.T, d *Driver, cfg *drivers.TaskConfig) *drivers.TaskHandle {
	t.Helper()
	h, err := d.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Destroy(context.Background(), cfg.ID, true) })
	return h
}

func containerID(t *testing.T, h *drivers.TaskHandle) string {
	t.Helper()
	var st taskState
	if err := json.Unmarshal(h.DriverState, &st); err != nil || st.ContainerID == "" {
		t.Fatalf("driver state %s: %v", h.DriverState, err)
	}
	return st.ContainerID
}

func readLog(t *testing.T, cfg *drivers.TaskConfig, stream string) string {
	b, _ := os.ReadFile(filepath.Join(cfg.LogDir, "app."+stream+".0"))
	return string(b)
}

func TestStartLogsExitAndAllocDirs(t *testing.T) {
	t.Parallel()
	image := dockertest.Image(t)
	d := newDriver(t, drivers.Options{})
	cfg := taskConfig(t, image, "echo", "hello", "world")
	cfg.Env["EXIT_CODE"] = "3"
	h := start(t, d, cfg)
	ex := drivertest.WaitExit(t, d, cfg.ID, 30*time.Second)
	if ex.ExitCode != 3 || ex.OOMKilled {
		t.Fatalf("exit %+v", ex)
	}
	if got := readLog(t, cfg, "stdout"); got != "hello world\n" {
		t.Errorf("stdout log %q", got)
	}
	if got := readLog(t, cfg, "stderr"); got != "to stderr\n" {
		t.Errorf("stderr log %q", got)
	}
	ins, err := d.client.ContainerInspect(context.Background(), containerID(t, h), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := ins.Container.Config.Labels; l[labelAllocID] != cfg.AllocID || l[labelTaskID] != cfg.ID || l[labelTaskName] != "app" {
		t.Errorf("labels %v", l)
	}
	if err := d.Destroy(context.Background(), cfg.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := d.client.ContainerInspect(context.Background(), containerID(t, h), client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Fatalf("container after Destroy: %v", err)
	}

	// The alloc's directories are the container's /alloc, /local,
	// /secrets.
	for _, dir := range []string{"/alloc/data", "/local", "/secrets"} {
		cfg := taskConfig(t, image, "write", dir+"/out", "written")
		start(t, d, cfg)
		host := map[string]string{"/alloc/data": filepath.Join(cfg.SharedDir, "data"), "/local": cfg.LocalDir, "/secrets": cfg.SecretsDir}[dir]
		drivertest.WaitFor(t, 20*time.Second, dir+" written through", func() bool {
			b, _ := os.ReadFile(filepath.Join(host, "out"))
			return string(b) == "written"
		})
	}
}

// TestPullFailureOfAbsentImage: no registry answers here, so an image that
// is absent cannot be pulled: the start fails, recoverably, naming the
// image, after a "Downloading image" driver message.
func TestPullFailureOfAbsentImage(t *testing.T) {
	t.Parallel()
	dockertest.Client(t)
	d := newDriver(t, drivers.Options{})
	cfg := drivertest.TaskConfig(t, "app", map[string]any{"image": "127.0.0.1:1/drover-absent-image:never", "image_pull_timeout": "20s"})
	var mu sync.Mutex
	var events []string
	cfg.Events = func(msg string) { mu.Lock(); events = append(events, msg); mu.Unlock() }
	_, err := d.Start(context.Background(), cfg)
	if err == nil || drivers.IsUnrecoverable(err) || !strings.Contains(err.Error(), "Failed to pull `127.0.0.1:1/drover-absent-image:never`") {
		t.Fatalf("Start: %v (unrecoverable %v)", err, drivers.IsUnrecoverable(err))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 || events[0] != "Downloading image 127.0.0.1:1/drover-absent-image:never" {
		t.Fatalf("events %q", events)
	}
}

func TestResourcesAndOOMKill(t *testing.T) {
	t.Parallel()
	image := dockertest.Image(t)
	d := newDriver(t, drivers.Options{})
	cfg := taskConfig(t, image, "sleep")
	cfg.Resources = drivers.Resources{CPU: 300, MemoryMB: 32, MemoryMaxMB: 64}
	h := start(t, d, cfg)
	ins, err := d.client.ContainerInspect(context.Background(), containerID(t, h), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := ins.Container.HostConfig.Resources
	if r.CPUShares != 300 || r.Memory != 64<<20 || r.MemoryReservation != 32<<20 || r.MemorySwap != 64<<20 {
		t.Errorf("resources: shares %d memory %d reservation %d swap %d", r.CPUShares, r.Memory, r.MemoryReservation, r.MemorySwap)
	}
	st, err := d.Stats(context.Background(), cfg.ID)
	if err != nil || st.CPUTotalNanos == 0 {
		t.Errorf("stats %+v %v", st, err)
	}

	hog := taskConfig(t, image, "alloc", "128")
	hog.Resources = drivers.Resources{CPU: 100, MemoryMB: 16}
	start(t, d, hog)
	ex := drivertest.WaitExit(t, d, hog.ID, 60*time.Second)
	if !ex.OOMKilled || ex.ExitCode != 137 {
		t.Fatalf("exit %+v, want an OOM kill", ex)
	}
}

func TestStopSignalThenKill(t *testing.T) {
	t.Parallel()
	image := dockertest.Image(t)
	d := newDriver(t, drivers.Options{})
	polite := taskConfig(t, image, "sleep")
	stubborn := taskConfig(t, image, "ignore-signals")
	start(t, d, polite)
	start(t, d, stubborn)
	for _, c := range []*drivers.TaskConfig{polite, stubborn} {
		drivertest.WaitFor(t, 20*time.Second, "ready", func() bool { return readLog(t, c, "stdout") == "ready\n" })
	}
	if err := d.Stop(context.Background(), polite.ID, 10*time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if ex := drivertest.WaitExit(t, d, polite.ID, time.Second); ex.ExitCode != 0 {
		t.Errorf("polite exit %+v", ex)
	}
	if err := d.Stop(context.Background(), stubborn.ID, 300*time.Millisecond, "SIGINT"); err != nil {
		t.Fatal(err)
	}
	if ex := drivertest.WaitExit(t, d, stubborn.ID, time.Second); ex.ExitCode != 137 || ex.Signal != 9 {
		t.Errorf("stubborn exit %+v, want SIGKILL", ex)
	}
}

// TestRecoverByContainerID: a new driver (a restarted agent) re-attaches
// to the container, nothing re-run, and the log goes on without lines
// copied twice.
func TestRecoverByContainerID(t *testing.T) {
	t.Parallel()
	image := dockertest.Image(t)
	d1, err := New(drivers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := taskConfig(t, image, "lines", "3")
	h, err := d1.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := containerID(t, h)
	drivertest.WaitFor(t, 20*time.Second, "three lines", func() bool { return strings.Count(readLog(t, cfg, "stdout"), "\n") == 3 })
	time.Sleep(cursorSaveEvery + 100*time.Millisecond)
	d1.Close()

	d2 := newDriver(t, drivers.Options{})
	if err := d2.Recover(context.Background(), h.Copy()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d2.Destroy(context.Background(), cfg.ID, true) })
	if err := d2.Stop(context.Background(), cfg.ID, 10*time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if ex := drivertest.WaitExit(t, d2, cfg.ID, 5*time.Second); ex.ExitCode != 0 {
		t.Fatalf("exit %+v", ex)
	}
	if got := readLog(t, cfg, "stdout"); got != "line 1\nline 2\nline 3\n" {
		t.Fatalf("stdout after re-attach %q", got)
	}
	ins, err := d2.client.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil || ins.Container.RestartCount != 0 {
		t.Fatalf("container %v restarts %d", err, ins.Container.RestartCount)
	}

	// A handle without driver state (the agent stopped mid-launch) finds
	// its container by name and launch label.
	cfg2 := taskConfig(t, image, "sleep")
	h2 := start(t, d2, cfg2)
	d3 := newDriver(t, drivers.Options{})
	if err := d3.Recover(context.Background(), &drivers.TaskHandle{Driver: Name, Config: cfg2}); err != nil {
		t.Fatal(err)
	}
	if err := d3.Signal(cfg2.ID, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	drivertest.WaitExit(t, d3, cfg2.ID, 20*time.Second)
	// Once its container is removed, the launch cannot be recovered.
	if err := d2.Destroy(context.Background(), cfg2.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := d3.Recover(context.Background(), h2.Copy()); err == nil || errors.Is(err, drivers.ErrTaskNotFound) {
		t.Fatalf("Recover of a removed container: %v", err)
	}
	// A launch that never created one is not found.
	never := taskConfig(t, image, "sleep")
	if err := d3.Recover(context.Background(), &drivers.TaskHandle{Driver: Name, Config: never}); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Fatalf("Recover of a launch without a container: %v", err)
	}
}

func TestExecPrivilegedAndCleanup(t *testing.T) {
	t.Parallel()
	image := dockertest.Image(t)
	d := newDriver(t, drivers.Options{})
	cfg := taskConfig(t, image, "sleep")
	start(t, d, cfg)
	res, err := d.Exec(context.Background(), cfg.ID, []string{dockertest.App, "echo", "from", "exec"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || string(res.Stdout) != "from exec\n" || string(res.Stderr) != "to stderr\n" {
		t.Fatalf("exec %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}

	priv := drivertest.TaskConfig(t, "app", map[string]any{"image": image, "privileged": true, "args": []any{"sleep"}})
	if _, err := d.Start(context.Background(), priv); err == nil || !drivers.IsUnrecoverable(err) || !strings.Contains(err.Error(), "privileged") {
		t.Fatalf("privileged start on a node that does not allow it: %v", err)
	}

	// The containers of an alloc whose state was lost are removed.
	n := d.CleanupAlloc(context.Background(), cfg.AllocID, nil)
	if n != 1 {
		t.Fatalf("CleanupAlloc removed %d containers", n)
	}
	if ex := drivertest.WaitExit(t, d, cfg.ID, 20*time.Second); ex == nil {
		t.Fatal("no exit after cleanup")
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	dockertest.Client(t)
	d := newDriver(t, drivers.Options{DockerAllowPrivileged: true})
	fp := d.Fingerprint(context.Background())
	if !fp.Detected || !fp.Healthy || fp.Attributes["driver.docker"] != "1" || fp.Attributes["driver.docker.version"] == "" ||
		fp.Attributes["driver.docker.privileged.enabled"] != "true" {
		t.Fatalf("fingerprint %+v", fp)
	}
	gone := newDriver(t, drivers.Options{DockerHost: "unix://" + filepath.Join(t.TempDir(), "no.sock")})
	if fp := gone.Fingerprint(context.Background()); fp.Detected || fp.Healthy || !strings.Contains(fp.HealthDescription, "Failed to connect") {
		t.Fatalf("fingerprint without an engine %+v", fp)
	}
}

// TestPullUsesAuth: the task's registry auth goes with the pull. A
// registry of the test's own, on loopback, asks for basic auth and
// records what the engine sends.
func TestPullUsesAuth(t *testing.T) {
	t.Parallel()
	dockertest.Client(t)
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="drover-test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	image := strings.TrimPrefix(srv.URL, "http://") + "/private/app:1"
	d := newDriver(t, drivers.Options{})
	cfg := drivertest.TaskConfig(t, "app", map[string]any{"image": image, "image_pull_timeout": "20s",
		"auth": map[string]any{"username": "deploy", "password": "s3cret"}})
	if _, err := d.Start(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "Failed to pull") {
		t.Fatalf("Start: %v", err)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("deploy:s3cret"))
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(got, want) {
		t.Fatalf("the registry saw Authorization %q, want %q among them", got, want)
	}
}

// TestLogRotation: the container's log is rotated by the task's logs
// block, as the supervisor rotates a process's.
func TestLogRotation(t *testing.T) {
	t.Parallel()
	image := dockertest.Image(t)
	d := newDriver(t, drivers.Options{})
	cfg := taskConfig(t, image, "lines", "500")
	cfg.Logs = drivers.LogConfig{MaxFiles: 2, MaxFileBytes: 1024}
	start(t, d, cfg)
	var files []logfiles.File
	drivertest.WaitFor(t, 20*time.Second, "the last line logged", func() bool {
		files, _ = logfiles.List(cfg.LogDir, "app.stdout")
		if len(files) == 0 {
			return false
		}
		b, _ := os.ReadFile(filepath.Join(cfg.LogDir, files[len(files)-1].Name))
		return strings.HasSuffix(string(b), "line 500\n")
	})
	// 500 lines are about 4.4 KiB: five files of 1 KiB, the newest two kept.
	if len(files) != 2 || files[1].Index != 4 || files[0].Size != 1024 {
		t.Fatalf("log files %+v", files)
	}
}
