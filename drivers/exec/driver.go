// Package exec is the exec driver: the task's command runs isolated as
// Nomad's exec driver runs it, in its own mount, PID and IPC namespaces,
// chrooted into its task dir with the host directories of chroot_env
// bind-mounted read-only, as its user (Nomad's default nobody), with its
// memory (limit and hard limit) and CPU shares in cgroups (v1 or v2,
// whichever the host has). Tasks run under drover's task supervisor, so
// they outlive agent restarts. It decides how an exec task is confined;
// the supervisor package does the confining.
package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/drivers/rawexec"
	"github.com/drover-sched/drover/drivers/shared/supervisor"
	"github.com/drover-sched/drover/structs"
)

// Name is the driver's name in job specs.
const Name = "exec"

// DefaultUser is the user tasks run as when they name none (Nomad's).
const DefaultUser = "nobody"

// DefaultChrootEnv maps host paths to where they appear in a task's
// chroot: Nomad's default chroot_env. Paths missing on the host are
// skipped.
var DefaultChrootEnv = map[string]string{
	"/bin":                 "/bin",
	"/etc":                 "/etc",
	"/lib":                 "/lib",
	"/lib32":               "/lib32",
	"/lib64":               "/lib64",
	"/run/resolvconf":      "/run/resolvconf",
	"/sbin":                "/sbin",
	"/usr":                 "/usr",
	"/run/systemd/resolve": "/run/systemd/resolve",
}

// devices are the host device files a task's /dev holds.
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// Driver runs exec tasks. Create it with New.
type Driver struct {
	*supervisor.Pool
	cg         *cgroups
	unhealthy  string // why tasks cannot run here, "" when they can
	chrootEnv  map[string]string
	detectedAt time.Time
}

var (
	_ drivers.Driver       = (*Driver)(nil)
	_ drivers.AllocCleaner = (*Driver)(nil)
)

// New returns the driver. It can run tasks only on Linux, as root, with
// cgroups: otherwise its fingerprint says why not.
func New(opts drivers.Options) (*Driver, error) {
	if len(opts.SupervisorCommand) == 0 {
		return nil, errors.New("exec: no task supervisor command")
	}
	l := &supervisor.Launcher{Command: opts.SupervisorCommand, Env: opts.SupervisorEnv}
	d := &Driver{Pool: supervisor.NewPool(Name, l), chrootEnv: DefaultChrootEnv, detectedAt: time.Now()}
	switch {
	case runtime.GOOS != "linux":
		d.unhealthy = "the exec driver needs Linux"
	case os.Geteuid() != 0:
		d.unhealthy = "the exec driver must run as root"
	default:
		cg, err := detectCgroups("/proc/self/mountinfo")
		if err != nil {
			d.unhealthy = "cgroups unavailable: " + err.Error()
		}
		d.cg = cg
	}
	return d, nil
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// Capabilities implements drivers.Driver: signals, exec, a chroot.
func (d *Driver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{SendSignals: true, Exec: true, FSIsolation: drivers.FSIsolationChroot}
}

// Fingerprint implements drivers.Driver.
func (d *Driver) Fingerprint(context.Context) *structs.DriverInfo {
	if d.unhealthy != "" {
		return &structs.DriverInfo{Detected: true, Healthy: false, HealthDescription: d.unhealthy, UpdateTime: d.detectedAt}
	}
	return &structs.DriverInfo{
		Attributes:        map[string]string{"driver.exec": "1", "driver.exec.cgroups": d.cg.version()},
		Detected:          true,
		Healthy:           true,
		HealthDescription: "Healthy",
		UpdateTime:        d.detectedAt,
	}
}

// credentials looks up the task's user (DefaultUser when empty).
func credentials(name string) (uid, gid uint32, groups []uint32, err error) {
	if name == "" {
		name = DefaultUser
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("task user %q: %w", name, err)
	}
	id := func(s string) (uint32, error) {
		n, err := strconv.ParseUint(s, 10, 32)
		return uint32(n), err
	}
	if uid, err = id(u.Uid); err != nil {
		return 0, 0, nil, fmt.Errorf("task user %q: uid %q: %w", name, u.Uid, err)
	}
	if gid, err = id(u.Gid); err != nil {
		return 0, 0, nil, fmt.Errorf("task user %q: gid %q: %w", name, u.Gid, err)
	}
	gids, _ := u.GroupIds()
	for _, g := range gids {
		if n, err := id(g); err == nil && n != gid {
			groups = append(groups, n)
		}
	}
	return uid, gid, groups, nil
}

// Start implements drivers.Driver.
func (d *Driver) Start(_ context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if d.unhealthy != "" {
		return nil, drivers.Unrecoverable(errors.New(d.unhealthy))
	}
	tc, err := Spec.Decode(cfg.Config, drivers.ValidateContext{})
	if err != nil {
		return nil, drivers.Unrecoverable(fmt.Errorf("exec config: %w", err))
	}
	uid, gid, groups, err := credentials(cfg.User)
	if err != nil {
		return nil, drivers.Unrecoverable(err)
	}
	// The task owns its private directories, as in Nomad.
	for _, dir := range []string{cfg.LocalDir, cfg.SecretsDir} {
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			return nil, fmt.Errorf("chown %s: %w", dir, err)
		}
	}
	paths, err := d.cg.create(cfg.ID, cfg.Resources)
	if err != nil {
		return nil, err
	}
	mounts, links, err := d.chrootMounts(cfg, tc)
	if err != nil {
		_ = d.cg.remove(cfg.ID)
		return nil, drivers.Unrecoverable(err)
	}
	h, err := d.Launch(cfg, &supervisor.Spec{
		RunID:           cfg.ID,
		Command:         tc.Command,
		Args:            tc.Args,
		Env:             cfg.EnvList(),
		Dir:             cfg.TaskDir,
		LogDir:          cfg.LogDir,
		LogBase:         cfg.Name,
		LogMaxFiles:     cfg.Logs.MaxFiles,
		LogMaxFileBytes: cfg.Logs.MaxFileBytes,
		LogDisabled:     cfg.Logs.Disabled,
		StateDir:        cfg.StateDir,
		Isolation: &supervisor.Isolation{
			Root:       cfg.TaskDir,
			Mounts:     mounts,
			Symlinks:   links,
			PrivatePID: tc.PIDMode != ModeHost,
			PrivateIPC: tc.IPCMode != ModeHost,
			UID:        uid,
			GID:        gid,
			Groups:     groups,
			Cgroups:    paths,
			WorkDir:    tc.WorkDir,
		},
	})
	if err != nil {
		_ = d.cg.remove(cfg.ID)
		return nil, err
	}
	return h, nil
}

// chrootMounts are the mounts of a task's chroot: the chroot_env
// directories read-only, the alloc's shared directory at /alloc, /proc, a
// small /dev, the task's host volumes, and an empty read-only cover over
// the driver's state dir.
func (d *Driver) chrootMounts(cfg *drivers.TaskConfig, tc *TaskConfig) ([]supervisor.Mount, map[string]string, error) {
	var mounts []supervisor.Mount
	srcs := make([]string, 0, len(d.chrootEnv))
	for src := range d.chrootEnv {
		srcs = append(srcs, src)
	}
	sort.Strings(srcs)
	for _, src := range srcs {
		fi, err := os.Stat(src)
		if err != nil {
			continue // not on this host
		}
		mounts = append(mounts, supervisor.Mount{Source: src, Target: d.chrootEnv[src], ReadOnly: true, File: !fi.IsDir()})
	}
	mounts = append(mounts, supervisor.Mount{Source: cfg.SharedDir, Target: drivers.TaskAllocPath})
	mounts = append(mounts, supervisor.Mount{FSType: "proc", Target: "/proc"})
	mounts = append(mounts, supervisor.Mount{FSType: "tmpfs", Target: "/dev", Data: "mode=755,size=64k"})
	for _, dev := range devices {
		if _, err := os.Stat("/dev/" + dev); err == nil {
			mounts = append(mounts, supervisor.Mount{Source: "/dev/" + dev, Target: "/dev/" + dev, File: true})
		}
	}
	mounts = append(mounts, supervisor.Mount{FSType: "tmpfs", Target: "/dev/shm", Data: "mode=1777"})
	// Host volumes (volume_mount), bound inside the chroot.
	for _, m := range cfg.Mounts {
		fi, err := os.Stat(m.HostPath)
		if err != nil {
			return nil, nil, fmt.Errorf("host volume %s: %w", m.HostPath, err)
		}
		mounts = append(mounts, supervisor.Mount{Source: m.HostPath, Target: m.TaskPath, ReadOnly: m.ReadOnly, File: !fi.IsDir()})
	}
	rel, err := filepath.Rel(cfg.TaskDir, cfg.StateDir)
	if err != nil || rel == "." || filepath.IsAbs(rel) || rel == ".." || len(rel) > 2 && rel[:3] == "../" {
		return nil, nil, fmt.Errorf("state dir %s is not inside the task dir %s", cfg.StateDir, cfg.TaskDir)
	}
	mounts = append(mounts, supervisor.Mount{FSType: "tmpfs", Target: "/" + rel, ReadOnly: true, Data: "size=4k,mode=0"})
	links := map[string]string{
		"/dev/fd": "/proc/self/fd", "/dev/stdin": "/proc/self/fd/0",
		"/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2",
	}
	return mounts, links, nil
}

// Recover implements drivers.Driver (the task's cgroups are named by its
// ID).
func (d *Driver) Recover(_ context.Context, h *drivers.TaskHandle) error {
	if d.unhealthy != "" {
		return errors.New(d.unhealthy)
	}
	return d.Pool.Recover(h)
}

// Wait implements drivers.Driver; an exit caused by the task's memory
// limit is reported as an OOM kill.
func (d *Driver) Wait(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	in, err := d.Pool.Wait(ctx, taskID)
	if err != nil {
		return nil, err
	}
	out := make(chan *drivers.ExitResult, 1)
	go func() {
		defer close(out)
		if ex, ok := <-in; ok {
			if d.cg != nil && d.cg.oomKilled(taskID) {
				ex.OOMKilled = true
			}
			out <- ex
		}
	}()
	return out, nil
}

// Destroy implements drivers.Driver: the task's cgroups go too.
func (d *Driver) Destroy(ctx context.Context, taskID string, force bool) error {
	if err := d.Pool.Destroy(ctx, taskID, force); err != nil {
		return err
	}
	if d.cg == nil {
		return nil
	}
	return d.cg.remove(taskID)
}

// Exec implements drivers.Driver: cmd runs inside the task's filesystem
// (its chroot, seen through the task's /proc/<pid>/root), as its user, in
// its cgroups, with its environment. It does not enter the task's PID and
// IPC namespaces.
func (d *Driver) Exec(ctx context.Context, taskID string, cmd []string) (*drivers.ExecResult, error) {
	cfg, t, err := d.Get(taskID)
	if err != nil {
		return nil, err
	}
	if t.Exit() != nil || t.Handle() == nil {
		return nil, fmt.Errorf("task %s has exited: %w", taskID, drivers.ErrTaskNotFound)
	}
	tc, err := Spec.Decode(cfg.Config, drivers.ValidateContext{})
	if err != nil {
		return nil, err
	}
	uid, gid, groups, err := credentials(cfg.User)
	if err != nil {
		return nil, err
	}
	wd := tc.WorkDir
	if wd == "" {
		wd = "/"
	}
	root := fmt.Sprintf("/proc/%d/root", t.Handle().Task().Pid)
	return rawexec.RunCommand(ctx, cmd, wd, cfg.EnvList(), func(c *osexec.Cmd) {
		c.SysProcAttr = &syscall.SysProcAttr{
			Chroot:     root,
			Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: groups},
			Setpgid:    true,
		}
	}, func(pid int) {
		// Into the task's cgroups right after it started (cgroup v1
		// cannot place a child before it runs).
		for _, dir := range d.cg.paths(taskID) {
			_ = os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
		}
	})
}

// Stats implements drivers.Driver, from the task's cgroups.
func (d *Driver) Stats(_ context.Context, taskID string) (*drivers.ResourceUsage, error) {
	if _, _, err := d.Get(taskID); err != nil {
		return nil, err
	}
	return d.cg.usage(taskID)
}

// CleanupAlloc implements drivers.AllocCleaner: it kills the supervisors
// and tasks recorded in stateDirs and removes their cgroups.
func (d *Driver) CleanupAlloc(_ context.Context, _ string, stateDirs []string) int {
	n := supervisor.KillLeftovers(stateDirs)
	if d.cg == nil {
		return n
	}
	for _, dir := range stateDirs {
		var spec struct{ RunID string }
		b, err := os.ReadFile(filepath.Join(dir, supervisor.SpecFile))
		if err != nil || json.Unmarshal(b, &spec) != nil || spec.RunID == "" {
			continue
		}
		n += len(d.cg.procs(spec.RunID))
		_ = d.cg.remove(spec.RunID)
	}
	return n
}
