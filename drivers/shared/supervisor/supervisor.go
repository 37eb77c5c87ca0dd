// Package supervisor is drover's task supervisor: the small process, the
// drover binary re-executed as "drover task-supervisor SPEC", under which
// every task of a process driver (raw_exec, exec) runs, and the agent's
// side of it (Launcher, Handle, Reattach). Nomad's shared executor is the
// model.
//
// The agent starts the supervisor in its own session; the supervisor starts
// the task as its child in the task's own process group, records the
// task's pid and start time in the task's state dir, copies the task's
// stdout and stderr to rotated log files, and records how the task ended.
// Tasks and supervisors therefore outlive an agent restart, and nothing
// that happens while the agent is down is lost. The package decides how a
// task process is started, watched and recorded; it never decides whether
// a task should run (that is the task runner's restart policy).
package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drover-sched/drover/drivers/shared/logfiles"
)

// Subcommand is the argument that makes the drover binary run as a task
// supervisor (cmd/drover routes it to Main).
const Subcommand = "task-supervisor"

// Files of the supervisor's records, in the task's StateDir.
const (
	SpecFile   = "spec.json"
	RecordFile = "supervisor.json"
	TaskFile   = "task.json"
	ExitFile   = "exit.json"
	LogFile    = "supervisor.log"
	// LockFile is flock()ed by a supervisor for its whole life:
	// while it is held, a supervisor for the task is alive, and no second
	// one may start.
	LockFile = "supervisor.lock"
)

// statusFD is the descriptor on which a supervisor started by the
// agent reports whether the task started (one JSON line, then EOF).
const statusFD = 3

// Spec is what a supervisor runs: written by the agent to the
// task's StateDir, read by the supervisor.
type Spec struct {
	// RunID identifies this launch of the task; every record the
	// supervisor writes carries it, so records of an earlier launch are
	// never mistaken for this one's.
	RunID   string
	Command string
	Args    []string
	Env     []string
	Dir     string
	// LogDir receives the task's output as LogDir/<LogBase>.stdout.N and
	// .stderr.N, rotated by the supervisor (which owns the pipes, so the
	// output keeps flowing while no agent runs).
	LogDir  string
	LogBase string
	// LogMaxFiles is how many files of each stream are kept.
	LogMaxFiles int
	// LogMaxFileBytes is the size at which a log file is rotated, in bytes.
	LogMaxFileBytes int64
	// LogDisabled discards the task's output.
	LogDisabled bool `json:",omitempty"`
	// StateDir is where the supervisor writes its records.
	StateDir string
	// Isolation, when set, confines the task (the exec driver's): see
	// Isolation.
	Isolation *Isolation `json:",omitempty"`
}

// logDrainTimeout bounds how long a supervisor keeps copying output after
// its task ended (a descendant that left the task's process group may
// hold the pipe open).
const logDrainTimeout = 2 * time.Second

// ProcRecord identifies a process: its pid and /proc start time, which
// tells it apart from a later process with the same pid.
type ProcRecord struct {
	RunID      string
	Pid        int
	StartTicks uint64
	StartedAt  time.Time
}

// ExitRecord is how a task ended, written by its supervisor.
type ExitRecord struct {
	RunID    string
	ExitCode int
	Signal   int
	ExitedAt time.Time
	// Err is set when the supervisor could not tell how the task ended.
	Err string `json:",omitempty"`
	// OOMKilled: the task's cgroup recorded an OOM kill.
	OOMKilled bool `json:",omitempty"`
}

// Successful reports a clean exit (code 0, no signal, no error).
func (e *ExitRecord) Successful() bool {
	return e.ExitCode == 0 && e.Signal == 0 && e.Err == ""
}

// startStatus is the one line a supervisor writes on its status
// descriptor once the task started, or failed to.
type startStatus struct {
	Task  *ProcRecord `json:",omitempty"`
	Error string      `json:",omitempty"`
	// Unrecoverable is true when retrying cannot help (no such command,
	// not executable).
	Unrecoverable bool `json:",omitempty"`
}

// Main is the entry point of a task supervisor process: the
// drover binary re-executed as "drover task-supervisor SPEC" by the node
// agent (args are the arguments after the subcommand: the spec path). It
// starts the task described by the spec as its child, in the task's own
// process group, records the task's pid and start time, waits for it,
// records how it ended, and returns the process exit code to use. The
// agent starts it in its own session, so it outlives the agent.
func Main(args []string) int {
	if len(args) == 2 && args[0] == initArg {
		return initMain(args[1])
	}
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: drover "+Subcommand+" SPEC")
		return 2
	}
	// The parent-death signal given to the task is bound to the thread
	// that forks it: keep this goroutine on one thread for good.
	runtime.LockOSThread()

	status := openStatusFD()
	report := func(s startStatus) {
		if status == nil {
			return
		}
		b, _ := json.Marshal(s)
		_, _ = status.Write(append(b, '\n'))
		_ = status.Close()
		status = nil
	}
	fail := func(unrecoverable bool, format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		fmt.Fprintln(os.Stderr, "task-supervisor:", msg)
		report(startStatus{Error: msg, Unrecoverable: unrecoverable})
		return 1
	}

	var spec Spec
	if err := ReadJSON(args[0], &spec); err != nil {
		return fail(true, "read spec: %v", err)
	}
	lock, err := AcquireLock(spec.StateDir)
	if err != nil {
		return fail(false, "%v", err)
	}
	defer lock.Close()
	self, err := selfRecord(spec.RunID)
	if err != nil {
		return fail(false, "%v", err)
	}
	if err := WriteJSONAtomic(filepath.Join(spec.StateDir, RecordFile), self, 0o600); err != nil {
		return fail(false, "%v", err)
	}

	var cmd *exec.Cmd
	if spec.Isolation != nil {
		// The task is started by an init of drover's own inside its
		// namespaces, which resolves its command inside the chroot.
		cmd, err = isolatedCommand(args, &spec)
	} else {
		cmd, err = plainCommand(&spec)
	}
	if err != nil {
		return fail(true, "%v", err)
	}
	outs, err := startLogCopiers(&spec)
	if err != nil {
		return fail(false, "%v", err)
	}
	cmd.Stdout, cmd.Stderr = outs.writers[0], outs.writers[1]
	var initStatus *os.File
	if spec.Isolation != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(false, "init status pipe: %v", err)
		}
		initStatus = r
		cmd.ExtraFiles = []*os.File{w} // the init's descriptor 3
	}
	// Requests to stop the supervisor are passed on to the task's group.
	sigCh := make(chan os.Signal, 4)
	signal.Notify(sigCh, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		outs.closeWriters()
		outs.wait(logDrainTimeout)
		return fail(isUnrecoverableStart(err), "start task: %v", err)
	}
	// Only the task holds the pipes' write ends now: the copiers see EOF
	// when it (and whatever it started) is gone.
	outs.closeWriters()
	if initStatus != nil {
		for _, f := range cmd.ExtraFiles {
			f.Close()
		}
		// EOF: the init became the task; a line: it could not.
		st, err := readInitStatus(initStatus)
		initStatus.Close()
		if err != nil || st.Error != "" {
			_ = cmd.Wait()
			outs.wait(logDrainTimeout)
			if err != nil {
				return fail(false, "task init: %v", err)
			}
			return fail(st.Unrecoverable, "%s", st.Error)
		}
	}
	pid := cmd.Process.Pid
	ticks, _, _ := ProcStat(pid)
	task := &ProcRecord{RunID: spec.RunID, Pid: pid, StartTicks: ticks, StartedAt: time.Now()}
	if err := WriteJSONAtomic(filepath.Join(spec.StateDir, TaskFile), task, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "task-supervisor:", err)
	}
	report(startStatus{Task: task})

	go func() {
		for sig := range sigCh {
			_ = unix.Kill(-pid, sig.(syscall.Signal))
		}
	}()

	werr := cmd.Wait()
	signal.Stop(sigCh)
	// Whatever the task left in its group goes with it.
	_ = unix.Kill(-pid, unix.SIGKILL)
	outs.wait(logDrainTimeout)

	rec := &ExitRecord{RunID: spec.RunID, ExitedAt: time.Now()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Signaled():
			rec.Signal = int(ws.Signal())
			rec.ExitCode = 128 + rec.Signal
		default:
			rec.ExitCode = ws.ExitStatus()
		}
	} else if werr != nil {
		rec.ExitCode = -1
		rec.Err = werr.Error()
	}
	if err := WriteJSONAtomic(filepath.Join(spec.StateDir, ExitFile), rec, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "task-supervisor:", err)
		return 1
	}
	return 0
}

// plainCommand is the task's command, started directly in its own
// process group.
func plainCommand(spec *Spec) (*exec.Cmd, error) {
	path, err := resolveCommand(spec.Command, spec.Dir, spec.Env)
	if err != nil {
		return nil, err
	}
	return &exec.Cmd{
		Path: path,
		Args: append([]string{spec.Command}, spec.Args...),
		Env:  spec.Env,
		Dir:  spec.Dir,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid: true,
			// The task must not outlive its supervisor: if the
			// supervisor dies, the kernel kills the task.
			Pdeathsig: syscall.SIGKILL,
		},
	}, nil
}

// logCopiers moves a task's stdout and stderr from pipes to rotated files.
type logCopiers struct {
	// writers are the pipes' write ends, handed to the task.
	writers [2]*os.File
	readers [2]*os.File
	done    chan struct{}
}

// startLogCopiers creates the task's output pipes and starts copying them
// to spec's log files.
func startLogCopiers(spec *Spec) (*logCopiers, error) {
	lc := &logCopiers{done: make(chan struct{})}
	sinks := make([]io.WriteCloser, 0, 2)
	for _, stream := range []string{logfiles.Stdout, logfiles.Stderr} {
		var sink io.WriteCloser = nopWriteCloser{io.Discard}
		if !spec.LogDisabled {
			rot, err := logfiles.NewRotator(spec.LogDir, logfiles.Base(spec.LogBase, stream), spec.LogMaxFiles, spec.LogMaxFileBytes)
			if err != nil {
				for _, s := range sinks {
					s.Close()
				}
				return nil, fmt.Errorf("open %s log: %w", stream, err)
			}
			sink = rot
		}
		sinks = append(sinks, sink)
	}
	for i := range lc.writers {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("output pipe: %w", err)
		}
		lc.readers[i], lc.writers[i] = r, w
	}
	var pending = len(sinks)
	doneCh := make(chan int, len(sinks))
	for i, sink := range sinks {
		go func(r *os.File, sink io.WriteCloser) {
			buf := make([]byte, 32<<10)
			_, _ = io.CopyBuffer(sink, r, buf)
			_ = sink.Close()
			doneCh <- i
		}(lc.readers[i], sink)
	}
	go func() {
		for ; pending > 0; pending-- {
			<-doneCh
		}
		close(lc.done)
	}()
	return lc, nil
}

func (lc *logCopiers) closeWriters() {
	for _, w := range lc.writers {
		_ = w.Close()
	}
}

// wait waits for the copiers to reach EOF; after timeout it closes the
// pipes under them.
func (lc *logCopiers) wait(timeout time.Duration) {
	select {
	case <-lc.done:
	case <-time.After(timeout):
		for _, r := range lc.readers {
			_ = r.Close()
		}
		<-lc.done
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// AcquireLock takes the task's supervisor lock, or fails if
// another supervisor holds it. The descriptor is close-on-exec, so the
// task does not inherit it: the lock lives exactly as long as the
// supervisor.
func AcquireLock(stateDir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(stateDir, LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open supervisor lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, errors.New("another supervisor is running for this task")
		}
		return nil, fmt.Errorf("lock supervisor lock: %w", err)
	}
	return f, nil
}

// LockHeld reports whether a live supervisor holds the task's
// lock.
func LockHeld(stateDir string) bool {
	f, err := os.OpenFile(filepath.Join(stateDir, LockFile), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// openStatusFD returns the status descriptor when the supervisor was given
// one, nil otherwise.
func openStatusFD() *os.File {
	if _, err := unix.FcntlInt(uintptr(statusFD), unix.F_GETFD, 0); err != nil {
		return nil
	}
	// The task must not inherit it.
	unix.CloseOnExec(statusFD)
	return os.NewFile(uintptr(statusFD), "status")
}

// selfRecord identifies the running process.
func selfRecord(runID string) (*ProcRecord, error) {
	pid := os.Getpid()
	ticks, _, err := ProcStat(pid)
	if err != nil {
		return nil, fmt.Errorf("read own start time: %w", err)
	}
	return &ProcRecord{RunID: runID, Pid: pid, StartTicks: ticks, StartedAt: time.Now()}, nil
}

// resolveCommand finds the executable for command: a path with a slash is
// taken relative to dir; a bare name is searched in the task's PATH.
func resolveCommand(command, dir string, env []string) (string, error) {
	if command == "" {
		return "", errors.New("no command")
	}
	if strings.Contains(command, "/") {
		p := command
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := checkExecutable(p); err != nil {
			return "", err
		}
		return p, nil
	}
	pathEnv := os.Getenv("PATH")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, command)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH", command)
}

func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("command %s: %w", p, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("command %s is a directory", p)
	}
	if fi.Mode()&0o111 == 0 {
		return fmt.Errorf("command %s is not executable", p)
	}
	return nil
}

// isUnrecoverableStart reports start errors that a retry cannot fix.
func isUnrecoverableStart(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) ||
		errors.Is(err, unix.ENOEXEC) || errors.Is(err, unix.EACCES)
}

// StartError is a failure to start a task.
type StartError struct {
	Msg string
	// Unrecoverable is true when retrying cannot help (no such command,
	// not executable).
	Unrecoverable bool
}

func (e *StartError) Error() string { return e.Msg }

// Handle is the agent's hold on one running supervisor and its
// task.
type Handle struct {
	runID    string
	stateDir string
	sup      ProcRecord
	task     ProcRecord
	// childDone is closed when the supervisor, a child of this process,
	// has been reaped; nil for supervisors re-attached after a restart,
	// which are watched through /proc instead.
	childDone <-chan struct{}
}

// Launcher starts supervisors.
type Launcher struct {
	// Command is the supervisor command line before the spec path.
	Command []string
	// Env is added to this process's environment for the supervisor
	// (not for the task: the task's environment is in the spec).
	Env []string
	// StartTimeout bounds how long a supervisor may take to report
	// (default 30 s).
	StartTimeout time.Duration
}

// launch writes spec to its StateDir and starts a supervisor for it. It
// returns once the task has started, or with a *StartError.
func (l *Launcher) Launch(spec *Spec) (*Handle, error) {
	if LockHeld(spec.StateDir) {
		// Never two copies of a task: an earlier supervisor is alive.
		return nil, &StartError{Msg: "a supervisor of an earlier launch of this task is still running"}
	}
	for _, f := range []string{RecordFile, TaskFile, ExitFile} {
		if err := os.Remove(filepath.Join(spec.StateDir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("clear old supervisor record: %w", err)
		}
	}
	specPath := filepath.Join(spec.StateDir, SpecFile)
	if err := WriteJSONAtomic(specPath, spec, 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(spec.StateDir, LogFile)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open supervisor log: %w", err)
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("status pipe: %w", err)
	}
	defer r.Close()

	args := append(append([]string(nil), l.Command[1:]...), specPath)
	cmd := exec.Command(l.Command[0], args...)
	cmd.Env = append(os.Environ(), l.Env...)
	cmd.Dir = "/"
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.ExtraFiles = []*os.File{w} // becomes descriptor 3
	// Its own session: no terminal signals, no tie to the agent's group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, &StartError{Msg: fmt.Sprintf("start task supervisor: %v", err)}
	}
	w.Close()
	done := make(chan struct{})
	// Reap the supervisor whenever it ends, whether or not this agent is
	// still watching (a restarted agent in the same process may be).
	go func() {
		_ = cmd.Wait()
		close(done)
	}()

	st, err := readStatus(r, l.StartTimeout)
	if err != nil {
		_ = cmd.Process.Kill()
		<-done
		return nil, &StartError{Msg: fmt.Sprintf("task supervisor: %v%s", err, logTail(logPath))}
	}
	if st.Error != "" {
		<-done
		return nil, &StartError{Msg: st.Error, Unrecoverable: st.Unrecoverable}
	}
	ticks, _, _ := ProcStat(cmd.Process.Pid)
	h := &Handle{
		runID:     spec.RunID,
		stateDir:  spec.StateDir,
		sup:       ProcRecord{RunID: spec.RunID, Pid: cmd.Process.Pid, StartTicks: ticks},
		task:      *st.Task,
		childDone: done,
	}
	var rec ProcRecord
	if err := ReadJSON(filepath.Join(spec.StateDir, RecordFile), &rec); err == nil && rec.Pid == h.sup.Pid {
		h.sup = rec
	}
	return h, nil
}

// readStatus reads the supervisor's one status line.
func readStatus(r *os.File, timeout time.Duration) (*startStatus, error) {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	_ = r.SetReadDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(r).ReadBytes('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("exited before starting the task")
		}
		return nil, fmt.Errorf("no start report: %w", err)
	}
	var st startStatus
	if err := json.Unmarshal(line, &st); err != nil {
		return nil, fmt.Errorf("bad start report: %w", err)
	}
	if st.Error == "" && (st.Task == nil || st.Task.Pid <= 0) {
		return nil, errors.New("start report without a task pid")
	}
	return &st, nil
}

// logTail returns the end of the supervisor log, for error messages.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 512 {
		b = b[len(b)-512:]
	}
	return ": " + strings.TrimSpace(string(b))
}

// State is what an agent keeps of one launch to re-attach to it: the run
// ID (written before the supervisor starts) and, once it has, the pids and
// start times of the supervisor and the task.
type State struct {
	RunID                string
	SupervisorPid        int
	SupervisorStartTicks uint64
	TaskPid              int
	TaskStartTicks       uint64
	StartedAt            time.Time
}

// State returns what to keep of h to re-attach to it later.
func (h *Handle) State() *State {
	return &State{
		RunID:                h.runID,
		SupervisorPid:        h.sup.Pid,
		SupervisorStartTicks: h.sup.StartTicks,
		TaskPid:              h.task.Pid,
		TaskStartTicks:       h.task.StartTicks,
		StartedAt:            h.task.StartedAt,
	}
}

// Task returns the task's process record.
func (h *Handle) Task() ProcRecord { return h.task }

// Supervisor returns the supervisor's process record.
func (h *Handle) Supervisor() ProcRecord { return h.sup }

// Reattach rebuilds a handle for a task launched by an earlier agent, from
// the kept State and the supervisor's own records in stateDir. It returns
// the handle when the supervisor is still running; otherwise nil and, if
// the task's end was recorded, the exit record; launched reports whether
// the task had been started at all under this run.
func Reattach(stateDir string, hs *State) (h *Handle, exit *ExitRecord, launched bool) {
	sup := ProcRecord{RunID: hs.RunID, Pid: hs.SupervisorPid, StartTicks: hs.SupervisorStartTicks}
	task := ProcRecord{RunID: hs.RunID, Pid: hs.TaskPid, StartTicks: hs.TaskStartTicks, StartedAt: hs.StartedAt}
	readRecords := func() {
		var rec ProcRecord
		if sup.Pid == 0 {
			if err := ReadJSON(filepath.Join(stateDir, RecordFile), &rec); err == nil && rec.RunID == hs.RunID {
				sup = rec
			}
		}
		if task.Pid == 0 {
			if err := ReadJSON(filepath.Join(stateDir, TaskFile), &rec); err == nil && rec.RunID == hs.RunID {
				task = rec
			}
		}
	}
	readRecords()
	// The previous agent may have stopped right after starting the
	// supervisor, before it wrote its records: while a supervisor holds
	// the lock, give it time to write them.
	for deadline := time.Now().Add(5 * time.Second); task.Pid == 0 && LockHeld(stateDir) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		readRecords()
	}
	h = &Handle{runID: hs.RunID, stateDir: stateDir, sup: sup, task: task}
	if ex := h.ReadExit(); ex != nil {
		return nil, ex, true
	}
	if task.Pid == 0 {
		// The task never started under this run: the supervisor, if
		// any, failed before starting it. Make sure it is gone.
		if ProcessRunning(sup.Pid, sup.StartTicks) {
			_ = unix.Kill(sup.Pid, unix.SIGKILL)
		}
		return nil, nil, false
	}
	if ProcessRunning(sup.Pid, sup.StartTicks) {
		return h, nil, true
	}
	// The supervisor is gone without recording the task's end. The task
	// died with it (parent-death signal); make sure of it.
	if ProcessRunning(task.Pid, task.StartTicks) {
		_ = SignalGroup(task.Pid, unix.SIGKILL)
	}
	return nil, &ExitRecord{RunID: hs.RunID, ExitCode: -1, ExitedAt: time.Now(),
		Err: "task supervisor exited without recording the task's exit status"}, true
}

// ReadExit returns the exit record of this run, or nil.
func (h *Handle) ReadExit() *ExitRecord {
	var ex ExitRecord
	if err := ReadJSON(filepath.Join(h.stateDir, ExitFile), &ex); err != nil || ex.RunID != h.runID {
		return nil
	}
	return &ex
}

// Wait blocks until the supervisor has exited, then returns how the task
// ended. It returns ctx's error when ctx ends first.
func (h *Handle) Wait(ctx context.Context) (*ExitRecord, error) {
	if h.childDone != nil {
		select {
		case <-h.childDone:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	} else if err := WaitProcessExit(ctx, h.sup.Pid, h.sup.StartTicks); err != nil {
		return nil, err
	}
	if ex := h.ReadExit(); ex != nil {
		return ex, nil
	}
	if ProcessRunning(h.task.Pid, h.task.StartTicks) {
		_ = SignalGroup(h.task.Pid, unix.SIGKILL)
	}
	return &ExitRecord{RunID: h.runID, ExitCode: -1, ExitedAt: time.Now(),
		Err: "task supervisor exited without recording the task's exit status"}, nil
}

// SignalTask sends sig to the task's process group, unless the task has
// already ended.
func (h *Handle) SignalTask(sig syscall.Signal) error {
	if h.ReadExit() != nil || !ProcessExists(h.task.Pid) {
		return nil
	}
	return SignalGroup(h.task.Pid, sig)
}

// KillSupervisor kills the supervisor itself; the kernel then kills the
// task (parent-death signal). Used only when a supervisor does not exit
// after its task was SIGKILLed.
func (h *Handle) KillSupervisor() {
	if ProcessRunning(h.sup.Pid, h.sup.StartTicks) {
		_ = unix.Kill(h.sup.Pid, unix.SIGKILL)
	}
	if ProcessRunning(h.task.Pid, h.task.StartTicks) {
		_ = SignalGroup(h.task.Pid, unix.SIGKILL)
	}
}

// KillLeftovers kills every supervisor and task recorded in the given
// task state dirs: used for allocs whose local state was lost, so nothing
// they started keeps running unwatched. It returns how many processes it
// killed.
func KillLeftovers(stateDirs []string) int {
	killed := 0
	for _, stateDir := range stateDirs {
		var task, sup ProcRecord
		if ReadJSON(filepath.Join(stateDir, TaskFile), &task) == nil && ProcessRunning(task.Pid, task.StartTicks) {
			_ = SignalGroup(task.Pid, unix.SIGKILL)
			killed++
		}
		if ReadJSON(filepath.Join(stateDir, RecordFile), &sup) == nil && ProcessRunning(sup.Pid, sup.StartTicks) {
			_ = unix.Kill(sup.Pid, unix.SIGKILL)
			killed++
		}
	}
	return killed
}
