// Package proctest is the test support shared by the suites that run the
// real drover binary as subprocesses (e2e, chaos/proc): building the
// binary once, starting and ending agent processes, polling, and finding
// the task supervisors and task processes an agent started in /proc.
// Linux only where /proc is read.
package proctest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BuildDrover builds the drover command into dir and returns the
// binary's path. It runs `go build` on the module's package path, so it
// works from any package's test.
func BuildDrover(dir string) (string, error) {
	bin := filepath.Join(dir, "drover")
	build := exec.Command("go", "build", "-o", bin, "github.com/drover-sched/drover/cmd/drover")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build drover: %w", err)
	}
	return bin, nil
}

// MainWithDrover is a TestMain's body for a package whose tests run the
// drover binary: it builds it into a temporary directory, sets *bin to
// its path, runs the tests and removes the directory; it returns the
// exit code (1 when the build fails).
func MainWithDrover(m *testing.M, bin *string) int {
	dir, err := os.MkdirTemp("", "drover-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *bin, err = BuildDrover(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stop := cleanUpOnInterrupt(dir)
	defer stop()
	return m.Run()
}

// started are the processes Start started and not yet reaped, and the
// data dirs (-data-dir) it gave any process (kept after the process ends:
// the tasks of a killed agent outlive it): an interrupted run kills them
// and the task supervisors under those dirs.
var started = struct {
	sync.Mutex
	procs map[*Proc]bool
	dirs  map[string]bool
}{procs: map[*Proc]bool{}, dirs: map[string]bool{}}

// cleanUpOnInterrupt makes an interrupt (Ctrl-C, SIGTERM, SIGHUP) of the
// test binary, which skips every test's cleanups, kill what Start
// started and the tasks of their agents, remove the agents' data dirs
// (and the empty test directories above them) and binDir, and exit 1.
// The returned func stops watching.
func cleanUpOnInterrupt(binDir string) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			n := KillStarted()
			_ = os.RemoveAll(binDir)
			fmt.Fprintf(os.Stderr, "proctest: %v: killed %d process(es) the tests started, with their tasks\n", sig, n)
			os.Exit(1)
		case <-done:
		}
	}()
	return func() { signal.Stop(sigs); close(done) }
}

// KillStarted SIGKILLs every process Start started that has not been
// reaped, then the task supervisors and tasks under their data dirs, and
// removes those dirs and the empty directories above them up to the
// system's temporary directory. It returns how many processes it killed.
func KillStarted() int {
	started.Lock()
	var procs []*Proc
	for p := range started.procs {
		procs = append(procs, p)
	}
	var dirs []string
	for dir := range started.dirs {
		dirs = append(dirs, dir)
	}
	started.Unlock()
	n := 0
	for _, p := range procs {
		if !p.Exited() {
			_ = p.Cmd.Process.Kill()
			n++
		}
	}
	for _, dir := range dirs {
		n += len(SupervisorsUnder(dir))
		KillProcsUnder(dir)
		_ = os.RemoveAll(dir)
		if root := testTempRoot(dir); root != "" {
			// The test's own t.TempDir, which its skipped cleanup
			// would have removed (scripts, logs beside the data dirs).
			_ = os.RemoveAll(root)
			continue
		}
		for parent := filepath.Dir(dir); strings.HasPrefix(parent, os.TempDir()+string(filepath.Separator)); parent = filepath.Dir(parent) {
			if os.Remove(parent) != nil { // not empty: another test's
				break
			}
		}
	}
	return n
}

// testTempRoot is the directory t.TempDir made for the test whose data
// dir is dir (os.TempDir()/TestName<digits>), or "" when dir lies
// elsewhere.
func testTempRoot(dir string) string {
	rel, err := filepath.Rel(os.TempDir(), dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return ""
	}
	first, _, _ := strings.Cut(rel, string(filepath.Separator))
	if !strings.HasPrefix(first, "Test") || first == rel {
		return ""
	}
	return filepath.Join(os.TempDir(), first)
}

// dataDir is the value of a -data-dir argument, or "".
func dataDir(args []string) string {
	for i, a := range args {
		if a == "-data-dir" && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "-data-dir="); ok {
			return v
		}
	}
	return ""
}

// SyncBuffer is a bytes.Buffer safe for a process's output and a test's
// reads at once.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Proc is a subprocess whose output is kept in Log; Done is closed once
// it has exited and been reaped.
type Proc struct {
	Cmd  *exec.Cmd
	Log  *SyncBuffer
	Done chan struct{}
}

// Start starts bin with args, its output into a new Log.
func Start(bin string, args ...string) (*Proc, error) {
	p := &Proc{Log: &SyncBuffer{}, Done: make(chan struct{})}
	p.Cmd = exec.Command(bin, args...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Log, p.Log
	if err := p.Cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	started.Lock()
	started.procs[p] = true
	if dir := dataDir(args); dir != "" {
		started.dirs[dir] = true
	}
	started.Unlock()
	go func() {
		_ = p.Cmd.Wait()
		close(p.Done)
		started.Lock()
		delete(started.procs, p)
		started.Unlock()
	}()
	return p, nil
}

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.Done:
		return true
	default:
		return false
	}
}

// Stop ends the process gracefully (SIGTERM), then with SIGKILL if it has
// not exited within grace; it returns once the process is reaped.
func (p *Proc) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.Cmd.Process.Signal(syscall.SIGCONT) // a stopped process cannot act on SIGTERM
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.Done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Kill ends the process with SIGKILL, as a crash, and waits until it is
// reaped (children it started are not touched).
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.Done
}

// APIAddr matches an agent's banner line naming its bound HTTP API.
var APIAddr = regexp.MustCompile(`HTTP API: https?://(127\.0\.0\.1:\d+)`)

// WaitAddr polls p's log for the API address its banner names, up to
// within; it fails if p exits first or the time runs out.
func (p *Proc) WaitAddr(within time.Duration) (string, error) {
	deadline := time.Now().Add(within)
	for {
		if m := APIAddr.FindStringSubmatch(p.Log.String()); m != nil {
			return m[1], nil
		}
		if p.Exited() {
			return "", fmt.Errorf("agent exited before naming its address:\n%s", p.Log.String())
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no API address after %s:\n%s", within, p.Log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Poll calls cond every 100 ms until it holds (true) or within has passed
// (false).
func Poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WaitFor polls cond until it holds, and fails t naming what it waited
// for if within passes first.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(within, cond) {
		t.Fatalf("timed out after %s waiting for %s", within, what)
	}
}

// IsZombie reports whether a /proc/<pid>/stat line is a zombie's.
func IsZombie(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// PidsWhere returns the pids of live (not zombie) processes for which
// keep holds, given their command line (arguments joined by spaces) and
// parent pid.
func PidsWhere(keep func(pid int, cmdline string, ppid int) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil || IsZombie(string(st)) {
			continue
		}
		// stat: pid (comm) state ppid ...
		fields := strings.Fields(string(st)[strings.LastIndexByte(string(st), ')')+1:])
		ppid := 0
		if len(fields) > 1 {
			ppid, _ = strconv.Atoi(fields[1])
		}
		if keep(pid, strings.ReplaceAll(string(b), "\x00", " "), ppid) {
			out = append(out, pid)
		}
	}
	return out
}

// SupervisorsUnder returns the pids of the task supervisors whose spec
// lies under dir (an agent's data dir): they and their children are
// exactly that agent's tasks, whatever their command lines.
func SupervisorsUnder(dir string) []int {
	return PidsWhere(func(_ int, cmdline string, _ int) bool {
		return strings.Contains(cmdline, "task-supervisor") && strings.Contains(cmdline, dir)
	})
}

// TasksUnder returns the pids of the tasks run by the supervisors under
// dir.
func TasksUnder(dir string) []int {
	var out []int
	for _, sup := range SupervisorsUnder(dir) {
		out = append(out, PidsWhere(func(_ int, _ string, ppid int) bool { return ppid == sup })...)
	}
	return out
}

// KillProcsUnder kills the task supervisors whose spec lies under dir and
// their tasks' process groups.
func KillProcsUnder(dir string) {
	for _, sup := range SupervisorsUnder(dir) {
		for _, child := range PidsWhere(func(_ int, _ string, ppid int) bool { return ppid == sup }) {
			_ = syscall.Kill(-child, syscall.SIGKILL) // the task's process group
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
		_ = syscall.Kill(sup, syscall.SIGKILL)
	}
}
