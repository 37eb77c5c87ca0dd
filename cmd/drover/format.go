package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
)

// shortIDLength is how many characters of an ID the tables show without
// -verbose, as Nomad's CLI.
const shortIDLength = 8

// limit shortens an ID to shortIDLength characters unless verbose.
func limit(id string, verbose bool) string {
	if verbose || len(id) <= shortIDLength {
		return id
	}
	return id[:shortIDLength]
}

// outputFlags are the -json and -t flags of a read command: print the API
// object as JSON, or through a Go template, instead of the tables.
type outputFlags struct {
	json bool
	tmpl string
}

// addOutputFlags registers -json and -t on fs.
func addOutputFlags(fs *flag.FlagSet) *outputFlags {
	o := &outputFlags{}
	fs.BoolVar(&o.json, "json", false, "")
	fs.StringVar(&o.tmpl, "t", "", "")
	return o
}

// outputOptionsUsage is the help text of -json and -t.
const outputOptionsUsage = `
  -json
    Output the object(s) in their JSON form (Nomad's API shape).

  -t
    Format and display the object(s) using a Go template (text/template,
    with the sprig functions, as Nomad's CLI).`

// wanted reports whether -json or -t was given.
func (o *outputFlags) wanted() bool { return o.json || o.tmpl != "" }

// write prints v as -json or -t ask and returns the exit code: 0, or 1
// with the error on stderr.
func (o *outputFlags) write(m *Meta, v any) int {
	out, err := formatData(o.json, o.tmpl, v)
	if err != nil {
		return m.errorf("formatting output", err)
	}
	fmt.Fprintln(m.Stdout, out)
	return 0
}

// formatData renders v as indented JSON (json) or through the Go
// template tmpl, as Nomad's -json and -t.
func formatData(asJSON bool, tmpl string, v any) (string, error) {
	switch {
	case asJSON && tmpl != "":
		return "", errors.New("both -json and -t given: choose one")
	case asJSON:
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "    ")
		if err := enc.Encode(v); err != nil {
			return "", err
		}
		return string(bytes.TrimRight(buf.Bytes(), "\n")), nil
	default:
		// text/template's errors start with "template: output:LINE:COL".
		t, err := template.New("output").Funcs(sprig.TxtFuncMap()).Parse(tmpl)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, v); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
}

// formatTime renders a time as Nomad's CLI does.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "N/A"
	}
	return t.Local().Format("2006-01-02T15:04:05Z07:00")
}

func formatUnixNano(n int64) string {
	if n == 0 {
		return "N/A"
	}
	return formatTime(time.Unix(0, n))
}

// ago renders how long ago t was ("3s ago", "2m10s ago").
func ago(t time.Time) string {
	if t.IsZero() {
		return "N/A"
	}
	d := time.Since(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String() + " ago"
}

func agoUnixNano(n int64) string {
	if n == 0 {
		return "N/A"
	}
	return ago(time.Unix(0, n))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func orNA(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// now is the time stamp of monitor lines.
func now() string { return formatTime(time.Now()) }

// writeLines prints each of lines on w.
func writeLines(w io.Writer, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
