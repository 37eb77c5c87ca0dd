package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ForceKillWait bounds how long a SIGKILLed task may take to be reported
// gone before its supervisor is killed too.
const ForceKillWait = 10 * time.Second

// Task is one supervised task as a process driver holds it: its handle,
// and how it ended once it has. One goroutine per task watches the
// supervisor, from the first Wait or Stop until the task ends or Close.
type Task struct {
	h *Handle

	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	exit   *ExitRecord // set before done is closed
}

// Watch returns the Task of a running supervisor.
func Watch(h *Handle) *Task {
	ctx, cancel := context.WithCancel(context.Background())
	return &Task{h: h, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// Ended returns the Task of a launch that has already ended.
func Ended(ex *ExitRecord) *Task {
	t := &Task{done: make(chan struct{}), exit: ex}
	t.once.Do(func() {})
	close(t.done)
	return t
}

// Handle returns the supervisor handle (nil for a task that had ended
// when it was recovered).
func (t *Task) Handle() *Handle { return t.h }

func (t *Task) watch() {
	t.once.Do(func() {
		go func() {
			ex, err := t.h.Wait(t.ctx)
			if err != nil {
				return // Close: the task runs on, unwatched
			}
			t.exit = ex
			close(t.done)
		}()
	})
}

// Done is closed once the task has ended.
func (t *Task) Done() <-chan struct{} {
	t.watch()
	return t.done
}

// Exit returns how the task ended, nil while it runs.
func (t *Task) Exit() *ExitRecord {
	select {
	case <-t.done:
		return t.exit
	default:
		return nil
	}
}

// Wait returns a channel that receives the task's exit once; it is closed
// without a value when ctx ends first.
func (t *Task) Wait(ctx context.Context) <-chan *ExitRecord {
	t.watch()
	ch := make(chan *ExitRecord, 1)
	go func() {
		defer close(ch)
		select {
		case <-t.done:
			ch <- t.exit
		case <-ctx.Done():
		}
	}()
	return ch
}

// Signal sends sig to the task's process group, unless it has ended.
func (t *Task) Signal(sig syscall.Signal) error {
	if t.Exit() != nil || t.h == nil {
		return nil
	}
	return t.h.SignalTask(sig)
}

// Stop sends sig, waits up to timeout for the task to end, then SIGKILLs
// it; a supervisor that does not report the end within ForceKillWait is
// killed itself. It returns once the task has ended, or an error if even
// that did not end it.
func (t *Task) Stop(ctx context.Context, timeout time.Duration, sig syscall.Signal) error {
	done := t.Done()
	if t.Exit() != nil {
		return nil
	}
	wait := func(d time.Duration) bool {
		select {
		case <-done:
			return true
		case <-time.After(d):
			return false
		case <-ctx.Done():
			return false
		}
	}
	if err := t.h.SignalTask(sig); err != nil {
		return fmt.Errorf("signal task: %w", err)
	}
	if wait(timeout) {
		return nil
	}
	if err := t.h.SignalTask(unix.SIGKILL); err != nil {
		return fmt.Errorf("kill task: %w", err)
	}
	if wait(ForceKillWait) {
		return nil
	}
	t.h.KillSupervisor()
	if wait(ForceKillWait) {
		return nil
	}
	return errors.New("task supervisor still running after SIGKILL")
}

// Close stops watching; the task itself is not touched.
func (t *Task) Close() {
	if t.cancel != nil {
		t.cancel()
	}
}

// clockTicks is the kernel's USER_HZ, the unit of CPU times in /proc
// (100 on every Linux architecture drover runs on).
const clockTicks = 100

// GroupUsage sums the resident memory (bytes) and CPU time (ns, user +
// system, including reaped children) of every process in process group
// pgid: a task and whatever it started, unless they left its group.
func GroupUsage(pgid int) (rssBytes, cpuNanos uint64, err error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0, err
	}
	page := uint64(os.Getpagesize())
	found := false
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		// f[0] is field 3 (state); pgrp is field 5, utime 14, stime 15,
		// cutime 16, cstime 17, rss 24 (pages).
		if len(f) < 22 {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g != pgid && pid != pgid {
			continue
		}
		found = true
		var ticks uint64
		for _, k := range []int{11, 12, 13, 14} {
			n, _ := strconv.ParseInt(f[k], 10, 64)
			if n > 0 {
				ticks += uint64(n)
			}
		}
		cpuNanos += ticks * uint64(time.Second/clockTicks)
		if rss, _ := strconv.ParseUint(f[21], 10, 64); rss > 0 {
			rssBytes += rss * page
		}
	}
	if !found {
		return 0, 0, fmt.Errorf("no process in group %d", pgid)
	}
	return rssBytes, cpuNanos, nil
}
