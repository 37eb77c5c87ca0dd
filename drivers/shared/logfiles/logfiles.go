// Package logfiles writes and lists a task's log files, alloc/logs/<task>.stdout.N
// and .stderr.N: the rotation Nomad's logmon does, shared by every driver
// that copies a task's output (the task supervisor for process drivers,
// the docker driver for containers). It decides file names and rotation;
// it never reads a task's output itself.
package logfiles

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Nomad's defaults of a task's logs block.
const (
	// DefaultMaxFiles is how many files of each stream are kept.
	DefaultMaxFiles = 10
	// DefaultMaxFileSizeMB is the size of one log file, in MiB.
	DefaultMaxFileSizeMB = 10
)

// Stream names, as in the file names and the logs API.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// Base is the name of a task's stream files without the index:
// "<task>.stdout" for alloc/logs/<task>.stdout.0, .1, ...
func Base(task, stream string) string { return task + "." + stream }

// File is one file of a task's stream.
type File struct {
	Index int
	Name  string // base name, e.g. web.stdout.3
	Size  int64  // bytes
}

// List returns the files of base in dir, oldest (lowest index) first. A
// missing dir is no files.
func List(dir, base string) ([]File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []File
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok || e.IsDir() {
			continue
		}
		idx, err := strconv.Atoi(rest)
		if err != nil || idx < 0 || strconv.Itoa(idx) != rest {
			continue
		}
		var size int64
		if fi, err := e.Info(); err == nil {
			size = fi.Size()
		}
		out = append(out, File{Index: idx, Name: e.Name(), Size: size})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// Rotator writes a stream to dir/base.N: it appends to the newest file
// until that reaches maxBytes, then starts the next index and removes the
// oldest files so that at most maxFiles remain. A new rotator (a task
// restarted under a new supervisor) goes on from the newest file.
type Rotator struct {
	dir      string
	base     string
	maxFiles int
	maxBytes int64 // per file

	f    *os.File
	idx  int
	size int64 // bytes in f
}

// NewRotator opens the newest file of base in dir, or base.0; at most
// maxFiles files of maxBytes each are kept.
func NewRotator(dir, base string, maxFiles int, maxBytes int64) (*Rotator, error) {
	if maxFiles < 1 {
		maxFiles = 1
	}
	if maxBytes < 1 {
		maxBytes = 1
	}
	r := &Rotator{dir: dir, base: base, maxFiles: maxFiles, maxBytes: maxBytes}
	files, err := List(dir, base)
	if err != nil {
		return nil, fmt.Errorf("list log files: %w", err)
	}
	if n := len(files); n > 0 {
		r.idx = files[n-1].Index
		if files[n-1].Size >= maxBytes {
			r.idx++
		}
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	r.purge()
	return r, nil
}

func (r *Rotator) path(idx int) string {
	return filepath.Join(r.dir, r.base+"."+strconv.Itoa(idx))
}

func (r *Rotator) open() error {
	f, err := os.OpenFile(r.path(r.idx), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat log file: %w", err)
	}
	r.f, r.size = f, fi.Size()
	return nil
}

// Write writes p, splitting it at file boundaries.
func (r *Rotator) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if r.size >= r.maxBytes {
			if err := r.rotate(); err != nil {
				return written, err
			}
		}
		chunk := p
		if room := r.maxBytes - r.size; int64(len(chunk)) > room {
			chunk = chunk[:room]
		}
		n, err := r.f.Write(chunk)
		written += n
		r.size += int64(n)
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

func (r *Rotator) rotate() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("close log file: %w", err)
	}
	r.idx++
	if err := r.open(); err != nil {
		return err
	}
	r.purge()
	return nil
}

// purge removes the files beyond the maxFiles newest.
func (r *Rotator) purge() {
	files, err := List(r.dir, r.base)
	if err != nil {
		return
	}
	for _, f := range files {
		if f.Index <= r.idx-r.maxFiles {
			_ = os.Remove(filepath.Join(r.dir, f.Name))
		}
	}
}

// Close closes the current file.
func (r *Rotator) Close() error { return r.f.Close() }
