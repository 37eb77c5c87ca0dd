package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/drivers/shared/logfiles"
	"github.com/drover-sched/drover/drivers/shared/supervisor"
)

// logCursorFile, in the task's state dir, records the timestamp of the
// last log line copied, so that a restarted agent goes on from there:
// nothing is lost while no agent runs (the engine keeps the container's
// log), and at most the last second's lines can be copied twice.
const logCursorFile = "docker-logs.json"

// cursorSaveEvery is how often the cursor is persisted while lines flow.
const cursorSaveEvery = time.Second

type logCursor struct {
	Since time.Time
}

// logCopier copies a container's output to the task's rotated log files,
// alloc/logs/<task>.stdout.N and .stderr.N, as the supervisor does for
// process drivers.
type logCopier struct {
	h *taskHandle

	mu      sync.Mutex
	cursor  time.Time
	savedAt time.Time
	dirty   bool
}

// run copies until the container's log ends (the container stopped) or
// ctx ends, re-attaching to the log after errors.
func (c *logCopier) run(ctx context.Context) {
	h := c.h
	cfg := h.cfg
	var cur logCursor
	if err := supervisor.ReadJSON(filepath.Join(cfg.StateDir, logCursorFile), &cur); err == nil {
		c.cursor = cur.Since
	}
	var out, errw io.Writer = io.Discard, io.Discard
	if !cfg.Logs.Disabled {
		so, err := logfiles.NewRotator(cfg.LogDir, logfiles.Base(cfg.Name, logfiles.Stdout), cfg.Logs.MaxFiles, cfg.Logs.MaxFileBytes)
		if err != nil {
			h.d.logger.Error("open stdout log", zap.String("task_id", cfg.ID), zap.Error(err))
			return
		}
		defer so.Close()
		se, err := logfiles.NewRotator(cfg.LogDir, logfiles.Base(cfg.Name, logfiles.Stderr), cfg.Logs.MaxFiles, cfg.Logs.MaxFileBytes)
		if err != nil {
			h.d.logger.Error("open stderr log", zap.String("task_id", cfg.ID), zap.Error(err))
			return
		}
		defer se.Close()
		out, errw = so, se
	}
	defer c.save(true)
	// Lines that came just before a quiet spell are recorded too.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(cursorSaveEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				c.save(false)
			}
		}
	}()
	for attempt := 0; ; attempt++ {
		err := c.copyOnce(ctx, out, errw)
		if err == nil || ctx.Err() != nil {
			return
		}
		h.d.logger.Warn("container log stream broke, re-attaching", zap.String("task_id", cfg.ID), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(time.Duration(attempt+1)*time.Second, 10*time.Second)):
		}
	}
}

// copyOnce follows the log from the cursor to its end.
func (c *logCopier) copyOnce(ctx context.Context, out, errw io.Writer) error {
	h := c.h
	opts := client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true}
	c.mu.Lock()
	since := c.cursor
	c.mu.Unlock()
	if !since.IsZero() {
		opts.Since = fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond())
	}
	rc, err := h.d.client.ContainerLogs(ctx, h.containerID, opts)
	if err != nil {
		return err
	}
	defer rc.Close()
	so := &entryWriter{c: c, dst: out}
	se := &entryWriter{c: c, dst: errw}
	if h.tty {
		// One raw stream: entries are lines.
		so.lines = true
		_, err = io.Copy(so, rc)
		so.flush()
	} else {
		// Each frame of the multiplexed stream is one log entry.
		_, err = stdcopy.StdCopy(so, se, rc)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// advance records that an entry with timestamp ts was written; it reports
// false for an entry at or before the cursor (already copied).
func (c *logCopier) advance(ts time.Time) bool {
	c.mu.Lock()
	if !ts.After(c.cursor) {
		c.mu.Unlock()
		return false
	}
	c.cursor, c.dirty = ts, true
	c.mu.Unlock()
	c.save(false)
	return true
}

// save persists the cursor: always when final, else at most every
// cursorSaveEvery.
func (c *logCopier) save(final bool) {
	c.mu.Lock()
	if !c.dirty || (!final && time.Since(c.savedAt) < cursorSaveEvery) {
		c.mu.Unlock()
		return
	}
	cur := logCursor{Since: c.cursor}
	c.savedAt, c.dirty = time.Now(), false
	c.mu.Unlock()
	if err := supervisor.WriteJSONAtomic(filepath.Join(c.h.cfg.StateDir, logCursorFile), cur, 0o600); err != nil {
		c.h.d.logger.Warn("save log cursor", zap.String("task_id", c.h.cfg.ID), zap.Error(err))
	}
}

// entryWriter strips the engine's timestamp from each log entry and
// writes the entries not copied before.
type entryWriter struct {
	c     *logCopier
	dst   io.Writer
	lines bool // entries are newline-separated (TTY); else one per Write
	buf   []byte
}

func (w *entryWriter) Write(p []byte) (int, error) {
	if !w.lines {
		return len(p), w.entry(p)
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if err := w.entry(w.buf[:i+1]); err != nil {
			return len(p), err
		}
		w.buf = w.buf[i+1:]
	}
}

func (w *entryWriter) flush() {
	if len(w.buf) > 0 {
		_ = w.entry(w.buf)
		w.buf = nil
	}
}

// entry writes one "<RFC3339Nano timestamp> <text>" entry.
func (w *entryWriter) entry(e []byte) error {
	sp := bytes.IndexByte(e, ' ')
	if sp < 0 {
		_, err := w.dst.Write(e)
		return err
	}
	ts, err := time.Parse(time.RFC3339Nano, string(e[:sp]))
	if err != nil {
		_, err := w.dst.Write(e)
		return err
	}
	if !w.c.advance(ts) {
		return nil
	}
	_, err = w.dst.Write(e[sp+1:])
	return err
}
