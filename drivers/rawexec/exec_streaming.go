package rawexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/drover-sched/drover/drivers"
)

// outputDrainTimeout bounds how long a streamed command's output is still
// copied after it exited (a child it left behind may hold the pipe or the
// terminal open).
const outputDrainTimeout = time.Second

var _ drivers.ExecStreamer = (*Driver)(nil)

// ExecStreaming implements drivers.ExecStreamer: the command runs in the
// task dir with the task's environment, as the agent's user.
func (d *Driver) ExecStreaming(ctx context.Context, taskID string, opts *drivers.ExecOptions) (int, error) {
	cfg, _, err := d.Get(taskID)
	if err != nil {
		return 0, err
	}
	return StreamCommand(ctx, opts, cfg.TaskDir, cfg.EnvList(), nil, nil)
}

// StreamCommand runs opts.Command in dir with env, its streams wired to
// opts (see drivers.ExecStreamer), and returns its exit code (128 + the
// signal when a signal ended it). prepare, when set, adjusts the command
// before it starts (the exec driver's chroot and credentials); started is
// told its pid once it runs. The command runs in its own process group
// (its own session with a terminal), all of which is killed when ctx ends.
func StreamCommand(ctx context.Context, opts *drivers.ExecOptions, dir string, env []string,
	prepare func(*exec.Cmd), started func(pid int)) (int, error) {
	if opts == nil || len(opts.Command) == 0 || opts.Command[0] == "" {
		return 0, errors.New("exec: no command")
	}
	c := exec.CommandContext(ctx, opts.Command[0], opts.Command[1:]...)
	c.Dir, c.Env = dir, env
	if prepare != nil {
		prepare(c)
	}
	attrs := c.SysProcAttr
	if attrs == nil {
		attrs = &syscall.SysProcAttr{}
	}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = outputDrainTimeout

	var wait func() error
	if opts.Tty {
		attrs.Setpgid, attrs.Setsid, attrs.Setctty, attrs.Ctty = false, true, true, 0
		term, err := pty.StartWithAttrs(c, nil, attrs)
		if err != nil {
			return 0, fmt.Errorf("exec %s: %w", opts.Command[0], err)
		}
		wait = terminalSession(c, term, opts)
	} else {
		attrs.Setpgid = true
		c.SysProcAttr = attrs
		c.Stdout, c.Stderr = writerOrDiscard(opts.Stdout), writerOrDiscard(opts.Stderr)
		var stdin io.WriteCloser
		if opts.Stdin != nil {
			var err error
			if stdin, err = c.StdinPipe(); err != nil {
				return 0, fmt.Errorf("exec %s: %w", opts.Command[0], err)
			}
		}
		if err := c.Start(); err != nil {
			return 0, fmt.Errorf("exec %s: %w", opts.Command[0], err)
		}
		if stdin != nil {
			// Not waited for: the reader may never end (an open
			// websocket); the pipe closes when the command exits.
			go func() {
				_, _ = io.Copy(stdin, opts.Stdin)
				_ = stdin.Close()
			}()
		}
		wait = c.Wait
	}
	if started != nil {
		started(c.Process.Pid)
	}
	return exitCode(wait(), opts.Command[0])
}

// terminalSession copies between the terminal and opts while c runs and
// returns the function that waits for c and the end of its output.
func terminalSession(c *exec.Cmd, term *os.File, opts *drivers.ExecOptions) func() error {
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		_, _ = io.Copy(writerOrDiscard(opts.Stdout), term) // ends with EIO once the terminal closes
	}()
	if opts.Stdin != nil {
		go func() { _, _ = io.Copy(term, opts.Stdin) }()
	}
	stopResize := make(chan struct{})
	resizeDone := make(chan struct{})
	if opts.Resize == nil {
		close(resizeDone)
	} else {
		go func() {
			defer close(resizeDone)
			for {
				select {
				case sz, ok := <-opts.Resize:
					if !ok {
						return
					}
					_ = pty.Setsize(term, &pty.Winsize{Rows: uint16(sz.Height), Cols: uint16(sz.Width)})
				case <-stopResize:
					return
				}
			}
		}()
	}
	return func() error {
		err := c.Wait()
		close(stopResize)
		<-resizeDone
		select {
		case <-outDone:
		case <-time.After(outputDrainTimeout):
		}
		_ = term.Close()
		return err
	}
}

// exitCode turns Wait's error into an exit code: a non-zero exit is not
// an error.
func exitCode(err error, name string) (int, error) {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	case errors.Is(err, exec.ErrWaitDelay):
		return 0, nil // exited; a child kept its output open
	default:
		return 0, fmt.Errorf("exec %s: %w", name, err)
	}
}

func writerOrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
