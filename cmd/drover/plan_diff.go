package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// The plan diff is printed as Nomad's CLI prints it: a marker per line
// ("+" added, "-" deleted, "+/-" edited, none unchanged), nested objects
// indented by two spaces in "Name { ... }", the fields of one level
// aligned on their names, a group's update counts in parentheses, a
// task's annotations ("forces create/destroy update") after its name.
// Unchanged parts, and the inside of wholly added or deleted groups and
// tasks, are only shown with verbose.

// diffMarker is the marker of a diff type.
func diffMarker(typ string) string {
	switch typ {
	case "Added":
		return "+"
	case "Deleted":
		return "-"
	case "Edited":
		return "+/-"
	}
	return ""
}

// diffPrinter accumulates the lines of a diff.
type diffPrinter struct {
	b       strings.Builder
	verbose bool
}

// line writes one line: indent spaces, the marker padded to markerWidth,
// then text.
func (p *diffPrinter) line(indent, markerWidth int, marker, text string) {
	p.b.WriteString(strings.Repeat(" ", indent))
	if markerWidth > 0 {
		p.b.WriteString(marker)
		p.b.WriteString(strings.Repeat(" ", markerWidth-len(marker)+1))
	}
	p.b.WriteString(text)
	p.b.WriteString("\n")
}

// formatJobDiff renders a job plan's diff.
func formatJobDiff(d *api.JobDiff, verbose bool) string {
	p := &diffPrinter{verbose: verbose}
	width := len(diffMarker(d.Type))
	for _, tg := range d.TaskGroups {
		width = max(width, len(diffMarker(tg.Type)))
	}
	p.line(0, width, diffMarker(d.Type), fmt.Sprintf("Job: %q", d.ID))
	if d.Type == "Edited" || verbose {
		p.fieldsAndObjects(0, p.changedFields(d.Fields), p.changedObjects(d.Objects))
	}
	for _, tg := range d.TaskGroups {
		p.taskGroup(0, width, tg)
	}
	return strings.TrimRight(p.b.String(), "\n")
}

func (p *diffPrinter) taskGroup(indent, width int, tg *api.TaskGroupDiff) {
	text := fmt.Sprintf("Task Group: %q", tg.Name)
	if len(tg.Updates) > 0 {
		kinds := make([]string, 0, len(tg.Updates))
		for k := range tg.Updates {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		parts := make([]string, 0, len(kinds))
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%d %s", tg.Updates[k], k))
		}
		text += " (" + strings.Join(parts, ", ") + ")"
	}
	p.line(indent, width, diffMarker(tg.Type), text)
	inner := indent + 2
	if tg.Type == "Edited" || p.verbose {
		p.fieldsAndObjects(inner, p.changedFields(tg.Fields), p.changedObjects(tg.Objects))
	}
	tw := 0
	for _, t := range tg.Tasks {
		tw = max(tw, len(diffMarker(t.Type)))
	}
	for _, t := range tg.Tasks {
		text := fmt.Sprintf("Task: %q", t.Name)
		if len(t.Annotations) > 0 {
			text += " (" + strings.Join(t.Annotations, ", ") + ")"
		}
		p.line(inner, tw, diffMarker(t.Type), text)
		if t.Type == "Edited" || (p.verbose && t.Type != "None") {
			p.fieldsAndObjects(inner+2, p.changedFields(t.Fields), p.changedObjects(t.Objects))
		}
	}
}

// fieldsAndObjects prints one level's fields (names aligned) and then its
// objects.
func (p *diffPrinter) fieldsAndObjects(indent int, fields []*api.FieldDiff, objects []*api.ObjectDiff) {
	width, nameWidth := 0, 0
	for _, f := range fields {
		width = max(width, len(diffMarker(f.Type)))
		nameWidth = max(nameWidth, len(f.Name))
	}
	for _, o := range objects {
		width = max(width, len(diffMarker(o.Type)))
	}
	for _, f := range fields {
		var value string
		switch f.Type {
		case "Added":
			value = fmt.Sprintf("%q", f.New)
		case "Deleted":
			value = fmt.Sprintf("%q", f.Old)
		case "Edited":
			value = fmt.Sprintf("%q => %q", f.Old, f.New)
		default:
			value = fmt.Sprintf("%q", f.New)
		}
		text := f.Name + ": " + strings.Repeat(" ", nameWidth-len(f.Name)) + value
		if len(f.Annotations) > 0 {
			text += " (" + strings.Join(f.Annotations, ", ") + ")"
		}
		p.line(indent, width, diffMarker(f.Type), text)
	}
	for _, o := range objects {
		p.line(indent, width, diffMarker(o.Type), o.Name+" {")
		p.fieldsAndObjects(indent+width-len(diffMarker(o.Type))+2, o.Fields, o.Objects)
		p.line(indent+width+1, 0, "", "}")
	}
}

// changedFields drops the unchanged fields of a job, group or task unless
// verbose: Nomad's servers send those levels without context, so only
// what changed is shown (inside a changed object, its unchanged fields
// are context and stay).
func (p *diffPrinter) changedFields(fs []*api.FieldDiff) []*api.FieldDiff {
	if p.verbose {
		return fs
	}
	var out []*api.FieldDiff
	for _, f := range fs {
		if f.Type != "None" && f.Type != "" {
			out = append(out, f)
		}
	}
	return out
}

// changedObjects is changedFields for objects.
func (p *diffPrinter) changedObjects(os []*api.ObjectDiff) []*api.ObjectDiff {
	if p.verbose {
		return os
	}
	var out []*api.ObjectDiff
	for _, o := range os {
		if o.Type != "None" && o.Type != "" {
			out = append(out, o)
		}
	}
	return out
}
