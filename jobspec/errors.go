package jobspec

import (
	"fmt"
	"strings"
)

// ValidationError is one problem with a submitted job: Field is the JSON path
// of the offending field or block in Nomad's job format, with group and task
// names after their index (`Job.TaskGroups[0] "web".Tasks[0] "server".Resources.MemoryMB`),
// and Rule says what is wrong (`must be at least 10 MiB (got 4)`).
//
// Every error this package returns for bad input is, or wraps, one or more
// ValidationErrors: errors.As(err, new(*ValidationError)) tells a client's
// mistake (HTTP 400) from an I/O failure.
type ValidationError struct {
	Field string
	Rule  string
}

// Error renders "Field: Rule".
func (e *ValidationError) Error() string {
	if e.Field == "" {
		return e.Rule
	}
	return shortenPath(e.Field) + ": " + e.Rule
}

// ValidationErrors collects every problem found in one job, in a stable
// order. It unwraps to its elements, so errors.As finds a *ValidationError in
// it, and errors.As(err, new(ValidationErrors)) recovers the whole list.
type ValidationErrors []*ValidationError

// Error joins the messages with "; ".
func (es ValidationErrors) Error() string {
	switch len(es) {
	case 0:
		return "no validation errors"
	case 1:
		return es[0].Error()
	}
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return fmt.Sprintf("%d errors: %s", len(es), strings.Join(msgs, "; "))
}

// Unwrap returns the individual errors.
func (es ValidationErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// errorList accumulates ValidationErrors, dropping exact duplicates.
type errorList struct {
	errs ValidationErrors
	seen map[ValidationError]bool
}

func (l *errorList) add(field, format string, args ...any) {
	rule := format
	if len(args) > 0 {
		rule = fmt.Sprintf(format, args...)
	}
	e := ValidationError{Field: field, Rule: rule}
	if l.seen == nil {
		l.seen = make(map[ValidationError]bool)
	}
	if l.seen[e] {
		return
	}
	l.seen[e] = true
	l.errs = append(l.errs, &e)
}

// unsupported records a block drover does not support yet.
func (l *errorList) unsupported(path, block string) {
	l.add(path, "%s block is not supported by drover yet", block)
}

func (l *errorList) addAll(es []*ValidationError) {
	for _, e := range es {
		l.add(e.Field, "%s", e.Rule)
	}
}

func (l *errorList) empty() bool { return len(l.errs) == 0 }

// err returns nil or the collected ValidationErrors.
func (l *errorList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	return l.errs
}

// Path helpers: every message names its field by the JSON path in Nomad's
// job format, with the group and task names quoted after their index.

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func indexed(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}

func named(path string, i int, name string) string {
	if name == "" {
		return indexed(path, i)
	}
	return fmt.Sprintf("%s[%d] %q", path, i, name)
}

func groupPath(i int, name string) string {
	return named("Job.TaskGroups", i, name)
}

func taskPath(gp string, i int, name string) string {
	return named(gp+".Tasks", i, name)
}

// maxFieldPath bounds how much of a field path an error repeats: a
// pathological body (JSON nested thousands deep) must not produce a
// message of that size.
const maxFieldPath = 240

func shortenPath(p string) string {
	if len(p) <= maxFieldPath {
		return p
	}
	return p[:maxFieldPath/2] + "…" + p[len(p)-maxFieldPath/2:]
}

func portPath(np string, i int, label string) string {
	return named(np, i, label)
}
