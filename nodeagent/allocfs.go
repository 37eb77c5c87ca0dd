package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/drover-sched/drover/structs"
)

// Reading an allocation's directory (Nomad's /v1/client/fs/ routes). Paths
// are relative to the alloc dir's root ("alloc/logs/web.stdout.0",
// "web/local/config.json"; "/" and "" are the root itself). Nothing
// outside the alloc dir can be reached: a path that climbs out of it
// ("../..") or a symlink that points out of it is refused with an error
// wrapping fs.ErrPermission, and so are the tasks' secrets directories, as
// in Nomad. An alloc with no directory on this node wraps fs.ErrNotExist,
// and so does a missing file.

// allocRoot resolves p inside allocID's directory: it returns the alloc
// dir, the cleaned relative path ("." for the root) and the host path.
func (a *Agent) allocRoot(allocID, p string) (dir, rel, host string, err error) {
	if allocID == "" || filepath.Base(allocID) != allocID || strings.HasPrefix(allocID, ".") {
		return "", "", "", fmt.Errorf("unknown allocation %q on node %s: %w", allocID, a.nodeID, fs.ErrNotExist)
	}
	ad := a.AllocDir(allocID)
	if !ad.Exists() {
		return "", "", "", fmt.Errorf("unknown allocation %q on node %s: %w", allocID, a.nodeID, fs.ErrNotExist)
	}
	rel = path.Clean("/" + p) // "/" + p: a leading ".." cannot climb out lexically ...
	if strings.Contains(p, "\x00") {
		return "", "", "", fmt.Errorf("path %q: %w", p, fs.ErrInvalid)
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			// ... but a path that tries is refused, not quietly rooted.
			return "", "", "", fmt.Errorf("path %q escapes the allocation directory: %w", p, fs.ErrPermission)
		}
	}
	rel = strings.TrimPrefix(rel, "/")
	if rel == "" {
		rel = "."
	}
	if err := checkNotSecrets(rel); err != nil {
		return "", "", "", err
	}
	host = filepath.Join(ad.Dir, filepath.FromSlash(rel))
	// Symlinks are followed only while they stay inside the alloc dir.
	root, err := filepath.EvalSymlinks(ad.Dir)
	if err != nil {
		return "", "", "", fmt.Errorf("alloc dir: %w", err)
	}
	// A missing file is reported as missing only if the part of the path
	// that exists stays inside: nothing is told about files outside.
	existing, missing := host, false
	real, err := filepath.EvalSymlinks(existing)
	for errors.Is(err, fs.ErrNotExist) && existing != ad.Dir {
		missing = true
		existing = filepath.Dir(existing)
		real, err = filepath.EvalSymlinks(existing)
	}
	if err != nil {
		return "", "", "", fmt.Errorf("path %q: %w", rel, err)
	}
	inside, err := filepath.Rel(root, real)
	if err != nil || inside == ".." || strings.HasPrefix(inside, ".."+string(filepath.Separator)) {
		return "", "", "", fmt.Errorf("path %q escapes the allocation directory (a symlink points outside it): %w", rel, fs.ErrPermission)
	}
	if err := checkNotSecrets(filepath.ToSlash(inside)); err != nil {
		return "", "", "", err
	}
	if missing {
		return "", "", "", fmt.Errorf("allocation %s has no file %q: %w", allocID, rel, fs.ErrNotExist)
	}
	return ad.Dir, rel, real, nil
}

// checkNotSecrets refuses <task>/secrets and what is under it.
func checkNotSecrets(rel string) error {
	parts := strings.Split(rel, "/")
	if len(parts) >= 2 && parts[0] != SharedAllocDirName && parts[1] == TaskSecretsDirName {
		return fmt.Errorf("path %q: reading a task's secrets directory is not allowed: %w", rel, fs.ErrPermission)
	}
	return nil
}

// fileInfo is Nomad's AllocFileInfo of fi.
func fileInfo(fi fs.FileInfo) *structs.AllocFileInfo {
	return &structs.AllocFileInfo{Name: fi.Name(), IsDir: fi.IsDir(), Size: fi.Size(), FileMode: fi.Mode().String(), ModTime: fi.ModTime()}
}

// StatFile describes the file at p in the alloc's directory; a regular
// file's ContentType is sniffed from its first 512 bytes.
func (a *Agent) StatFile(ctx context.Context, allocID, p string) (*structs.AllocFileInfo, error) {
	_, rel, host, err := a.allocRoot(allocID, p)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(host)
	if err != nil {
		return nil, fmt.Errorf("stat %q: %w", rel, err)
	}
	info := fileInfo(fi)
	if rel == "." {
		info.Name = "/"
	}
	if fi.Mode().IsRegular() {
		if f, err := os.Open(host); err == nil {
			buf := make([]byte, 512)
			n, _ := io.ReadFull(f, buf)
			_ = f.Close()
			info.ContentType = http.DetectContentType(buf[:n])
		}
	}
	return info, nil
}

// ListFiles lists the directory at p in the alloc's directory, by name.
func (a *Agent) ListFiles(ctx context.Context, allocID, p string) ([]*structs.AllocFileInfo, error) {
	_, rel, host, err := a.allocRoot(allocID, p)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(host)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(err, syscall.ENOTDIR) {
			return nil, fmt.Errorf("%q is not a directory: %w", rel, fs.ErrInvalid)
		}
		return nil, fmt.Errorf("list %q: %w", rel, err)
	}
	out := make([]*structs.AllocFileInfo, 0, len(entries))
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, fileInfo(fi))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// OpenFile opens the regular file at p in the alloc's directory for
// reading; a directory is an error wrapping fs.ErrInvalid.
func (a *Agent) OpenFile(ctx context.Context, allocID, p string) (*os.File, error) {
	dir, rel, _, err := a.allocRoot(allocID, p)
	if err != nil {
		return nil, err
	}
	// os.Root confines the open itself to the alloc dir, so a symlink
	// swapped in after the check above cannot lead out of it.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open alloc dir: %w", err)
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("allocation %s has no file %q: %w", allocID, rel, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("open %q: %v: %w", rel, err, fs.ErrPermission)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %q: %w", rel, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%q is a directory: %w", rel, fs.ErrInvalid)
	}
	return f, nil
}

// File events of a followed stream (Nomad's).
const (
	FileEventTruncated = "file truncated"
	FileEventDeleted   = "file deleted"
)

// StreamFile streams the file at p in the alloc's directory from offset
// bytes after its start or before its end (origin "start" or "end"),
// following what is appended until ctx ends, as Nomad's fs stream does.
// emit receives each chunk (the path relative to the alloc dir, the offset
// past the chunk, the data), is called once without data first (the
// request is valid), without data as a heartbeat while idle, and with a
// file event when the file is truncated (the stream goes on from its new
// start) or deleted (the stream ends).
func (a *Agent) StreamFile(ctx context.Context, allocID, p, origin string, offset int64,
	emit func(file string, offset int64, data []byte, event string) error) error {
	switch origin {
	case "", LogOriginStart, LogOriginEnd:
	default:
		return fmt.Errorf("%w: origin must be %q or %q, not %q: %w", ErrBadLogRequest, LogOriginStart, LogOriginEnd, origin, fs.ErrInvalid)
	}
	if offset < 0 {
		return fmt.Errorf("offset must not be negative: %w", fs.ErrInvalid)
	}
	f, err := a.OpenFile(ctx, allocID, p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, rel, _, _ := a.allocRoot(allocID, p)
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	pos := min(offset, fi.Size())
	if origin == LogOriginEnd {
		pos = max(fi.Size()-offset, 0)
	}
	if err := emit("", 0, nil, ""); err != nil {
		return err
	}
	buf := make([]byte, logChunkSize)
	lastSent := time.Now()
	for {
		n, rerr := f.ReadAt(buf, pos)
		if n > 0 {
			pos += int64(n)
			if err := emit(rel, pos, buf[:n], ""); err != nil {
				return err
			}
			lastSent = time.Now()
			continue
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return rerr
		}
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		switch {
		case fi.Size() < pos:
			pos = 0
			if err := emit(rel, 0, nil, FileEventTruncated); err != nil {
				return err
			}
			continue
		case deleted(f):
			return emit(rel, pos, nil, FileEventDeleted)
		}
		if time.Since(lastSent) >= logHeartbeat {
			if err := emit("", 0, nil, ""); err != nil {
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

// deleted reports whether f's name no longer links to it.
func deleted(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return true
	}
	cur, err := os.Stat(f.Name())
	return err != nil || !os.SameFile(fi, cur)
}
