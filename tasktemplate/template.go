package tasktemplate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
)

// ServiceInstance is one instance of a service in Nomad's native service
// registry, as nomadService returns it (Nomad's ServiceRegistration
// fields templates read).
type ServiceInstance struct {
	ID          string
	ServiceName string
	Namespace   string
	NodeID      string
	Datacenter  string
	JobID       string
	AllocID     string
	Tags        []string
	Address     string
	Port        int
	Meta        map[string]string `json:",omitempty"`
}

// ServiceSummary is one service name and its tags, as nomadServices lists
// them.
type ServiceSummary struct {
	Name string
	Tags []string
}

// ServiceLookup answers nomadService and nomadServices for a task in
// namespace. Implementations are what the node agent wires once drover has
// a service registry; with none, those functions fail (and Check refuses
// them at submission).
type ServiceLookup interface {
	// Service returns the healthy instances of name (optionally only
	// those with every tag of tags), ordered by ID.
	Service(namespace, name string, tags []string) ([]*ServiceInstance, error)
	// Services lists the namespace's service names.
	Services(namespace string) ([]*ServiceSummary, error)
}

// Template is one parsed template, ready to render.
type Template struct {
	name, text  string
	left, right string
	missingKey  bool
}

// New prepares a template: name identifies it in errors, text is its
// body, left and right its delimiters ("" means {{ and }}), and
// errMissingKey makes a missing map key an error. The body is parsed to
// report syntax errors and unknown functions now.
func New(name, text, left, right string, errMissingKey bool) (*Template, error) {
	t := &Template{name: name, text: text, left: left, right: right, missingKey: errMissingKey}
	if _, err := t.parse(&renderContext{}); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Template) parse(r *renderContext) (*template.Template, error) {
	tt := template.New(t.name).Delims(t.left, t.right)
	if t.missingKey {
		tt = tt.Option("missingkey=error")
	}
	tt = tt.Funcs(funcMap(r))
	r.self = tt
	parsed, err := tt.Parse(t.text)
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	return parsed, nil
}

// RefusedFuncError is a template that calls a function drover does not
// allow: Check returns it naming the function and why.
type RefusedFuncError struct {
	Func   string
	Reason string
}

func (e *RefusedFuncError) Error() string {
	return fmt.Sprintf("function %q %s", e.Func, e.Reason)
}

// Check parses a template body as New does and refuses any call of a
// function drover does not allow (Consul, Vault, Nomad variables, ...):
// the first such call is a *RefusedFuncError; a syntax error or an
// unknown function is an error too.
func Check(text, left, right string) error {
	t, err := (&Template{name: "check", text: text, left: left, right: right}).parse(&renderContext{})
	if err != nil {
		return err
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if name := findRefused(tt.Tree.Root); name != "" {
			return &RefusedFuncError{Func: name, Reason: refused[name]}
		}
	}
	return nil
}

// findRefused walks a parse tree for the first identifier naming a
// refused function.
func findRefused(n parse.Node) string {
	if n == nil {
		return ""
	}
	switch x := n.(type) {
	case *parse.ListNode:
		if x == nil {
			return ""
		}
		for _, c := range x.Nodes {
			if f := findRefused(c); f != "" {
				return f
			}
		}
	case *parse.ActionNode:
		return findRefused(x.Pipe)
	case *parse.PipeNode:
		if x == nil {
			return ""
		}
		for _, c := range x.Cmds {
			if f := findRefused(c); f != "" {
				return f
			}
		}
	case *parse.CommandNode:
		for _, a := range x.Args {
			if f := findRefused(a); f != "" {
				return f
			}
		}
	case *parse.IdentifierNode:
		if _, ok := refused[x.Ident]; ok {
			return x.Ident
		}
	case *parse.IfNode:
		return firstOf(x.Pipe, x.List, x.ElseList)
	case *parse.RangeNode:
		return firstOf(x.Pipe, x.List, x.ElseList)
	case *parse.WithNode:
		return firstOf(x.Pipe, x.List, x.ElseList)
	case *parse.TemplateNode:
		return findRefused(x.Pipe)
	}
	return ""
}

func firstOf(pipe *parse.PipeNode, lists ...*parse.ListNode) string {
	if f := findRefused(pipe); f != "" {
		return f
	}
	for _, l := range lists {
		if l == nil {
			continue
		}
		if f := findRefused(l); f != "" {
			return f
		}
	}
	return ""
}

// Context is what one render may read.
type Context struct {
	// Env is the task's environment: what env reads. Nothing else of the
	// agent's environment is visible.
	Env map[string]string
	// Sandbox are the directories file may read (the task dir and the
	// alloc's shared dir); relative paths are taken from the first.
	Sandbox []string
	// Namespace is the task's, for the service lookups.
	Namespace string
	// Services answers nomadService and nomadServices; nil means none.
	Services ServiceLookup
}

// Render executes the template in ctx and returns its output.
func (t *Template) Render(ctx *Context) ([]byte, error) {
	r := &renderContext{ctx: ctx}
	tt, err := t.parse(r)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := tt.Execute(&out, nil); err != nil {
		return nil, fmt.Errorf("execute template: %w", err)
	}
	return out.Bytes(), nil
}

// renderContext carries one render's inputs to the functions that need
// them.
type renderContext struct {
	ctx     *Context
	self    *template.Template
	scratch map[string]any
}

func (r *renderContext) lookupEnv(k string) (string, bool) {
	if r.ctx == nil {
		return "", false
	}
	v, ok := r.ctx.Env[k]
	return v, ok
}

func (r *renderContext) env(k string) string { v, _ := r.lookupEnv(k); return v }

func (r *renderContext) envOrDefault(k, def string) string {
	if v, ok := r.lookupEnv(k); ok {
		return v
	}
	return def
}

func (r *renderContext) mustEnv(k string) (string, error) {
	if v, _ := r.lookupEnv(k); v != "" {
		return v, nil
	}
	return "", fmt.Errorf("required environment variable %s is empty", k)
}

// timestamp is the time now in UTC: RFC 3339, "unix" seconds, or a Go
// layout.
func (r *renderContext) timestamp(layout ...string) (string, error) {
	t := now().UTC()
	switch len(layout) {
	case 0:
		return t.Format(time.RFC3339), nil
	case 1:
		if layout[0] == "unix" {
			return fmt.Sprint(t.Unix()), nil
		}
		return t.Format(layout[0]), nil
	}
	return "", fmt.Errorf("timestamp: takes 0 or 1 arguments, got %d", len(layout))
}

// ErrEscapesSandbox: a path leaves the task's directories.
var ErrEscapesSandbox = errors.New("path escapes the task's directories")

// file returns a file's contents, read only from inside the sandbox
// (symlinks resolved), as Nomad's sandboxed file function.
func (r *renderContext) file(path string) (string, error) {
	if r.ctx == nil || len(r.ctx.Sandbox) == 0 {
		return "", fmt.Errorf("file %q: %w", path, ErrEscapesSandbox)
	}
	p, err := ResolveInSandbox(r.ctx.Sandbox, path)
	if err != nil {
		return "", fmt.Errorf("file %q: %w", path, err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("file: %w", err)
	}
	return string(b), nil
}

// ResolveInSandbox resolves path (relative paths from sandbox[0]) with its
// symlinks and reports ErrEscapesSandbox unless it lies inside one of the
// sandbox directories. A path that does not exist yet is checked through
// its deepest existing parent.
func ResolveInSandbox(sandbox []string, path string) (string, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(sandbox[0], path)
	}
	path = filepath.Clean(path)
	if !within(sandbox, path) {
		return "", ErrEscapesSandbox
	}
	// Resolve symlinks through the deepest part that exists.
	existing, rest := path, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", existing, err)
	}
	roots := make([]string, 0, len(sandbox))
	for _, s := range sandbox {
		if rs, err := filepath.EvalSymlinks(s); err == nil {
			roots = append(roots, rs)
		}
	}
	if !within(roots, real) {
		return "", ErrEscapesSandbox
	}
	return filepath.Join(real, rest), nil
}

func within(roots []string, p string) bool {
	for _, root := range roots {
		rel, err := filepath.Rel(root, p)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

func (r *renderContext) services() (ServiceLookup, string, error) {
	if r.ctx == nil || r.ctx.Services == nil {
		return nil, "", errors.New("nomadService and nomadServices need a service registry, which this node agent was not given")
	}
	return r.ctx.Services, r.ctx.Namespace, nil
}

// nomadService returns a service's instances: {{ nomadService "name" }},
// or with a tag filter, "tag.name" as consul-template's query form, or
// {{ nomadService "name" "tag1,tag2" }}.
func (r *renderContext) nomadService(args ...string) ([]*ServiceInstance, error) {
	lookup, ns, err := r.services()
	if err != nil {
		return nil, err
	}
	var name string
	var tags []string
	switch len(args) {
	case 1:
		name = args[0]
	case 2:
		name = args[0]
		tags = split(",", args[1])
	default:
		return nil, fmt.Errorf("nomadService: takes 1 or 2 arguments, got %d", len(args))
	}
	if n, at, ok := strings.Cut(name, "@"); ok {
		name, ns = n, at
	}
	if tag, n, ok := strings.Cut(name, "."); ok {
		tags, name = append(tags, tag), n
	}
	return lookup.Service(ns, name, tags)
}

// nomadServices lists the services of the task's namespace (or of the
// one named).
func (r *renderContext) nomadServices(args ...string) ([]*ServiceSummary, error) {
	lookup, ns, err := r.services()
	if err != nil {
		return nil, err
	}
	if len(args) == 1 {
		ns = args[0]
	} else if len(args) > 1 {
		return nil, fmt.Errorf("nomadServices: takes 0 or 1 arguments, got %d", len(args))
	}
	return lookup.Services(ns)
}

// executeTemplate runs a {{ define }}d template of this one, with dot
// the optional argument.
func (r *renderContext) executeTemplate(name string, data ...any) (string, error) {
	var dot any
	switch len(data) {
	case 0:
	case 1:
		dot = data[0]
	default:
		return "", fmt.Errorf("executeTemplate: takes 1 or 2 arguments, got %d", len(data)+1)
	}
	var b bytes.Buffer
	if err := r.self.ExecuteTemplate(&b, name, dot); err != nil {
		return "", err
	}
	return b.String(), nil
}

// scratchPad is consul-template's scratch: a map a template may set and
// read during one render.
func (r *renderContext) scratchPad() *Scratch {
	if r.scratch == nil {
		r.scratch = map[string]any{}
	}
	return &Scratch{m: r.scratch}
}

// Scratch is the per-render key/value store of consul-template's scratch.
type Scratch struct{ m map[string]any }

// Key reports whether k is set.
func (s *Scratch) Key(k string) bool { _, ok := s.m[k]; return ok }

// Get returns k's value.
func (s *Scratch) Get(k string) any { return s.m[k] }

// Set sets k.
func (s *Scratch) Set(k string, v any) string { s.m[k] = v; return "" }

// SetX sets k unless it is set.
func (s *Scratch) SetX(k string, v any) string {
	if _, ok := s.m[k]; !ok {
		s.m[k] = v
	}
	return ""
}
