package exec

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/drivers/rawexec"
)

var _ drivers.ExecStreamer = (*Driver)(nil)

// ExecStreaming implements drivers.ExecStreamer: the command runs as Exec
// runs it (inside the task's chroot, as its user, in its cgroups, with its
// environment), with live streams and, when asked, a terminal.
func (d *Driver) ExecStreaming(ctx context.Context, taskID string, opts *drivers.ExecOptions) (int, error) {
	cfg, t, err := d.Get(taskID)
	if err != nil {
		return 0, err
	}
	if t.Exit() != nil || t.Handle() == nil {
		return 0, fmt.Errorf("task %s has exited: %w", taskID, drivers.ErrTaskNotFound)
	}
	tc, err := Spec.Decode(cfg.Config, drivers.ValidateContext{})
	if err != nil {
		return 0, err
	}
	uid, gid, groups, err := credentials(cfg.User)
	if err != nil {
		return 0, err
	}
	wd := tc.WorkDir
	if wd == "" {
		wd = "/"
	}
	root := fmt.Sprintf("/proc/%d/root", t.Handle().Task().Pid)
	return rawexec.StreamCommand(ctx, opts, wd, cfg.EnvList(), func(c *osexec.Cmd) {
		c.SysProcAttr = &syscall.SysProcAttr{
			Chroot:     root,
			Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: groups},
		}
	}, func(pid int) {
		for _, dir := range d.cg.paths(taskID) {
			_ = os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
		}
	})
}
