package docker

import (
	"context"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/drivers"
)

// oomRecheck is how many more times a SIGKILLed container is inspected
// for an OOM kill.
const oomRecheck = 10

// logsDrainWait bounds how long an exit waits for the container's last
// log lines to be copied before it is reported.
const logsDrainWait = 2 * time.Second

// taskHandle is one container the driver runs: it watches the container
// until it stops, and copies its log, from Start (or Recover) until the
// container stops or the driver closes.
type taskHandle struct {
	d           *Driver
	cfg         *drivers.TaskConfig
	containerID string
	tty         bool

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	exit   *drivers.ExitResult // set before done is closed
	logs   chan struct{}       // closed when the log copier returns
	once   sync.Once
}

func newTaskHandle(d *Driver, cfg *drivers.TaskConfig, containerID string, tty bool) *taskHandle {
	ctx, cancel := context.WithCancel(d.ctx)
	return &taskHandle{d: d, cfg: cfg, containerID: containerID, tty: tty, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), logs: make(chan struct{})}
}

// start begins watching and copying logs.
func (h *taskHandle) start() {
	h.once.Do(func() {
		go func() {
			defer close(h.logs)
			(&logCopier{h: h}).run(h.ctx)
		}()
		go h.watch()
	})
}

// watch waits for the container to stop and records how it ended; a
// broken wait (the engine restarting) is retried.
func (h *taskHandle) watch() {
	for attempt := 0; ; attempt++ {
		res := h.d.client.ContainerWait(h.ctx, h.containerID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		select {
		case <-res.Result:
			h.finish(h.inspectExit())
			return
		case err := <-res.Error:
			if h.ctx.Err() != nil {
				return
			}
			if cerrdefs.IsNotFound(err) {
				h.finish(&drivers.ExitResult{ExitCode: -1, Err: "container " + h.containerID + " was removed", ExitedAt: time.Now()})
				return
			}
			h.d.logger.Warn("waiting on container failed, retrying", zap.String("container_id", h.containerID), zap.Error(err))
		case <-h.ctx.Done():
			return
		}
		select {
		case <-h.ctx.Done():
			return
		case <-time.After(min(time.Duration(attempt+1)*time.Second, 10*time.Second)):
		}
	}
}

// inspectExit reads how the stopped container ended.
func (h *taskHandle) inspectExit() *drivers.ExitResult {
	var st *container.State
	for i := 0; ; i++ {
		ins, err := h.d.client.ContainerInspect(h.ctx, h.containerID, client.ContainerInspectOptions{})
		if err != nil {
			return &drivers.ExitResult{ExitCode: -1, Err: "inspect stopped container: " + err.Error(), ExitedAt: time.Now()}
		}
		st = ins.Container.State
		// The engine learns of an OOM kill apart from the exit, and may
		// record it a moment later: look again at a SIGKILL death.
		if st == nil || st.OOMKilled || st.ExitCode != 137 || i == oomRecheck {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st == nil {
		return &drivers.ExitResult{ExitCode: -1, Err: "stopped container has no state", ExitedAt: time.Now()}
	}
	ex := &drivers.ExitResult{ExitCode: st.ExitCode, OOMKilled: st.OOMKilled, Err: st.Error}
	if t, err := time.Parse(time.RFC3339Nano, st.FinishedAt); err == nil && t.Year() > 1 {
		ex.ExitedAt = t
	} else {
		ex.ExitedAt = time.Now()
	}
	if st.ExitCode > 128 && st.ExitCode < 128+65 {
		// The engine reports only the code; a signal death is 128+n.
		ex.Signal = st.ExitCode - 128
	}
	return ex
}

func (h *taskHandle) finish(ex *drivers.ExitResult) {
	// The last lines first, so that a dead task's log is complete.
	select {
	case <-h.logs:
	case <-time.After(logsDrainWait):
	}
	h.exit = ex
	close(h.done)
}

// exited returns how the container ended, nil while it runs.
func (h *taskHandle) exited() *drivers.ExitResult {
	select {
	case <-h.done:
		return h.exit
	default:
		return nil
	}
}

// close stops watching and copying (the container is not touched).
func (h *taskHandle) close() { h.cancel() }
