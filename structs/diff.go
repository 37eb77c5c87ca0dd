package structs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Diff types, Nomad's words.
const (
	DiffTypeNone    = "None"
	DiffTypeAdded   = "Added"
	DiffTypeDeleted = "Deleted"
	DiffTypeEdited  = "Edited"
)

// JobDiff is how one job version differs from another, in Nomad's JobDiff
// shape (what `nomad job plan` prints with +, - and ~): the job's own
// fields and objects, then one diff per task group.
type JobDiff struct {
	Type       string
	ID         string
	Fields     []*FieldDiff
	Objects    []*ObjectDiff
	TaskGroups []*TaskGroupDiff
}

// TaskGroupDiff is one group's difference. Updates counts the plan's
// decisions for the group by Nomad's update types ("create", "destroy",
// "in-place update", "create/destroy update", "ignore", "canary",
// "migrate"), filled in by the planner.
type TaskGroupDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
	Tasks   []*TaskDiff
	Updates map[string]uint64
}

// TaskDiff is one task's difference; Annotations say what it forces
// ("forces create", "forces in-place update", ...).
type TaskDiff struct {
	Type        string
	Name        string
	Fields      []*FieldDiff
	Objects     []*ObjectDiff
	Annotations []string
}

// ObjectDiff is the difference of a nested block (update, restart,
// constraint, config, ...).
type ObjectDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
}

// FieldDiff is one field's old and new value, rendered as text ("" when
// absent).
type FieldDiff struct {
	Type        string
	Name        string
	Old, New    string
	Annotations []string
}

// serverJobFields are set by the control plane, not the user: they are
// not part of a job's diff.
var serverJobFields = map[string]bool{"Status": true, "StatusDescription": true, "Stable": true, "Version": true,
	"SubmitTime": true, "CreateIndex": true, "ModifyIndex": true, "JobModifyIndex": true, "TaskGroups": true}

// flatMaps are string maps Nomad renders as fields named Key[k].
var flatMaps = map[string]bool{"Meta": true, "Env": true}

// DiffJobs returns how job next differs from cur (nil cur: a new job;
// nil next: a deleted one). As Nomad's diff, the job's, groups' and
// tasks' own fields are listed only when they changed, an unchanged
// block is left out, and every group and task is listed (Type None when
// unchanged). With contextual set, a changed block lists its unchanged
// fields too (Type None), as Nomad's contextual diff that `job plan`
// shows.
func DiffJobs(cur, next *Job, contextual bool) *JobDiff {
	out := &JobDiff{Type: DiffTypeNone}
	switch {
	case cur == nil && next == nil:
		return out
	case cur == nil:
		out.ID = next.ID
	default:
		out.ID = cur.ID
	}
	old, now := asMap(cur), asMap(next)
	out.Fields, out.Objects = diffMaps(old, now, serverJobFields, contextual)
	out.Fields = changedFields(out.Fields)
	groups := map[string][2]*TaskGroup{}
	var names []string
	add := func(tg *TaskGroup, i int) {
		p, ok := groups[tg.Name]
		if !ok {
			names = append(names, tg.Name)
		}
		p[i] = tg
		groups[tg.Name] = p
	}
	if cur != nil {
		for _, tg := range cur.TaskGroups {
			add(tg, 0)
		}
	}
	if next != nil {
		for _, tg := range next.TaskGroups {
			add(tg, 1)
		}
	}
	sort.Strings(names)
	changed := len(changedFields(out.Fields)) > 0 || len(changedObjects(out.Objects)) > 0
	for _, n := range names {
		g := diffGroup(groups[n][0], groups[n][1], contextual)
		changed = changed || g.Type != DiffTypeNone
		out.TaskGroups = append(out.TaskGroups, g)
	}
	switch {
	case cur == nil:
		out.Type = DiffTypeAdded
	case next == nil:
		out.Type = DiffTypeDeleted
	case changed:
		out.Type = DiffTypeEdited
	}
	return out
}

func diffGroup(cur, next *TaskGroup, contextual bool) *TaskGroupDiff {
	out := &TaskGroupDiff{Type: DiffTypeNone}
	var oldTasks, newTasks []*Task
	if cur != nil {
		out.Name, oldTasks = cur.Name, cur.Tasks
	}
	if next != nil {
		out.Name, newTasks = next.Name, next.Tasks
	}
	skip := map[string]bool{"Name": true, "Tasks": true}
	out.Fields, out.Objects = diffMaps(asMap(cur), asMap(next), skip, contextual)
	out.Fields = changedFields(out.Fields)
	changed := len(changedFields(out.Fields)) > 0 || len(changedObjects(out.Objects)) > 0
	byName := map[string][2]*Task{}
	var names []string
	for i, list := range [][]*Task{oldTasks, newTasks} {
		for _, t := range list {
			p, ok := byName[t.Name]
			if !ok {
				names = append(names, t.Name)
			}
			p[i] = t
			byName[t.Name] = p
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p := byName[n]
		td := &TaskDiff{Type: kindOf(p[0] != nil, p[1] != nil), Name: n}
		td.Fields, td.Objects = diffMaps(asMap(p[0]), asMap(p[1]), map[string]bool{"Name": true}, contextual)
		td.Fields = changedFields(td.Fields)
		if td.Type == DiffTypeNone && (len(changedFields(td.Fields)) > 0 || len(changedObjects(td.Objects)) > 0) {
			td.Type = DiffTypeEdited
		}
		changed = changed || td.Type != DiffTypeNone
		out.Tasks = append(out.Tasks, td)
	}
	out.Type = kindOf(cur != nil, next != nil)
	if out.Type == DiffTypeNone && changed {
		out.Type = DiffTypeEdited
	}
	return out
}

// kindOf is Added, Deleted or (both present) None, which a caller turns
// into Edited when something differs.
func kindOf(hadOld, hasNew bool) string {
	switch {
	case !hadOld && hasNew:
		return DiffTypeAdded
	case hadOld && !hasNew:
		return DiffTypeDeleted
	}
	return DiffTypeNone
}

func changedFields(fs []*FieldDiff) []*FieldDiff {
	var out []*FieldDiff
	for _, f := range fs {
		if f.Type != DiffTypeNone {
			out = append(out, f)
		}
	}
	return out
}

func changedObjects(os []*ObjectDiff) []*ObjectDiff {
	var out []*ObjectDiff
	for _, o := range os {
		if o.Type != DiffTypeNone {
			out = append(out, o)
		}
	}
	return out
}

// asMap is v's JSON object (nil for nil), numbers kept exact.
func asMap(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil || bytes.Equal(b, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil
	}
	return m
}

// diffMaps compares two JSON objects: scalars become fields, string maps
// named in flatMaps become fields Key[k], nested objects and lists become
// object diffs. Keys in skip are left out.
func diffMaps(old, now map[string]any, skip map[string]bool, contextual bool) ([]*FieldDiff, []*ObjectDiff) {
	keys := map[string]bool{}
	for k := range old {
		keys[k] = true
	}
	for k := range now {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		if !skip[k] {
			sorted = append(sorted, k)
		}
	}
	sort.Strings(sorted)
	var fields []*FieldDiff
	var objects []*ObjectDiff
	for _, k := range sorted {
		o, n := old[k], now[k]
		switch {
		case flatMaps[k] && (isMap(o) || isMap(n)):
			om, nm := toMap(o), toMap(n)
			sub := map[string]bool{}
			for kk := range om {
				sub[kk] = true
			}
			for kk := range nm {
				sub[kk] = true
			}
			subKeys := make([]string, 0, len(sub))
			for kk := range sub {
				subKeys = append(subKeys, kk)
			}
			sort.Strings(subKeys)
			for _, kk := range subKeys {
				fields = appendField(fields, fmt.Sprintf("%s[%s]", k, kk), om[kk], nm[kk], contextual)
			}
		case isMap(o) || isMap(n):
			if d := diffObject(k, toMap(o), toMap(n), contextual); d != nil {
				objects = append(objects, d)
			}
		case isList(o) || isList(n):
			if ol, nl := toList(o), toList(n); len(ol) > 0 || len(nl) > 0 {
				objects = append(objects, diffList(k, ol, nl, contextual)...)
			}
		default:
			fields = appendField(fields, k, o, n, contextual)
		}
	}
	return fields, objects
}

// diffObject diffs a nested object; nil when both are absent or it is
// unchanged. contextual lists a changed object's unchanged fields.
func diffObject(name string, o, n map[string]any, contextual bool) *ObjectDiff {
	if o == nil && n == nil {
		return nil
	}
	d := &ObjectDiff{Type: kindOf(o != nil, n != nil), Name: name}
	d.Fields, d.Objects = diffMaps(o, n, nil, contextual || d.Type != DiffTypeNone)
	if d.Type == DiffTypeNone {
		if len(changedFields(d.Fields)) == 0 && len(changedObjects(d.Objects)) == 0 {
			return nil
		}
		d.Type = DiffTypeEdited
	}
	return d
}

// diffList diffs a list: scalars as one object of added and deleted
// values (Nomad's Datacenters), objects element by element, matched by
// content (Nomad's constraints).
func diffList(name string, o, n []any, contextual bool) []*ObjectDiff {
	scalars := true
	for _, v := range append(append([]any(nil), o...), n...) {
		if isMap(v) || isList(v) {
			scalars = false
		}
	}
	if scalars {
		d := &ObjectDiff{Type: kindOf(len(o) > 0, len(n) > 0), Name: name}
		oldSet, newSet := map[string]bool{}, map[string]bool{}
		for _, v := range o {
			oldSet[text(v)] = true
		}
		for _, v := range n {
			newSet[text(v)] = true
		}
		for _, v := range o {
			if !newSet[text(v)] {
				d.Fields = append(d.Fields, &FieldDiff{Type: DiffTypeDeleted, Name: name, Old: text(v)})
			} else if contextual {
				d.Fields = append(d.Fields, &FieldDiff{Type: DiffTypeNone, Name: name, Old: text(v), New: text(v)})
			}
		}
		for _, v := range n {
			if !oldSet[text(v)] {
				d.Fields = append(d.Fields, &FieldDiff{Type: DiffTypeAdded, Name: name, New: text(v)})
			}
		}
		if d.Type == DiffTypeNone && len(changedFields(d.Fields)) > 0 {
			d.Type = DiffTypeEdited
		}
		if d.Type == DiffTypeNone {
			return nil
		}
		return []*ObjectDiff{d}
	}
	elem := strings.TrimSuffix(name, "s")
	if name == "Affinities" {
		elem = "Affinity"
	}
	key := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	newSet, oldSet := map[string]bool{}, map[string]bool{}
	for _, v := range n {
		newSet[key(v)] = true
	}
	for _, v := range o {
		oldSet[key(v)] = true
	}
	var out []*ObjectDiff
	for _, v := range o {
		if !newSet[key(v)] {
			out = append(out, diffObject(elem, toMap(v), nil, contextual))
		}
	}
	for _, v := range n {
		if !oldSet[key(v)] {
			out = append(out, diffObject(elem, nil, toMap(v), contextual))
		}
	}
	return out
}

func appendField(fields []*FieldDiff, name string, o, n any, contextual bool) []*FieldDiff {
	if o == nil && n == nil {
		return fields
	}
	ot, nt := text(o), text(n)
	f := &FieldDiff{Name: name, Old: ot, New: nt}
	switch {
	case o == nil && n != nil:
		f.Type = DiffTypeAdded
	case o != nil && n == nil:
		f.Type = DiffTypeDeleted
	case ot != nt:
		f.Type = DiffTypeEdited
	default:
		f.Type = DiffTypeNone
		if !contextual {
			return fields
		}
	}
	return append(fields, f)
}

func text(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	case json.Number:
		return t.String()
	case bool:
		if t {
			return "true"
		}
		return "false"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func isMap(v any) bool  { _, ok := v.(map[string]any); return ok }
func isList(v any) bool { _, ok := v.([]any); return ok }

// toMap is v as an object; an empty one counts as absent.
func toMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	if len(m) == 0 {
		return nil
	}
	return m
}

// toList is v as a list; an empty one counts as absent.
func toList(v any) []any {
	l, _ := v.([]any)
	if len(l) == 0 {
		return nil
	}
	return l
}
