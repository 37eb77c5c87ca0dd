package jobfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/nomad/api"
	"github.com/zclconf/go-cty/cty"
)

// Config says what to parse and with which variable values.
type Config struct {
	// Path names the file in messages ("job.nomad.hcl:3,5-9: ..."); its
	// directory is the base of the file functions.
	Path string
	// Source is the file's content.
	Source []byte
	// ArgVars are -var flags, "name=value"; they win over everything.
	ArgVars []string
	// VarFiles are -var-file paths, read in order (later files win).
	VarFiles []string
	// VarContent is variable values given as HCL text (the Variables of
	// PUT /v1/jobs/parse), applied after VarFiles.
	VarContent string
	// Envs is an environment ("NAME=value"): NOMAD_VAR_<name> entries
	// give values to declared variables (undeclared ones are ignored).
	Envs []string
	// AllowFS enables the file functions (file, fileset, abspath...);
	// without it they fail, as on Nomad's server.
	AllowFS bool
}

// Parse decodes the HCL2 job in cfg.Source into an api.Job. Its errors
// are *Error: the diagnostics, each naming file, line and column where it
// has a place in a file (-var and -var-file problems have none).
func Parse(cfg Config) (*api.Job, error) {
	job, err := parse(cfg)
	var diags hcl.Diagnostics
	if errors.As(err, &diags) {
		return nil, &Error{Diagnostics: diags}
	}
	return job, err
}

// Error is Parse's error: the HCL diagnostics of the job and its variables.
type Error struct {
	Diagnostics hcl.Diagnostics
}

// Error implements error: the error diagnostics joined by "; ", each as
// "file:line,col: summary; detail", without a place when it has none
// (hcl.Diagnostic's own Error prints "<nil>: " there).
func (e *Error) Error() string {
	var parts []string
	for _, d := range e.Diagnostics {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		if d.Subject != nil {
			msg = d.Subject.String() + ": " + msg
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

// Unwrap returns the diagnostics, for errors.As.
func (e *Error) Unwrap() error { return e.Diagnostics }

func parse(cfg Config) (*api.Job, error) {
	if cfg.Path == "" {
		cfg.Path = "job.nomad.hcl"
	}
	file, diags := hclsyntax.ParseConfig(cfg.Source, cfg.Path, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	content, diags := file.Body.Content(topSchema)
	if diags.HasErrors() {
		return nil, diags
	}
	p := &parser{sources: map[string][]byte{cfg.Path: cfg.Source}, funcs: Functions(baseDir(cfg.Path), cfg.AllowFS)}
	if diags := p.variables(content, cfg); diags.HasErrors() {
		return nil, diags
	}
	if diags := p.locals(content); diags.HasErrors() {
		return nil, diags
	}
	var jobs []*hcl.Block
	for _, b := range content.Blocks {
		if b.Type == "job" {
			jobs = append(jobs, b)
		}
	}
	switch len(jobs) {
	case 0:
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Missing job block",
			Detail: "A job file needs one job block: job \"<id>\" { ... }", Subject: rangeAtStart(cfg.Path).Ptr()}}
	case 1:
	default:
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Duplicate job block",
			Detail: "A job file holds exactly one job block.", Subject: jobs[1].DefRange.Ptr()}}
	}
	job := &api.Job{}
	if diags := p.decodeJob(jobs[0], job); diags.HasErrors() {
		return nil, diags
	}
	return job, nil
}

// topSchema is what a job file may hold at its top level.
var topSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "job", LabelNames: []string{"id"}},
	{Type: "variable", LabelNames: []string{"name"}},
	{Type: "locals"},
}}

// parser holds what decoding needs: the sources (for the text of
// run-time references), the variable and local values, the functions.
type parser struct {
	sources   map[string][]byte
	vars      map[string]cty.Value
	localVals map[string]cty.Value
	funcs     map[string]functionT
}

// decodeJob decodes the job block: its label is the job's ID, and its
// Name unless the block sets one.
func (p *parser) decodeJob(b *hcl.Block, job *api.Job) hcl.Diagnostics {
	diags := p.decodeStruct(b.Body, nil, b.DefRange, valueOf(job))
	id := b.Labels[0]
	job.ID = &id
	if job.Name == nil {
		job.Name = &id
	}
	for _, tg := range job.TaskGroups {
		if tg != nil {
			staticPorts(tg.Networks)
		}
	}
	return diags
}

// staticPorts moves the ports of a network block that set `static` from
// DynamicPorts (where every `port` block decodes) to ReservedPorts, as
// Nomad's HCL parser does: in the JSON job a static port is a reserved
// port.
func staticPorts(networks []*api.NetworkResource) {
	for _, n := range networks {
		if n == nil || len(n.DynamicPorts) == 0 {
			continue
		}
		var dynamic []api.Port
		for _, p := range n.DynamicPorts {
			if p.Value > 0 {
				n.ReservedPorts = append(n.ReservedPorts, p)
			} else {
				dynamic = append(dynamic, p)
			}
		}
		n.DynamicPorts = dynamic
	}
}

// IsJSON reports whether src looks like a JSON document (its first
// non-space byte opens an object): a JSON job, not HCL.
func IsJSON(src []byte) bool {
	s := bytes.TrimSpace(src)
	return len(s) > 0 && s[0] == '{'
}

// ConcatFiles returns the content of the files, one after the other (the
// Variables Nomad keeps in a job's submission).
func ConcatFiles(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		b.Write(data)
		b.WriteString("\n")
	}
	return b.String()
}

func baseDir(path string) string {
	if path == "" || path == "-" {
		return "."
	}
	return filepath.Dir(path)
}

func rangeAtStart(file string) hcl.Range {
	return hcl.Range{Filename: file, Start: hcl.InitialPos, End: hcl.InitialPos}
}

// errorf is a diagnostic at r.
func errorf(r hcl.Range, summary, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: r.Ptr()}
}
