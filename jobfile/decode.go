package jobfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/nomad/api"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/gocty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// The decoder walks the api types by their hcl struct tags: a field
// tagged "name,optional" (or "name,attr", or just "name") is an
// argument, "name,block" a block (repeated for a slice, keyed by its
// label for a map of structs, name = value pairs for a map of values),
// ",label" or "name,label" a block label. Untagged fields and "-" are not
// part of the job file.

type fieldKind int

const (
	fieldAttr fieldKind = iota
	fieldBlock
	fieldLabel
)

type structField struct {
	name  string
	kind  fieldKind
	index int
}

var fieldCache sync.Map // reflect.Type → []structField

// fieldsOf lists the hcl-tagged fields of struct type t.
func fieldsOf(t reflect.Type) []structField {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]structField)
	}
	var out []structField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("hcl")
		if !ok || tag == "-" || !f.IsExported() {
			continue
		}
		name, kind, _ := strings.Cut(tag, ",")
		sf := structField{name: name, index: i}
		switch kind {
		case "block":
			sf.kind = fieldBlock
		case "label":
			sf.kind = fieldLabel
		case "remain":
			continue
		default: // "optional", "attr", ""
			sf.kind = fieldAttr
		}
		out = append(out, sf)
	}
	fieldCache.Store(t, out)
	return out
}

// labelCount is how many labels a block decoding into struct type t has.
func labelCount(t reflect.Type) int {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return 0
	}
	n := 0
	for _, f := range fieldsOf(t) {
		if f.kind == fieldLabel {
			n++
		}
	}
	return n
}

func valueOf(ptr any) reflect.Value { return reflect.ValueOf(ptr).Elem() }

var (
	durationType    = reflect.TypeFor[time.Duration]()
	constraintType  = reflect.TypeFor[api.Constraint]()
	affinityType    = reflect.TypeFor[api.Affinity]()
	taskType        = reflect.TypeFor[api.Task]()
	stringMapType   = reflect.TypeFor[map[string]string]()
	constraintExtra = []string{api.ConstraintDistinctHosts, api.ConstraintDistinctProperty, api.ConstraintRegex,
		api.ConstraintVersion, api.ConstraintSemver, api.ConstraintSetContains, api.ConstraintSetContainsAll,
		api.ConstraintSetContainsAny, api.ConstraintAttributeIsSet, api.ConstraintAttributeIsNotSet}
)

// decodeStruct decodes body (with the block's labels) into the struct rv.
// An argument or block the type does not have is an error naming it.
func (p *parser) decodeStruct(body hcl.Body, labels []string, defRange hcl.Range, rv reflect.Value) hcl.Diagnostics {
	t := rv.Type()
	fields := fieldsOf(t)
	schema := &hcl.BodySchema{}
	li := 0
	for _, f := range fields {
		fv := rv.Field(f.index)
		switch f.kind {
		case fieldLabel:
			if li < len(labels) {
				setString(fv, labels[li])
				li++
			}
		case fieldAttr:
			schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: f.name})
		case fieldBlock:
			n := labelCount(fv.Type())
			if t == taskType && f.name == "scaling" {
				n = 1 // scaling "cpu" { ... }: a vertical policy, labelled by its resource
			}
			schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: f.name, LabelNames: labelNames(n)})
			if fv.Kind() == reflect.Map && labelCount(fv.Type()) == 0 {
				// meta = { ... } as well as meta { ... }
				schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: f.name})
			}
		}
	}
	shorthand := t == constraintType || t == affinityType
	if shorthand {
		for _, name := range constraintExtra {
			schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: name})
		}
	}
	content, diags := body.Content(schema)
	if diags.HasErrors() {
		return diags
	}
	blocks := content.Blocks.ByType()
	for _, f := range fields {
		fv := rv.Field(f.index)
		switch f.kind {
		case fieldAttr:
			if a, ok := content.Attributes[f.name]; ok {
				diags = append(diags, p.assign(a.Expr, fv)...)
			}
		case fieldBlock:
			bs := blocks[f.name]
			if a, ok := content.Attributes[f.name]; ok {
				if len(bs) > 0 {
					diags = append(diags, errorf(bs[0].DefRange, "Duplicate "+f.name, "%s is given both as an argument (%s) and as a block.", f.name, a.NameRange))
					continue
				}
				diags = append(diags, p.assign(a.Expr, fv)...)
				continue
			}
			diags = append(diags, p.decodeBlocks(f.name, bs, fv)...)
			if t == taskType && f.name == "scaling" {
				// As Nomad's HCL: the label names the policy's type,
				// vertical_cpu or vertical_mem (refused by jobspec).
				for i, sp := range fv.Interface().([]*api.ScalingPolicy) {
					if sp != nil && i < len(bs) && len(bs[i].Labels) == 1 {
						sp.Type = "vertical_" + bs[i].Labels[0]
					}
				}
			}
		}
	}
	if shorthand {
		diags = append(diags, p.constraintShorthand(content, rv)...)
	}
	return diags
}

func labelNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("label%d", i)
	}
	return names
}

// decodeBlocks decodes the blocks of one type into field fv.
func (p *parser) decodeBlocks(name string, bs hcl.Blocks, fv reflect.Value) hcl.Diagnostics {
	if len(bs) == 0 {
		return nil
	}
	var diags hcl.Diagnostics
	t := fv.Type()
	single := func() bool {
		if len(bs) > 1 {
			diags = append(diags, errorf(bs[1].DefRange, "Duplicate "+name+" block", "Only one %s block is allowed here; another is at %s.", name, bs[0].DefRange))
			return false
		}
		return true
	}
	switch {
	case t.Kind() == reflect.Slice:
		elem := t.Elem()
		out := reflect.MakeSlice(t, 0, len(bs))
		for _, b := range bs {
			v, ds := p.decodeNew(b, elem)
			diags = append(diags, ds...)
			out = reflect.Append(out, v)
		}
		fv.Set(out)
	case t.Kind() == reflect.Map && labelCount(t) > 0:
		out := reflect.MakeMapWithSize(t, len(bs))
		for _, b := range bs {
			v, ds := p.decodeNew(b, t.Elem())
			diags = append(diags, ds...)
			out.SetMapIndex(reflect.ValueOf(b.Labels[0]), v)
		}
		fv.Set(out)
	case t.Kind() == reflect.Map:
		if !single() {
			return diags
		}
		diags = append(diags, p.decodeMapBlock(bs[0], fv)...)
	case t.Kind() == reflect.Pointer || t.Kind() == reflect.Struct:
		if !single() {
			return diags
		}
		v, ds := p.decodeNew(bs[0], t)
		diags = append(diags, ds...)
		fv.Set(v)
	default:
		diags = append(diags, errorf(bs[0].DefRange, "Unsupported block type", "Blocks of type %q are not expected here.", name))
	}
	return diags
}

// decodeNew decodes block b into a new value of type t (a struct or a
// pointer to one).
func (p *parser) decodeNew(b *hcl.Block, t reflect.Type) (reflect.Value, hcl.Diagnostics) {
	if t.Kind() == reflect.Pointer {
		v := reflect.New(t.Elem())
		return v, p.decodeStruct(b.Body, b.Labels, b.DefRange, v.Elem())
	}
	v := reflect.New(t).Elem()
	return v, p.decodeStruct(b.Body, b.Labels, b.DefRange, v)
}

// decodeMapBlock decodes a block of name = value pairs: string maps (meta,
// env) convert each value to a string, as Nomad does; free-form maps
// (a task's config) keep values as they are and nested blocks as lists
// of objects.
func (p *parser) decodeMapBlock(b *hcl.Block, fv reflect.Value) hcl.Diagnostics {
	if fv.Type() == stringMapType {
		attrs, diags := b.Body.JustAttributes()
		if diags.HasErrors() {
			return diags
		}
		out := map[string]string{}
		for name, a := range attrs {
			val, ds := a.Expr.Value(p.evalContext(a.Expr))
			diags = append(diags, ds...)
			if ds.HasErrors() {
				continue
			}
			s, err := convert.Convert(val, cty.String)
			if err != nil || s.IsNull() {
				diags = append(diags, errorf(a.Expr.Range(), "Unsuitable value type", "%s: a string is required here", name))
				continue
			}
			out[name] = s.AsString()
		}
		fv.Set(reflect.ValueOf(out))
		return diags
	}
	m, diags := p.decodeFreeForm(b.Body)
	if diags.HasErrors() {
		return diags
	}
	return append(diags, jsonAssign(m, fv, b.DefRange)...)
}

// decodeFreeForm decodes a body with any arguments and blocks into a map.
func (p *parser) decodeFreeForm(body hcl.Body) (map[string]any, hcl.Diagnostics) {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		attrs, diags := body.JustAttributes()
		out := map[string]any{}
		for name, a := range attrs {
			v, ds := p.goValue(a.Expr)
			diags = append(diags, ds...)
			out[name] = v
		}
		return out, diags
	}
	var diags hcl.Diagnostics
	out := map[string]any{}
	for name, a := range sb.Attributes {
		v, ds := p.goValue(a.Expr)
		diags = append(diags, ds...)
		out[name] = v
	}
	for _, b := range sb.Blocks {
		if _, clash := sb.Attributes[b.Type]; clash {
			diags = append(diags, errorf(b.DefRange(), "Duplicate "+b.Type, "%s is given both as an argument and as a block.", b.Type))
			continue
		}
		child, ds := p.decodeFreeForm(b.Body)
		diags = append(diags, ds...)
		var entry any = child
		for i := len(b.Labels) - 1; i >= 0; i-- {
			entry = map[string]any{b.Labels[i]: entry}
		}
		list, _ := out[b.Type].([]any)
		out[b.Type] = append(list, entry)
	}
	return out, diags
}

// goValue evaluates expr into a plain Go value (JSON's shapes).
func (p *parser) goValue(expr hcl.Expression) (any, hcl.Diagnostics) {
	val, diags := expr.Value(p.evalContext(expr))
	if diags.HasErrors() {
		return nil, diags
	}
	return toGo(val, expr.Range())
}

// toGo turns a known value into a plain Go value (JSON's shapes; numbers
// as json.Number, exact).
func toGo(val cty.Value, r hcl.Range) (any, hcl.Diagnostics) {
	if !val.IsWhollyKnown() {
		return nil, hcl.Diagnostics{errorf(r, "Unknown value", "The value cannot be known when the job is parsed.")}
	}
	b, err := ctyjson.Marshal(val, val.Type())
	if err != nil {
		return nil, hcl.Diagnostics{errorf(r, "Unsuitable value", "%v", err)}
	}
	var out any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return nil, hcl.Diagnostics{errorf(r, "Unsuitable value", "%v", err)}
	}
	return out, nil
}

// assign evaluates expr into field fv: durations from "10s" strings (or
// integer nanoseconds), other values converted to the field's type.
func (p *parser) assign(expr hcl.Expression, fv reflect.Value) hcl.Diagnostics {
	val, diags := expr.Value(p.evalContext(expr))
	if diags.HasErrors() {
		return diags
	}
	if val.IsNull() {
		return nil
	}
	if !val.IsWhollyKnown() {
		return hcl.Diagnostics{errorf(expr.Range(), "Unknown value", "The value cannot be known when the job is parsed.")}
	}
	t := fv.Type()
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if base == durationType {
		d, err := durationOf(val)
		if err != nil {
			return hcl.Diagnostics{errorf(expr.Range(), "Unsuitable duration value", "%v", err)}
		}
		if t.Kind() == reflect.Pointer {
			fv.Set(reflect.ValueOf(&d))
		} else {
			fv.Set(reflect.ValueOf(d))
		}
		return nil
	}
	if ty, err := gocty.ImpliedType(reflect.Zero(t).Interface()); err == nil && !ty.Equals(cty.DynamicPseudoType) {
		conv, err := convert.Convert(val, ty)
		if err != nil {
			return hcl.Diagnostics{errorf(expr.Range(), "Unsuitable value type", "%s is required here: %v", ty.FriendlyName(), err)}
		}
		val = conv
	}
	v, ds := toGo(val, expr.Range())
	if ds.HasErrors() {
		return ds
	}
	return jsonAssign(v, fv, expr.Range())
}

// jsonAssign stores the plain value v in fv through encoding/json, as the
// API would decode it.
func jsonAssign(v any, fv reflect.Value, r hcl.Range) hcl.Diagnostics {
	b, err := json.Marshal(v)
	if err != nil {
		return hcl.Diagnostics{errorf(r, "Unsuitable value", "%v", err)}
	}
	nv := reflect.New(fv.Type())
	if err := json.Unmarshal(b, nv.Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if lo, hi, ok := intRange(te.Type); ok && strings.HasPrefix(te.Value, "number ") {
				return hcl.Diagnostics{errorf(r, "Unsuitable value", "expected a whole number from %s to %s, got %s", lo, hi, strings.TrimPrefix(te.Value, "number "))}
			}
			return hcl.Diagnostics{errorf(r, "Unsuitable value type", "expected %s, got a %s", friendlyType(te.Type), te.Value)}
		}
		return hcl.Diagnostics{errorf(r, "Unsuitable value", "%v", err)}
	}
	fv.Set(nv.Elem())
	return nil
}

// intRange gives the bounds of an integer kind as decimal strings, so that a
// number that does not fit (a weight of 200 in an int8) is reported with the
// range rather than as a type mismatch.
func intRange(t reflect.Type) (lo, hi string, ok bool) {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b := t.Bits()
		return strconv.FormatInt(-1<<(b-1), 10), strconv.FormatInt(1<<(b-1)-1, 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "0", strconv.FormatUint(^uint64(0)>>(64-t.Bits()), 10), true
	}
	return "", "", false
}

func friendlyType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// durationOf reads a duration: a Go duration string ("10s", "1h30m") or
// integer nanoseconds.
func durationOf(val cty.Value) (time.Duration, error) {
	switch {
	case val.Type() == cty.String:
		d, err := time.ParseDuration(val.AsString())
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (e.g. \"30s\", \"5m\"): %v", val.AsString(), err)
		}
		return d, nil
	case val.Type() == cty.Number:
		var n int64
		if err := gocty.FromCtyValue(val, &n); err != nil {
			return 0, fmt.Errorf("a duration in nanoseconds must be an integer: %v", err)
		}
		return time.Duration(n), nil
	}
	return 0, fmt.Errorf("a duration string (e.g. \"30s\") is required, got %s", val.Type().FriendlyName())
}

func setString(fv reflect.Value, s string) {
	switch {
	case fv.Kind() == reflect.String:
		fv.SetString(s)
	case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.String:
		fv.Set(reflect.ValueOf(&s))
	}
}

// constraintShorthand applies Nomad's shorthand arguments of constraint
// and affinity blocks: version = "> 1.2" for operator "version" and value
// "> 1.2" (likewise semver, regexp, set_contains*), distinct_hosts = true,
// distinct_property = "${meta.rack}", is_set/is_not_set = "${attr.x}".
// The operator defaults to "=".
func (p *parser) constraintShorthand(content *hcl.BodyContent, rv reflect.Value) hcl.Diagnostics {
	var diags hcl.Diagnostics
	ltarget, rtarget, operand := rv.FieldByName("LTarget"), rv.FieldByName("RTarget"), rv.FieldByName("Operand")
	for _, name := range constraintExtra {
		a, ok := content.Attributes[name]
		if !ok {
			continue
		}
		val, ds := a.Expr.Value(p.evalContext(a.Expr))
		diags = append(diags, ds...)
		if ds.HasErrors() || val.IsNull() {
			continue
		}
		if name == api.ConstraintDistinctHosts {
			b, err := convert.Convert(val, cty.Bool)
			if err != nil {
				diags = append(diags, errorf(a.Expr.Range(), "Unsuitable value type", "distinct_hosts must be true or false"))
				continue
			}
			if b.True() {
				operand.SetString(name)
			}
			continue
		}
		s, err := convert.Convert(val, cty.String)
		if err != nil {
			diags = append(diags, errorf(a.Expr.Range(), "Unsuitable value type", "%s must be a string", name))
			continue
		}
		operand.SetString(name)
		switch name {
		case api.ConstraintDistinctProperty, api.ConstraintAttributeIsSet, api.ConstraintAttributeIsNotSet:
			ltarget.SetString(s.AsString())
		default:
			rtarget.SetString(s.AsString())
		}
	}
	if operand.String() == "" {
		operand.SetString("=")
	}
	return diags
}
