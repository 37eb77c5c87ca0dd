package jobspec

import (
	"errors"
	"path"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/structs"
	"github.com/drover-sched/drover/tasktemplate"
)

// checkTemplatesInput refuses, on the job as written, what drover does not
// support in template blocks: change_mode "script" and its change_script.
func checkTemplatesInput(ts []*api.Template, tp string, errs *errorList) {
	for i, t := range ts {
		p := indexed(join(tp, "Templates"), i)
		if t == nil {
			errs.add(p, "must not be null")
			continue
		}
		if t.ChangeMode != nil && *t.ChangeMode == structs.TemplateChangeModeScript {
			errs.add(join(p, "ChangeMode"), "change_mode %q is not supported by drover yet (noop, restart or signal)", structs.TemplateChangeModeScript)
		} else if t.ChangeScript != nil {
			errs.add(join(p, "ChangeScript"), "change_script is not supported by drover yet")
		}
	}
}

func convertTemplates(ts []*api.Template) []*structs.Template {
	if len(ts) == 0 {
		return nil
	}
	out := make([]*structs.Template, 0, len(ts))
	for _, t := range ts {
		c := &structs.Template{
			SourcePath:    deref(t.SourcePath),
			DestPath:      deref(t.DestPath),
			EmbeddedTmpl:  deref(t.EmbeddedTmpl),
			ChangeMode:    deref(t.ChangeMode),
			ChangeSignal:  deref(t.ChangeSignal),
			Splay:         deref(t.Splay),
			Perms:         deref(t.Perms),
			Uid:           t.Uid,
			Gid:           t.Gid,
			LeftDelim:     deref(t.LeftDelim),
			RightDelim:    deref(t.RightDelim),
			Envvars:       deref(t.Envvars),
			ErrMissingKey: deref(t.ErrMissingKey),
			Once:          deref(t.Once),
		}
		if w := t.Wait; w != nil {
			c.Wait = &structs.WaitConfig{Min: w.Min, Max: w.Max}
		}
		out = append(out, c)
	}
	return out
}

// validateTemplates applies Nomad's template rules (Template.Validate)
// and refuses templates that call functions drover cannot serve (Consul,
// Vault, ...), naming the template and the function.
func validateTemplates(ts []*structs.Template, tp string, errs *errorList) {
	dests := map[string]int{}
	for i, t := range ts {
		p := indexed(join(tp, "Templates"), i)
		switch {
		case t.SourcePath == "" && t.EmbeddedTmpl == "":
			errs.add(p, "must have a source or data (the template to render)")
		case t.SourcePath != "" && t.EmbeddedTmpl != "":
			errs.add(p, "must not have both a source and data")
		}
		if t.DestPath == "" {
			errs.add(join(p, "DestPath"), "must be set (where the template is rendered, relative to the task dir)")
		} else if escapesAllocDir(t.DestPath) {
			errs.add(join(p, "DestPath"), "must stay inside the allocation directory (got %q)", t.DestPath)
		} else if j, ok := dests[path.Clean(t.DestPath)]; ok {
			errs.add(join(p, "DestPath"), "is also the destination of Templates[%d]", j)
		} else {
			dests[path.Clean(t.DestPath)] = i
		}
		if t.SourcePath != "" && escapesAllocDir(t.SourcePath) {
			errs.add(join(p, "SourcePath"), "must stay inside the allocation directory (got %q)", t.SourcePath)
		}
		switch t.ChangeMode {
		case structs.TemplateChangeModeNoop, structs.TemplateChangeModeRestart:
		case structs.TemplateChangeModeSignal:
			switch {
			case t.ChangeSignal == "":
				errs.add(join(p, "ChangeSignal"), "must be set when change_mode is %q", structs.TemplateChangeModeSignal)
			case !knownSignal(t.ChangeSignal):
				errs.add(join(p, "ChangeSignal"), "unknown signal %q (a name like SIGHUP, SIGUSR1)", t.ChangeSignal)
			}
			if t.Envvars {
				errs.add(join(p, "ChangeMode"), "cannot be %q for a template with env = true (a running task's environment cannot change)", structs.TemplateChangeModeSignal)
			}
		case structs.TemplateChangeModeScript:
			errs.add(join(p, "ChangeMode"), "change_mode %q is not supported by drover yet (noop, restart or signal)", t.ChangeMode)
		default:
			errs.add(join(p, "ChangeMode"), "unknown change_mode %q (noop, restart or signal)", t.ChangeMode)
		}
		if t.Splay < 0 {
			errs.add(join(p, "Splay"), "must not be negative (got %v)", t.Splay)
		}
		if t.Perms != "" {
			if _, err := strconv.ParseUint(t.Perms, 8, 12); err != nil {
				errs.add(join(p, "Perms"), "must be an octal file mode such as \"0644\" (got %q)", t.Perms)
			}
		}
		if w := t.Wait; w != nil {
			if w.Min != nil && *w.Min < 0 {
				errs.add(join(p, "Wait.Min"), "must not be negative (got %v)", *w.Min)
			}
			if w.Max != nil && *w.Max < 0 {
				errs.add(join(p, "Wait.Max"), "must not be negative (got %v)", *w.Max)
			}
			if w.Min != nil && w.Max != nil && *w.Min > *w.Max {
				errs.add(join(p, "Wait"), "min %v must not be greater than max %v", *w.Min, *w.Max)
			}
		}
		if t.EmbeddedTmpl != "" {
			if err := tasktemplate.Check(t.EmbeddedTmpl, t.LeftDelim, t.RightDelim); err != nil {
				var rf *tasktemplate.RefusedFuncError
				if errors.As(err, &rf) {
					errs.add(join(p, "EmbeddedTmpl"), "template for %q calls %s, which %s", t.DestPath, rf.Func, rf.Reason)
				} else {
					errs.add(join(p, "EmbeddedTmpl"), "template for %q does not parse: %v", t.DestPath, err)
				}
			}
		}
	}
}

// escapesAllocDir reports whether p, taken relative to a task dir (an
// absolute path counts as relative to it too, as Nomad joins it), leaves
// the allocation directory. ${...} references stay as written: they name
// the task's own directories.
func escapesAllocDir(p string) bool {
	joined := path.Join("/alloc-root/task", strings.TrimPrefix(p, "/"))
	return joined != "/alloc-root" && !strings.HasPrefix(joined, "/alloc-root/")
}
