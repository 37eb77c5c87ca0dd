package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/drover-sched/drover/drivers/shared/logfiles"
)

// Pace of a followed log stream.
const (
	// logFollowPoll is how often a followed stream looks for new output.
	logFollowPoll = 200 * time.Millisecond
	// logHeartbeat is how often a followed stream with nothing new calls
	// emit without data, so that the caller can keep its connection
	// alive (and notice a client that went away).
	logHeartbeat = 10 * time.Second
	// logChunkSize is the most data one emit carries, in bytes.
	logChunkSize = 64 << 10
)

// Log stream origins.
const (
	LogOriginStart = "start"
	LogOriginEnd   = "end"
)

// ErrBadLogRequest is wrapped by the errors StreamLogs returns for bad
// arguments.
var ErrBadLogRequest = errors.New("bad log request")

// StreamLogs streams a task's stdout or stderr (logType) as its rotated
// files hold it, oldest file first. offset is a byte count into the
// concatenated files, counted from the start or, with origin "end", back
// from the end. With follow, it waits for new output (also across
// rotations) until the task is dead and everything is read, or ctx ends.
//
// emit receives each chunk: the file (relative to the alloc dir, as
// "alloc/logs/web.stdout.0"), the offset in that file just past the
// chunk, and the data. It is called once with no data before anything
// else (the request is valid), and again without data every logHeartbeat
// while a followed stream is idle. An emit error ends the stream with
// that error.
//
// An unknown alloc or task is an error wrapping fs.ErrNotExist; bad
// arguments wrap ErrBadLogRequest.
func (a *Agent) StreamLogs(ctx context.Context, allocID, task, logType, origin string, offset int64, follow bool,
	emit func(file string, offset int64, data []byte) error) error {
	switch {
	case logType != LogTypeStdout && logType != LogTypeStderr:
		return fmt.Errorf("%w: type must be %q or %q, not %q", ErrBadLogRequest, LogTypeStdout, LogTypeStderr, logType)
	case origin == "":
		origin = LogOriginStart
	case origin != LogOriginStart && origin != LogOriginEnd:
		return fmt.Errorf("%w: origin must be %q or %q, not %q", ErrBadLogRequest, LogOriginStart, LogOriginEnd, origin)
	}
	if offset < 0 {
		return fmt.Errorf("%w: offset must not be negative", ErrBadLogRequest)
	}
	if task == "" || validTaskDirName(task) != nil {
		return fmt.Errorf("%w: a task name is required", ErrBadLogRequest)
	}
	ar := a.runner(allocID)
	ad := a.AllocDir(allocID)
	if ar == nil && (allocID == "" || filepath.Base(allocID) != allocID || !ad.Exists()) {
		return fmt.Errorf("unknown allocation %q on this node: %w", allocID, fs.ErrNotExist)
	}
	var tr *taskRunner
	if ar != nil {
		for _, t := range ar.taskList() {
			if t.task.Name == task {
				tr = t
			}
		}
		if tr == nil {
			return fmt.Errorf("allocation %s has no task %q: %w", allocID, task, fs.ErrNotExist)
		}
	}
	taskDone := func() bool {
		if tr == nil {
			return true
		}
		select {
		case <-ar.WaitCh():
			return true
		default:
		}
		return tr.isDead()
	}

	s := &logStream{dir: ad.LogDir(), base: logfiles.Base(task, logType), emit: emit}
	if err := s.seek(origin, offset); err != nil {
		return err
	}
	defer s.close()
	if err := emit("", 0, nil); err != nil {
		return err
	}
	lastSent := time.Now()
	for {
		n, err := s.drain()
		if err != nil {
			return err
		}
		if n > 0 {
			lastSent = time.Now()
			continue
		}
		moved, err := s.next()
		if err != nil {
			return err
		}
		if moved {
			continue
		}
		if !follow {
			return nil
		}
		if taskDone() {
			// Read what the task wrote last, then stop.
			if n, err := s.drain(); err != nil || n > 0 {
				if err != nil {
					return err
				}
				continue
			}
			if moved, err := s.next(); err != nil || moved {
				if err != nil {
					return err
				}
				continue
			}
			return nil
		}
		if time.Since(lastSent) >= logHeartbeat {
			if err := emit("", 0, nil); err != nil {
				return err
			}
			lastSent = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(logFollowPoll):
		}
	}
}

// logStream reads a stream's rotated files in order.
type logStream struct {
	dir  string
	base string
	emit func(file string, offset int64, data []byte) error

	idx int      // index of the file being read
	pos int64    // offset in it
	f   *os.File // open file, nil until it exists
	buf []byte
}

// seek positions the stream offset bytes from its start or end.
func (s *logStream) seek(origin string, offset int64) error {
	files, err := listLogFiles(s.dir, s.base)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return nil // idx 0, pos 0: wait for the first file
	}
	if origin == LogOriginEnd {
		remaining := offset
		for i := len(files) - 1; i >= 0; i-- {
			if remaining <= files[i].Size {
				s.idx, s.pos = files[i].Index, files[i].Size-remaining
				return nil
			}
			remaining -= files[i].Size
		}
		s.idx, s.pos = files[0].Index, 0
		return nil
	}
	remaining := offset
	for _, f := range files {
		if remaining < f.Size {
			s.idx, s.pos = f.Index, remaining
			return nil
		}
		remaining -= f.Size
	}
	last := files[len(files)-1]
	s.idx, s.pos = last.Index, last.Size
	return nil
}

func (s *logStream) fileName(idx int) string { return fmt.Sprintf("%s.%d", s.base, idx) }

// drain sends what the current file holds past pos; it returns how many
// bytes it sent.
func (s *logStream) drain() (int64, error) {
	if s.f == nil {
		f, err := os.Open(filepath.Join(s.dir, s.fileName(s.idx)))
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		s.f = f
	}
	if s.buf == nil {
		s.buf = make([]byte, logChunkSize)
	}
	var sent int64
	for {
		n, err := s.f.ReadAt(s.buf, s.pos)
		if n > 0 {
			s.pos += int64(n)
			sent += int64(n)
			rel := path.Join(SharedAllocDirName, SharedLogsDirName, s.fileName(s.idx))
			if eerr := s.emit(rel, s.pos, s.buf[:n]); eerr != nil {
				return sent, eerr
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return sent, nil
		}
		if err != nil {
			return sent, err
		}
	}
}

// next moves to the next file of the stream, if one exists.
func (s *logStream) next() (bool, error) {
	files, err := listLogFiles(s.dir, s.base)
	if err != nil {
		return false, err
	}
	for _, f := range files {
		if f.Index > s.idx {
			s.close()
			s.idx, s.pos = f.Index, 0
			return true, nil
		}
	}
	return false, nil
}

func (s *logStream) close() {
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
	}
}
