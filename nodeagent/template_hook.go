package nodeagent

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-envparse"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
	"github.com/drover-sched/drover/tasktemplate"
)

// taskLifecycle is what a hook may do to its running task (the task
// runner): restart it, signal it, kill it.
type taskLifecycle interface {
	restartFor(ev *structs.TaskEvent, reason string) error
	signalWith(sig string, ev *structs.TaskEvent) error
	Kill(pre *structs.TaskEvent)
}

// ServiceSubscriber is a tasktemplate.ServiceLookup that also says when
// the registry changed, so that templates reading it are rendered again:
// Subscribe returns a channel that receives after each change, and a
// function that ends the subscription.
type ServiceSubscriber interface {
	tasktemplate.ServiceLookup
	Subscribe() (<-chan struct{}, func())
}

// templateReason is the reason of a restart that a template's change_mode
// asked for (Nomad's words).
const templateReason = "Template with change_mode restart re-rendered"

// templateHook renders the task's templates into its task dir before the
// task first starts (Nomad's template hook): each into its destination
// with its perms, the KEY=value files of env = true templates loaded into
// the task's environment. It then watches what the templates read (the
// task's environment, which an in-place update may change, and, once
// drover has one, the service registry) and renders them again; when a
// template's output changes its change_mode applies: restart the task,
// send it change_signal, or nothing, after a random delay within splay
// and once the change has settled for the template's wait. A template
// that no longer renders kills the task (it fails, as in Nomad).
//
// On a restart, templates are rendered again only when the restart
// policy says render_templates; otherwise the task gets the environment
// of the last render.
type templateHook struct {
	logger    *zap.Logger
	lifecycle taskLifecycle
	services  tasktemplate.ServiceLookup

	mu      sync.Mutex
	req     *taskPrestartRequest // the first prestart's: directories, node, driver
	task    *structs.Task
	alloc   *structs.Allocation
	env     *taskEnv // what templates render with (without template env)
	outputs [][32]byte
	started bool
	trigger chan struct{}
}

func newTemplateHook(logger *zap.Logger, lc taskLifecycle, services tasktemplate.ServiceLookup) *templateHook {
	return &templateHook{logger: logger.With(zap.String("hook", "template")), lifecycle: lc, services: services,
		trigger: make(chan struct{}, 1)}
}

func (*templateHook) Name() string { return "template" }

// Prestart renders the templates (the first time, or on a restart with
// render_templates) and adds the env templates' variables to the task's
// environment.
func (h *templateHook) Prestart(req *taskPrestartRequest, resp *taskPrestartResponse) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if resp.Env == nil {
		return errors.New("the task environment must be built before templates")
	}
	first := !h.started
	if first || rendersOnRestart(req.Task) {
		h.req, h.task, h.alloc = req, req.Task, req.Alloc
		h.env = &taskEnv{vars: resp.Env.copyVars(), node: resp.Env.node}
		h.outputs = make([][32]byte, len(req.Task.Templates))
		if _, err := h.renderAll(false); err != nil {
			return err
		}
	}
	if first {
		h.started = true
		go h.watch(req.Done)
	}
	vars, err := h.loadEnv()
	if err != nil {
		return err
	}
	maps.Copy(resp.Env.vars, vars)
	return nil
}

// Restore takes up a task re-attached after an agent restart: what the
// earlier agent rendered (the files on disk) is taken as the last render,
// the templates are watched from now on, and rendered again at once, so
// that a change that came while no agent watched (or with the update
// that reached this agent first) applies its change_mode.
func (h *templateHook) Restore(req *taskPrestartRequest, resp *taskPrestartResponse) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return nil
	}
	h.req, h.task, h.alloc = req, req.Task, req.Alloc
	h.env = &taskEnv{vars: resp.Env.copyVars(), node: resp.Env.node}
	h.outputs = make([][32]byte, len(req.Task.Templates))
	for i, t := range req.Task.Templates {
		if dest, err := h.hostPath(t.DestPath); err == nil {
			if b, err := os.ReadFile(dest); err == nil {
				h.outputs[i] = sha256.Sum256(b)
			}
		}
	}
	h.started = true
	go h.watch(req.Done)
	h.poke()
	return nil
}

// Update takes in an in-place update of the alloc: when the task's
// environment changed, the templates are rendered again.
func (h *templateHook) Update(alloc *structs.Allocation, task *structs.Task) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.started {
		return
	}
	r := h.req
	env := buildTaskEnv(alloc, task, r.AllocDir, r.TaskDir, r.Node, r.HostEnv, r.Capabilities.FSIsolation, r.Network)
	if maps.Equal(env.vars, h.env.vars) {
		return
	}
	h.env, h.alloc = env, alloc
	h.poke()
}

func (h *templateHook) poke() {
	select {
	case h.trigger <- struct{}{}:
	default:
	}
}

func rendersOnRestart(t *structs.Task) bool {
	return t.RestartPolicy != nil && t.RestartPolicy.RenderTemplates
}

// watch renders the templates again on each change until done.
func (h *templateHook) watch(done <-chan struct{}) {
	var changed <-chan struct{}
	if sub, ok := h.services.(ServiceSubscriber); ok {
		ch, cancel := sub.Subscribe()
		defer cancel()
		changed = ch
	}
	for {
		select {
		case <-done:
			return
		case <-h.trigger:
		case <-changed:
		}
		if !h.settle(done, changed) {
			return
		}
		h.rerender(done)
	}
}

// settle waits out the templates' wait: until no change came for the
// longest min, but no longer than the longest max. It reports false when
// done closed meanwhile.
func (h *templateHook) settle(done <-chan struct{}, changed <-chan struct{}) bool {
	var minWait, maxWait time.Duration
	h.mu.Lock()
	for _, t := range h.task.Templates {
		if t.Wait == nil || t.Once {
			continue
		}
		if t.Wait.Min != nil {
			minWait = max(minWait, *t.Wait.Min)
		}
		if t.Wait.Max != nil {
			maxWait = max(maxWait, *t.Wait.Max)
		}
	}
	h.mu.Unlock()
	if minWait <= 0 {
		return true
	}
	if maxWait < minWait {
		maxWait = 4 * minWait // consul-template's default bound
	}
	deadline := time.After(maxWait)
	quiet := time.NewTimer(minWait)
	defer quiet.Stop()
	for {
		select {
		case <-done:
			return false
		case <-deadline:
			return true
		case <-quiet.C:
			return true
		case <-h.trigger:
		case <-changed:
		}
		quiet.Reset(minWait)
	}
}

// rerender renders the templates again and applies the change_mode of
// those whose output changed.
func (h *templateHook) rerender(done <-chan struct{}) {
	h.mu.Lock()
	changed, err := h.renderAll(true)
	tmpls := h.task.Templates
	h.mu.Unlock()
	if err != nil {
		h.logger.Error("template re-render failed, killing the task", zap.Error(err))
		h.lifecycle.Kill(templateFailedEvent(err))
		return
	}
	restart := false
	var signals []string
	var splay time.Duration
	for _, i := range changed {
		t := tmpls[i]
		switch t.ChangeMode {
		case structs.TemplateChangeModeRestart:
			restart = true
		case structs.TemplateChangeModeSignal:
			if !contains(signals, t.ChangeSignal) {
				signals = append(signals, t.ChangeSignal)
			}
		default:
			continue
		}
		splay = max(splay, t.Splay)
	}
	if !restart && len(signals) == 0 {
		return
	}
	if splay > 0 {
		select {
		case <-time.After(rand.N(splay)):
		case <-done:
			return
		}
	}
	if restart {
		err := h.lifecycle.restartFor(templateRestartEvent(), templateReason)
		if errors.Is(err, fs.ErrInvalid) {
			h.emit(hookMessageEvent("Template skipped restart: task is not running"))
		}
		return
	}
	for _, sig := range signals {
		err := h.lifecycle.signalWith(sig, templateSignalEvent(sig))
		switch {
		case errors.Is(err, fs.ErrInvalid):
			// Not running (between restarts): it starts with the new
			// content anyway.
			h.emit(hookMessageEvent(fmt.Sprintf("Template skipped signal %s: task is not running", sig)))
		case err != nil:
			h.lifecycle.Kill(templateFailedEvent(fmt.Errorf("send %s: %w", sig, err)))
			return
		}
	}
}

func (h *templateHook) emit(ev *structs.TaskEvent) {
	h.mu.Lock()
	r := h.req
	h.mu.Unlock()
	if r != nil && r.Emit != nil {
		r.Emit(ev)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sandbox is where templates may read and write: the task dir and the
// alloc's shared dir, as Nomad's template sandbox.
func (h *templateHook) sandbox() []string {
	return []string{h.req.TaskDir.Dir, h.req.AllocDir.SharedDir()}
}

// hostPath turns a template's source or destination into a path on the
// host: ${...} interpolated, relative paths (and absolute ones outside the
// task's directories, which name paths inside a chroot) taken from the
// task dir, symlinks resolved; it fails when the path leaves the sandbox.
func (h *templateHook) hostPath(p string) (string, error) {
	p = h.env.interpolate(p)
	sb := h.sandbox()
	if filepath.IsAbs(p) {
		if _, err := tasktemplate.ResolveInSandbox(sb, p); err != nil {
			p = filepath.Join(h.req.TaskDir.Dir, p)
		}
	}
	return tasktemplate.ResolveInSandbox(sb, p)
}

// renderAll renders every template (only those not marked once when
// again) and writes those whose output changed. It returns the indexes of
// the templates whose output changed since the last render (none on the
// first). Callers hold h.mu.
func (h *templateHook) renderAll(again bool) ([]int, error) {
	var changed []int
	ctx := &tasktemplate.Context{Env: h.env.vars, Sandbox: h.sandbox(), Namespace: h.alloc.Namespace, Services: h.services}
	for i, t := range h.task.Templates {
		if again && t.Once {
			continue
		}
		out, err := h.render(t, ctx)
		if err != nil {
			return nil, fmt.Errorf("template %q: %w", t.DestPath, err)
		}
		dest, err := h.hostPath(t.DestPath)
		if err != nil {
			return nil, fmt.Errorf("template %q: destination: %w", t.DestPath, err)
		}
		if err := writeTemplate(dest, out, t); err != nil {
			return nil, fmt.Errorf("template %q: %w", t.DestPath, err)
		}
		sum := sha256.Sum256(out)
		if again && sum != h.outputs[i] {
			changed = append(changed, i)
		}
		h.outputs[i] = sum
	}
	return changed, nil
}

// render renders one template: its inline data, or its source file,
// which is checked for refused functions as the job parser checks data.
func (h *templateHook) render(t *structs.Template, ctx *tasktemplate.Context) ([]byte, error) {
	body := t.EmbeddedTmpl
	if t.SourcePath != "" {
		src, err := h.hostPath(t.SourcePath)
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		body = string(b)
		if err := tasktemplate.Check(body, t.LeftDelim, t.RightDelim); err != nil {
			return nil, fmt.Errorf("source %s: %w", t.SourcePath, err)
		}
	}
	tt, err := tasktemplate.New(t.DestPath, body, t.LeftDelim, t.RightDelim, t.ErrMissingKey)
	if err != nil {
		return nil, err
	}
	return tt.Render(ctx)
}

// writeTemplate writes out to dest with the template's perms and owner,
// through a temporary file renamed over dest, unless dest already holds
// out.
func writeTemplate(dest string, out []byte, t *structs.Template) error {
	mode := os.FileMode(0o644)
	if t.Perms != "" {
		m, err := strconv.ParseUint(t.Perms, 8, 12)
		if err != nil {
			return fmt.Errorf("perms %q: %w", t.Perms, err)
		}
		mode = os.FileMode(m)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	if cur, err := os.ReadFile(dest); err == nil && bytes.Equal(cur, out) {
		return os.Chmod(dest, mode)
	}
	tmp := dest + ".drover-tmp"
	if err := os.WriteFile(tmp, out, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil { // past the umask
		return err
	}
	uid, gid := -1, -1
	if t.Uid != nil {
		uid = *t.Uid
	}
	if t.Gid != nil {
		gid = *t.Gid
	}
	if uid >= 0 || gid >= 0 {
		if err := os.Chown(tmp, uid, gid); err != nil {
			return fmt.Errorf("chown: %w", err)
		}
	}
	return os.Rename(tmp, dest)
}

// loadEnv reads the KEY=value files of the env templates. Callers hold
// h.mu.
func (h *templateHook) loadEnv() (map[string]string, error) {
	out := map[string]string{}
	for _, t := range h.task.Templates {
		if !t.Envvars {
			continue
		}
		dest, err := h.hostPath(t.DestPath)
		if err != nil {
			return nil, fmt.Errorf("template %q: %w", t.DestPath, err)
		}
		f, err := os.Open(dest)
		if err != nil {
			return nil, fmt.Errorf("env template %q: %w", t.DestPath, err)
		}
		vars, err := envparse.Parse(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("env template %q: %w", t.DestPath, err)
		}
		maps.Copy(out, vars)
	}
	return out, nil
}
