package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ProcStat reads the state letter and the start time (clock ticks since
// boot) of pid from /proc. The start time tells a process apart from a
// later one that reuses its pid.
func ProcStat(pid int) (startTicks uint64, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	s := string(b)
	// The command name (field 2) is in parentheses and may hold spaces or
	// parentheses itself: the fields we want follow the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19].
	if len(fields) < 20 || fields[0] == "" {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(fields))
	}
	startTicks, err = strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat start time: %w", pid, err)
	}
	return startTicks, fields[0][0], nil
}

// ProcessRunning reports whether pid is a live (not zombie) process and,
// when startTicks is not zero, the same process that started at startTicks.
func ProcessRunning(pid int, startTicks uint64) bool {
	if pid <= 0 {
		return false
	}
	ticks, state, err := ProcStat(pid)
	if err != nil {
		return false
	}
	if state == 'Z' || state == 'X' || state == 'x' {
		return false
	}
	return startTicks == 0 || ticks == startTicks
}

// ProcessExists reports whether /proc has an entry for pid (zombies
// included).
func ProcessExists(pid int) bool {
	if pid <= 0 {
		return false
	}
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// WaitProcessExit blocks until the process pid (started at startTicks) is
// no longer running, or ctx ends. It works for processes that are not
// children of this one: it waits on a pidfd when the kernel offers one
// and falls back to polling /proc otherwise.
func WaitProcessExit(ctx context.Context, pid int, startTicks uint64) error {
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		defer unix.Close(fd)
		// Check identity after opening: the pidfd now pins the process,
		// so a pid reused before the open is caught here.
		if !ProcessRunning(pid, startTicks) {
			return nil
		}
		for {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 500)
			if err != nil && !errors.Is(err, unix.EINTR) {
				break // fall back to polling below
			}
			if n > 0 {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		if !ProcessRunning(pid, startTicks) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// SignalGroup sends sig to every process of the process group pgid. A
// group that no longer exists is not an error.
func SignalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return fmt.Errorf("refusing to signal process group %d", pgid)
	}
	if err := unix.Kill(-pgid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal %v to process group %d: %w", sig, pgid, err)
	}
	return nil
}

// WriteJSONAtomic writes v as JSON to path through a temporary file and a
// rename, so readers never see a partial record.
func WriteJSONAtomic(path string, v any, perm os.FileMode) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	return nil
}

// ReadJSON decodes the JSON file at path into v. A missing file is
// reported with an error satisfying errors.Is(err, os.ErrNotExist).
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}
