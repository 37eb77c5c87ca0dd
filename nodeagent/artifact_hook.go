package nodeagent

import (
	"context"
	"crypto/tls"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	getter "github.com/hashicorp/go-getter/v2"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
	"github.com/drover-sched/drover/tasktemplate"
)

// Artifact limits, Nomad's client defaults (artifact block of the client
// config): how long one HTTP download may take, how large it may be, and
// how many files and bytes an archive may unpack to.
const (
	ArtifactHTTPReadTimeout   = 30 * time.Minute
	ArtifactHTTPMaxBytes      = 100 << 30
	ArtifactDecompressFiles   = 4096
	ArtifactDecompressMaxSize = 100 << 30
)

// artifactHook fetches the task's artifacts before it first starts
// (Nomad's artifact hook), with github.com/hashicorp/go-getter/v2 and
// Nomad's sandboxing defaults: http and https only (no X-Terraform-Get,
// no HEAD first), archives unpacked within the file-count and size
// limits, no symlinks followed while writing, the destination inside the
// task's directories, and, after the download, no symlink left there that
// points outside them. Source, options, headers and destination are
// interpolated with the task's environment. A failed download is a
// "Failed Artifact Download" event and a recoverable error: the restart
// policy decides, and artifacts already fetched are not fetched again.
type artifactHook struct {
	logger *zap.Logger

	mu   sync.Mutex
	done map[int]bool
}

func newArtifactHook(logger *zap.Logger) *artifactHook {
	return &artifactHook{logger: logger.With(zap.String("hook", "artifacts")), done: map[int]bool{}}
}

func (*artifactHook) Name() string { return "artifacts" }

func (h *artifactHook) Prestart(req *taskPrestartRequest, resp *taskPrestartResponse) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.done) == len(req.Task.Artifacts) {
		return nil
	}
	req.Emit(newTaskEvent(structs.TaskDownloadingArtifacts))
	for i, a := range req.Task.Artifacts {
		if h.done[i] {
			continue
		}
		if err := fetchArtifact(req, resp.Env, a); err != nil {
			err = fmt.Errorf("failed to download artifact %q: %w", a.GetterSource, err)
			return &hookError{err: err, event: artifactFailedEvent(err), recoverable: true}
		}
		h.logger.Info("artifact downloaded", zap.String("source", a.GetterSource))
		h.done[i] = true
	}
	return nil
}

// fetchArtifact downloads one artifact into the task dir.
func fetchArtifact(req *taskPrestartRequest, env *taskEnv, a *structs.TaskArtifact) error {
	sandbox := []string{req.TaskDir.Dir, req.AllocDir.SharedDir()}
	src, err := artifactURL(env, a)
	if err != nil {
		return err
	}
	dest := env.interpolate(a.RelativeDest)
	if filepath.IsAbs(dest) {
		if _, err := tasktemplate.ResolveInSandbox(sandbox, dest); err != nil {
			dest = filepath.Join(req.TaskDir.Dir, dest)
		}
	}
	dest, err = tasktemplate.ResolveInSandbox(sandbox, dest)
	if err != nil {
		return fmt.Errorf("destination %q: %w", a.RelativeDest, err)
	}
	header := http.Header{}
	for k, v := range a.GetterHeaders {
		header.Set(k, env.interpolate(v))
	}
	httpGetter := &getter.HttpGetter{
		Header:                header,
		XTerraformGetDisabled: true,
		DoNotCheckHeadFirst:   true,
		ReadTimeout:           ArtifactHTTPReadTimeout,
		MaxBytes:              ArtifactHTTPMaxBytes,
	}
	if a.GetterInsecure {
		httpGetter.Client = &http.Client{Transport: insecureTransport()}
	}
	client := &getter.Client{
		Getters:         []getter.Getter{httpGetter},
		Decompressors:   getter.LimitedDecompressors(ArtifactDecompressFiles, ArtifactDecompressMaxSize),
		DisableSymlinks: true,
	}
	mode := getter.ModeAny
	switch a.GetterMode {
	case structs.GetterModeFile:
		mode = getter.ModeFile
	case structs.GetterModeDir:
		mode = getter.ModeDir
	}
	ctx, cancel := context.WithTimeout(context.Background(), ArtifactHTTPReadTimeout+time.Minute)
	defer cancel()
	_, err = client.Get(ctx, &getter.Request{
		Src: src, Dst: dest, Pwd: req.TaskDir.Dir, GetMode: mode,
		// No setuid or setgid bits from an archive (Nomad's umask).
		Umask: fs.ModeSetuid | fs.ModeSetgid, DisableSymlinks: true,
	})
	if err != nil {
		return err
	}
	return checkNoEscapingLinks(sandbox, dest)
}

// artifactURL is the artifact's source with its options as query
// parameters (how go-getter takes checksum and archive), interpolated.
func artifactURL(env *taskEnv, a *structs.TaskArtifact) (string, error) {
	raw := env.interpolate(a.GetterSource)
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("source: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("source %q: only http and https sources are supported", raw)
	}
	q := u.Query()
	keys := make([]string, 0, len(a.GetterOptions))
	for k := range a.GetterOptions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		q.Set(k, env.interpolate(a.GetterOptions[k]))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// checkNoEscapingLinks walks what an artifact wrote and refuses a symlink
// that resolves outside the task's directories (Nomad's artifact
// inspection).
func checkNoEscapingLinks(sandbox []string, root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		if _, err := tasktemplate.ResolveInSandbox(sandbox, target); err != nil {
			return fmt.Errorf("artifact symlink %s points outside the task's directories (%s)",
				strings.TrimPrefix(p, sandbox[0]+"/"), target)
		}
		return nil
	})
}

// artifactFailedEvent is Nomad's "Failed Artifact Download".
func artifactFailedEvent(err error) *structs.TaskEvent {
	ev := newTaskEvent(structs.TaskArtifactDownloadFailed)
	ev.Details["download_error"] = err.Error()
	ev.Message = err.Error()
	ev.DisplayMessage = err.Error()
	return ev
}

// insecureTransport is the transport of artifacts with insecure = true:
// TLS certificates are not verified.
func insecureTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the job asked for it
	return t
}
