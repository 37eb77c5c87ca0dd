package structs

import "time"

// Template change modes, as Nomad's: what the node agent does to the task
// when a template's output changes after the task started.
const (
	TemplateChangeModeNoop    = "noop"    // nothing
	TemplateChangeModeRestart = "restart" // restart the task
	TemplateChangeModeSignal  = "signal"  // send ChangeSignal
	TemplateChangeModeScript  = "script"  // run a script (refused by drover)
)

// Template is a task's template block, rendered by the node agent into the
// task dir before the task starts and again when what it reads changes.
// Shape and JSON names are Nomad's structs.Template.
type Template struct {
	// SourcePath is a template file in the task dir (relative to it);
	// EmbeddedTmpl is the template inline. Exactly one is set.
	SourcePath   string `json:",omitempty"`
	DestPath     string
	EmbeddedTmpl string `json:",omitempty"`
	// ChangeMode is one of the TemplateChangeMode* values; ChangeSignal
	// is the signal of change_mode "signal".
	ChangeMode   string
	ChangeSignal string `json:",omitempty"`
	// Splay: the change is applied after a random delay in [0, Splay).
	Splay time.Duration
	// Perms is the rendered file's mode, in octal ("0644").
	Perms string
	// Uid and Gid own the rendered file when set (≥ 0).
	Uid *int `json:",omitempty"`
	Gid *int `json:",omitempty"`
	// LeftDelim and RightDelim are the template's action delimiters.
	LeftDelim  string
	RightDelim string
	// Envvars: the rendered file is KEY=value lines loaded into the
	// task's environment (env = true).
	Envvars bool
	// ErrMissingKey makes a missing map key an error rather than
	// "<no value>".
	ErrMissingKey bool
	// Once: rendered once, never re-rendered.
	Once bool
	// Wait bounds how long a change is left to settle before the
	// template is rendered again.
	Wait *WaitConfig `json:",omitempty"`
}

// WaitConfig is a template's wait block: after a change, wait until no
// further change came for Min, but no longer than Max.
type WaitConfig struct {
	Min *time.Duration `json:",omitempty"`
	Max *time.Duration `json:",omitempty"`
}

// TemplatesChangeEnv reports whether any of ts loads the task's
// environment (env = true).
func TemplatesChangeEnv(ts []*Template) bool {
	for _, t := range ts {
		if t.Envvars {
			return true
		}
	}
	return false
}
