package drivers

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"
)

// FieldError is one problem with a task's driver config: Field is the
// config key's path inside the task's Config ("image", "args[1]",
// "mount[0].type"), Rule what is wrong with it.
type FieldError struct {
	Field string
	Rule  string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Rule }

// FieldErrors is every problem found in one config.
type FieldErrors []*FieldError

func (es FieldErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// ValidateContext is what a config's rules may need to know about the task
// around it.
type ValidateContext struct {
	// GroupPorts are the port labels of the task group's network block
	// (static and dynamic ports); nil when the group has none.
	GroupPorts []string
	// GroupNetworkMode is the mode of the group's network block ("host",
	// "bridge"; "" when it has none): in bridge mode the group's tasks
	// share one network namespace.
	GroupNetworkMode string
}

// ConfigValidator checks a task's raw driver config (as decoded from JSON:
// strings, float64 or json.Number numbers, bools, []any, map[string]any).
type ConfigValidator interface {
	Validate(raw map[string]any, vc ValidateContext) FieldErrors
}

// Spec declares a driver's task config once: T is a struct whose fields
// carry `config:"key"` tags (`config:"key,required"` for required keys),
// and whose pointer may implement Rules for the checks types cannot
// express. The same Spec checks a job at submission (Validate, through
// jobspec) and decodes the config on the node (Decode), as Nomad's
// taskConfigSpec does for its drivers.
//
// Field types: string, bool, int, int64, float64, time.Duration (a Go
// duration string or integer nanoseconds), []string, map[string]string
// (an object, or a list of objects as HCL blocks render to JSON), a struct
// (a block: an object or a list of one object) and []struct (repeatable
// blocks). A key the struct does not declare is refused, naming it.
type Spec[T any] struct {
	// Driver is the driver's name, for messages.
	Driver string
}

// Rules is implemented by a config struct's pointer to check what its
// field types cannot: allowed values, combinations, the group around it.
type Rules interface {
	Rules(vc ValidateContext) FieldErrors
}

// Decode turns raw into a T. Any problem (unknown key, wrong type, missing
// required key, a broken rule) comes back as FieldErrors.
func (s Spec[T]) Decode(raw map[string]any, vc ValidateContext) (*T, error) {
	out := new(T)
	d := &decoder{driver: s.Driver}
	d.decodeStruct("", raw, reflect.ValueOf(out).Elem())
	if len(d.errs) == 0 {
		if r, ok := any(out).(Rules); ok {
			d.errs = append(d.errs, r.Rules(vc)...)
		}
	}
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return out, nil
}

// Validate checks raw as Decode does and returns the problems.
func (s Spec[T]) Validate(raw map[string]any, vc ValidateContext) FieldErrors {
	if _, err := s.Decode(raw, vc); err != nil {
		return err.(FieldErrors)
	}
	return nil
}

// Keys returns the config keys T declares, sorted.
func (s Spec[T]) Keys() []string {
	var keys []string
	for _, f := range structFields(reflect.TypeFor[T]()) {
		keys = append(keys, f.key)
	}
	sort.Strings(keys)
	return keys
}

type decoder struct {
	driver string
	errs   FieldErrors
}

func (d *decoder) fail(path, format string, a ...any) {
	d.errs = append(d.errs, &FieldError{Field: path, Rule: fmt.Sprintf(format, a...)})
}

type fieldInfo struct {
	key      string
	index    int
	required bool
}

func structFields(t reflect.Type) []fieldInfo {
	var out []fieldInfo
	for i := range t.NumField() {
		tag, ok := t.Field(i).Tag.Lookup("config")
		if !ok || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		out = append(out, fieldInfo{key: name, index: i, required: opts == "required"})
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d *decoder) decodeStruct(path string, raw map[string]any, v reflect.Value) {
	fields := structFields(v.Type())
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		known[f.key] = true
		val, present := raw[f.key]
		if !present || val == nil {
			if f.required {
				d.fail(join(path, f.key), "is required by the %s driver", d.driver)
			}
			continue
		}
		d.decodeValue(join(path, f.key), val, v.Field(f.index))
	}
	var unknown []string
	for k := range raw {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		keys := make([]string, 0, len(fields))
		for _, f := range fields {
			keys = append(keys, f.key)
		}
		sort.Strings(keys)
		d.fail(join(path, k), "is not %s %s option drover supports (options: %s)", article(d.driver), d.driver, strings.Join(keys, ", "))
	}
}

var durationType = reflect.TypeFor[time.Duration]()

func (d *decoder) decodeValue(path string, val any, v reflect.Value) {
	if v.Type() == durationType {
		d.decodeDuration(path, val, v)
		return
	}
	switch v.Kind() {
	case reflect.String:
		s, ok := val.(string)
		if !ok {
			d.fail(path, "must be a string (got %s)", kind(val))
			return
		}
		v.SetString(s)
	case reflect.Bool:
		b, ok := val.(bool)
		if !ok {
			d.fail(path, "must be a boolean (got %s)", kind(val))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		f, ok := number(val)
		if !ok {
			d.fail(path, "must be a number (got %s)", kind(val))
			return
		}
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			d.fail(path, "must be a whole number (got %v)", f)
			return
		}
		v.SetInt(int64(f))
	case reflect.Float64:
		f, ok := number(val)
		if !ok {
			d.fail(path, "must be a number (got %s)", kind(val))
			return
		}
		v.SetFloat(f)
	case reflect.Slice:
		d.decodeSlice(path, val, v)
	case reflect.Map:
		d.decodeMap(path, val, v)
	case reflect.Struct:
		d.decodeBlock(path, val, v)
	default:
		d.fail(path, "has a type drover cannot decode (%s)", v.Type())
	}
}

func (d *decoder) decodeDuration(path string, val any, v reflect.Value) {
	switch x := val.(type) {
	case string:
		dur, err := time.ParseDuration(x)
		if err != nil {
			d.fail(path, "must be a duration such as \"10s\" or \"1m30s\" (got %q)", x)
			return
		}
		v.SetInt(int64(dur))
	default:
		f, ok := number(val)
		if !ok || f != math.Trunc(f) {
			d.fail(path, "must be a duration such as \"10s\" (got %s)", kind(val))
			return
		}
		v.SetInt(int64(f))
	}
}

func (d *decoder) decodeSlice(path string, val any, v reflect.Value) {
	elem := v.Type().Elem()
	var list []any
	switch x := val.(type) {
	case []any:
		list = x
	case []string:
		for _, s := range x {
			list = append(list, s)
		}
	case []map[string]any:
		for _, m := range x {
			list = append(list, m)
		}
	case map[string]any:
		if elem.Kind() == reflect.Struct {
			list = []any{x} // one block
			break
		}
		d.fail(path, "must be a list%s (got %s)", listOf(elem), kind(val))
		return
	default:
		d.fail(path, "must be a list%s (got %s)", listOf(elem), kind(val))
		return
	}
	out := reflect.MakeSlice(v.Type(), len(list), len(list))
	for i, item := range list {
		ip := fmt.Sprintf("%s[%d]", path, i)
		if item == nil {
			d.fail(ip, "must not be null")
			continue
		}
		d.decodeValue(ip, item, out.Index(i))
	}
	v.Set(out)
}

func (d *decoder) decodeMap(path string, val any, v reflect.Value) {
	if v.Type().Key().Kind() != reflect.String || v.Type().Elem().Kind() != reflect.String {
		d.fail(path, "has a type drover cannot decode (%s)", v.Type())
		return
	}
	var objs []map[string]any
	switch x := val.(type) {
	case map[string]any:
		objs = []map[string]any{x}
	case map[string]string:
		m := make(map[string]any, len(x))
		for k, s := range x {
			m[k] = s
		}
		objs = []map[string]any{m}
	case []any:
		// HCL renders `labels { a = "b" }` as a list of objects.
		for i, item := range x {
			m, ok := item.(map[string]any)
			if !ok {
				d.fail(fmt.Sprintf("%s[%d]", path, i), "must be an object of strings (got %s)", kind(item))
				return
			}
			objs = append(objs, m)
		}
	case []map[string]any:
		objs = x
	default:
		d.fail(path, "must be an object of strings (got %s)", kind(val))
		return
	}
	out := reflect.MakeMap(v.Type())
	for _, m := range objs {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, ok := m[k].(string)
			if !ok {
				d.fail(join(path, k), "must be a string (got %s)", kind(m[k]))
				continue
			}
			out.SetMapIndex(reflect.ValueOf(k), reflect.ValueOf(s))
		}
	}
	v.Set(out)
}

// decodeBlock decodes one block: an object, or a list of one object.
func (d *decoder) decodeBlock(path string, val any, v reflect.Value) {
	switch x := val.(type) {
	case map[string]any:
		d.decodeStruct(path, x, v)
	case []map[string]any:
		if len(x) != 1 {
			d.fail(path, "must be a single block (got %d)", len(x))
			return
		}
		d.decodeStruct(path+"[0]", x[0], v)
	case []any:
		if len(x) != 1 {
			d.fail(path, "must be a single block (got %d)", len(x))
			return
		}
		m, ok := x[0].(map[string]any)
		if !ok {
			d.fail(path+"[0]", "must be an object (got %s)", kind(x[0]))
			return
		}
		d.decodeStruct(path+"[0]", m, v)
	default:
		d.fail(path, "must be an object (got %s)", kind(val))
	}
}

func number(val any) (float64, bool) {
	switch x := val.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// kind names the JSON kind of a decoded value, for messages.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any, map[string]string:
		return "object"
	case []any, []string, []map[string]any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number, float64, float32, int, int64, int32:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// listOf names a list's elements for messages: " of strings", " of blocks".
func listOf(elem reflect.Type) string {
	switch elem.Kind() {
	case reflect.String:
		return " of strings"
	case reflect.Struct:
		return " of blocks"
	}
	return ""
}

// article is "a" or "an" before word.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}
