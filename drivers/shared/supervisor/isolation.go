package supervisor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Isolation confines a task as Nomad's exec driver does: its own mount,
// PID and IPC namespaces, a chroot into its task dir with host
// directories bind-mounted read-only, a user, and cgroups. The supervisor
// starts the task through an init of drover's own (the same binary, run
// with initArg) inside the new namespaces; the init joins the cgroups,
// makes the mounts, chroots, drops to the task's user and then execs the
// task, which thus becomes PID 1 of its namespace, as a container's
// process does under libcontainer. (Like any PID 1, it only receives the
// signals it handles; SIGKILL always ends it.)
type Isolation struct {
	// Root is the task's new root directory (its task dir).
	Root string
	// Mounts are made inside the task's mount namespace, in order.
	Mounts []Mount `json:",omitempty"`
	// Symlinks are created inside Root (path inside the task → link
	// target), after the mounts.
	Symlinks map[string]string `json:",omitempty"`
	// PrivatePID and PrivateIPC give the task its own PID and IPC
	// namespaces (Nomad's pid_mode and ipc_mode "private").
	PrivatePID bool `json:",omitempty"`
	PrivateIPC bool `json:",omitempty"`
	// UID, GID and Groups are the task's credentials.
	UID    uint32
	GID    uint32
	Groups []uint32 `json:",omitempty"`
	// Cgroups are the cgroup directories the task joins before it
	// starts (one per v1 hierarchy, or one v2 cgroup).
	Cgroups []string `json:",omitempty"`
	// WorkDir is the task's working directory inside Root ("/" when
	// empty).
	WorkDir string `json:",omitempty"`
}

// Mount is one mount inside a task's namespace. Target is a path inside
// the task's root. A bind mount has Source and no FSType; File says the
// source is a file, not a directory.
type Mount struct {
	Source   string `json:",omitempty"`
	Target   string
	FSType   string `json:",omitempty"`
	Data     string `json:",omitempty"`
	ReadOnly bool   `json:",omitempty"`
	File     bool   `json:",omitempty"`
}

// initArg makes Main run as a task's init (see Isolation).
const initArg = "-init"

// initStatusFD is the init's status descriptor: close-on-exec, so it
// reaches EOF when the init has become the task, or carries one JSON line
// saying why it could not.
const initStatusFD = 3

// isolatedCommand is the command that starts spec's task through an init
// in new namespaces. args are the supervisor's own arguments (its spec
// path last): the init is this binary run the same way with initArg.
func isolatedCommand(args []string, spec *Spec) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable for the task init: %w", err)
	}
	iso := spec.Isolation
	if iso.Root == "" || !filepath.IsAbs(iso.Root) {
		return nil, fmt.Errorf("isolation root %q must be an absolute path", iso.Root)
	}
	prefix := os.Args[:len(os.Args)-len(args)]
	initArgs := append(append(append([]string(nil), prefix...), initArg), args[len(args)-1])
	flags := uintptr(unix.CLONE_NEWNS)
	if iso.PrivatePID {
		flags |= unix.CLONE_NEWPID
	}
	if iso.PrivateIPC {
		flags |= unix.CLONE_NEWIPC
	}
	return &exec.Cmd{
		Path: exe,
		Args: initArgs,
		// The init needs the supervisor's environment to run as the
		// init; it gives the task the task's.
		Env: os.Environ(),
		Dir: "/",
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:    true,
			Pdeathsig:  syscall.SIGKILL,
			Cloneflags: flags,
		},
	}, nil
}

// readInitStatus reads the init's report: nothing (EOF) when the task
// started.
func readInitStatus(r io.Reader) (*startStatus, error) {
	line, err := bufio.NewReader(r).ReadBytes('\n')
	if errors.Is(err, io.EOF) && len(line) == 0 {
		return &startStatus{}, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var st startStatus
	if err := json.Unmarshal(line, &st); err != nil {
		return nil, fmt.Errorf("bad init report %q: %w", line, err)
	}
	return &st, nil
}

// initMain is a task's init: it runs inside the task's new namespaces,
// as root, and ends by exec'ing the task.
func initMain(specPath string) int {
	// Credentials and the parent-death signal are per thread until exec.
	runtime.LockOSThread()
	status := os.NewFile(initStatusFD, "init-status")
	fail := func(unrecoverable bool, format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		b, _ := json.Marshal(startStatus{Error: msg, Unrecoverable: unrecoverable})
		if status != nil {
			_, _ = status.Write(append(b, '\n'))
		}
		fmt.Fprintln(os.Stderr, "task-init:", msg)
		return 127
	}
	var spec Spec
	if err := ReadJSON(specPath, &spec); err != nil {
		return fail(true, "read spec: %v", err)
	}
	iso := spec.Isolation
	if iso == nil {
		return fail(true, "spec has no isolation")
	}
	// Join the task's cgroups first: what this process allocated before
	// is charged to the supervisor's, and exec frees it.
	for _, cg := range iso.Cgroups {
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return fail(false, "join cgroup %s: %v", cg, err)
		}
	}
	// Nothing mounted here may show on the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fail(false, "make mounts private: %v", err)
	}
	for _, m := range iso.Mounts {
		if err := mountInRoot(iso.Root, m); err != nil {
			return fail(true, "%v", err)
		}
	}
	for link, target := range iso.Symlinks {
		p := filepath.Join(iso.Root, link)
		_ = os.Remove(p)
		if err := os.Symlink(target, p); err != nil {
			return fail(true, "symlink %s: %v", link, err)
		}
	}
	if err := unix.Chroot(iso.Root); err != nil {
		return fail(false, "chroot %s: %v", iso.Root, err)
	}
	wd := iso.WorkDir
	if wd == "" {
		wd = "/"
	}
	if err := os.Chdir(wd); err != nil {
		return fail(true, "work dir %s: %v", wd, err)
	}
	path, err := resolveCommand(spec.Command, wd, spec.Env)
	if err != nil {
		return fail(true, "%v (inside the task's chroot)", err)
	}
	groups := make([]int, len(iso.Groups))
	for i, g := range iso.Groups {
		groups[i] = int(g)
	}
	if err := syscall.Setgroups(groups); err != nil {
		return fail(false, "setgroups: %v", err)
	}
	if err := syscall.Setgid(int(iso.GID)); err != nil {
		return fail(false, "setgid %d: %v", iso.GID, err)
	}
	if err := syscall.Setuid(int(iso.UID)); err != nil {
		return fail(false, "setuid %d: %v", iso.UID, err)
	}
	// Changing credentials cleared the parent-death signal: the task
	// must still die with its supervisor.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fail(false, "parent-death signal: %v", err)
	}
	unix.CloseOnExec(initStatusFD)
	argv := append([]string{spec.Command}, spec.Args...)
	err = syscall.Exec(path, argv, spec.Env)
	return fail(isUnrecoverableStart(err), "exec %s: %v", spec.Command, err)
}

// mountInRoot makes m under root, creating its target.
func mountInRoot(root string, m Mount) error {
	target := filepath.Join(root, filepath.Clean("/"+m.Target))
	if !strings.HasPrefix(target, root+"/") {
		return fmt.Errorf("mount target %q leaves the task's root", m.Target)
	}
	if m.File {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("mount point %s: %w", m.Target, err)
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return fmt.Errorf("mount point %s: %w", m.Target, err)
		}
		f.Close()
	} else if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("mount point %s: %w", m.Target, err)
	}
	if m.FSType == "" {
		if err := unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s on %s: %w", m.Source, m.Target, err)
		}
		if m.ReadOnly {
			if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("make %s read-only: %w", m.Target, err)
			}
		}
		return nil
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if m.FSType == "proc" {
		flags |= unix.MS_NOEXEC
	}
	if m.ReadOnly {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount(m.FSType, target, m.FSType, flags, m.Data); err != nil {
		return fmt.Errorf("mount %s on %s: %w", m.FSType, m.Target, err)
	}
	return nil
}
