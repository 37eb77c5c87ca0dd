package jobspec

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/structs"
)

// RegisterRequest is a decoded, canonicalized and validated job registration
// (the body of Nomad's PUT /v1/jobs): drover's job plus the request options.
type RegisterRequest struct {
	// Job is the job to register, with Nomad's defaults filled in.
	Job *structs.Job

	// EnforceIndex: register only if the job's current JobModifyIndex is
	// JobModifyIndex (0: only if the job does not exist yet).
	EnforceIndex   bool
	JobModifyIndex uint64
	// PolicyOverride asks to override soft policy failures (Sentinel in
	// Nomad); drover has no policies, so it has no effect yet.
	PolicyOverride bool
	// PreserveCounts keeps the current counts of existing groups.
	PreserveCounts bool
	// PreserveResources keeps the current resources of existing tasks.
	PreserveResources bool
	// EvalPriority, when not 0, is the priority (1..100) of the evaluation
	// the registration creates, instead of the job's.
	EvalPriority int
	// Submission is the original job source the CLI sends along (HCL or
	// JSON), or nil.
	Submission *Submission

	// Region and Namespace are the request's (the job's, after the
	// precedence rules of DecodeOptions).
	Region    string
	Namespace string
	// SecretID is the ACL token sent in the body, if any.
	SecretID string
	// Warnings are accepted settings drover does not act on (as Nomad's
	// register response carries warnings), one line each.
	Warnings []string
}

// Warnings lists, one line each naming the field, the settings of a valid
// job that drover accepts but does not enforce: memory_max of a raw_exec
// task (raw_exec sets no memory limit; placement uses memory). exec and
// docker enforce it as the hard limit.
func Warnings(job *structs.Job) []string {
	var out []string
	for gi, tg := range job.TaskGroups {
		for ti, t := range tg.Tasks {
			if t.Driver == RawExecDriver && t.Resources != nil && t.Resources.MemoryMaxMB > 0 {
				out = append(out, fmt.Sprintf("Job.TaskGroups[%d] %q.Tasks[%d] %q.Resources.MemoryMaxMB: not enforced: drover's raw_exec sets no memory limit (placement uses MemoryMB)",
					gi, tg.Name, ti, t.Name))
			}
		}
	}
	return out
}

// Submission is the original source of a job as the Nomad CLI submits it.
type Submission struct {
	Source        string
	Format        string // "hcl2" or "json"
	VariableFlags map[string]string
	Variables     string
}

// DecodeOptions carries what the HTTP request says besides its body.
type DecodeOptions struct {
	// Namespace is the ?namespace= query parameter. As in Nomad it wins
	// over the body's WriteRequest namespace, which wins over the job's
	// own Namespace; when none is set the job lands in "default".
	Namespace string
	// Region is the ?region= query parameter. When set it replaces a job
	// region that is unset or "global", as Nomad does.
	Region string
}

// DecodeRegisterRequest reads a Nomad JobRegisterRequest JSON body
// ({"Job": {...}, "EnforceIndex": ..., ...}; also the shape `nomad job run
// -output` prints), canonicalizes the job with Nomad's defaults, validates
// it and converts it to drover's job. See DecodeRegisterRequestOpts.
func DecodeRegisterRequest(r io.Reader) (*RegisterRequest, error) {
	return DecodeRegisterRequestOpts(r, DecodeOptions{})
}

// DecodeRegisterRequestOpts is DecodeRegisterRequest with the request's
// query parameters. Bad input (malformed JSON, a wrong JSON type, an unknown
// field, no Job, an unsupported block, any validation rule) gives a
// ValidationErrors naming each field and rule; an error reading r is
// returned as is.
func DecodeRegisterRequestOpts(r io.Reader, opts DecodeOptions) (*RegisterRequest, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read job register request: %w", err)
	}
	var req api.JobRegisterRequest
	if err := decodeStrict(data, &req); err != nil {
		return nil, err
	}
	if req.Job == nil {
		return nil, ValidationErrors{{Field: "Job", Rule: `is missing: the body must be {"Job": {...}} in Nomad's JSON job format`}}
	}

	// Namespace and region precedence, before Canonicalize fills defaults.
	switch {
	case opts.Namespace != "" && req.Job.Namespace != nil && *req.Job.Namespace != "" && *req.Job.Namespace != opts.Namespace:
		return nil, ValidationErrors{{Field: "Job.Namespace", Rule: fmt.Sprintf(
			"%q does not match the request's namespace %q (?namespace=)", *req.Job.Namespace, opts.Namespace)}}
	case opts.Namespace != "":
		req.Job.Namespace = &opts.Namespace
	case req.Namespace != "":
		ns := req.Namespace
		req.Job.Namespace = &ns
	}
	if opts.Region != "" && (req.Job.Region == nil || *req.Job.Region == "" || *req.Job.Region == api.GlobalRegion) {
		req.Job.Region = &opts.Region
	}

	var errs errorList
	if req.EvalPriority != 0 && (req.EvalPriority < structs.JobMinPriority || req.EvalPriority > structs.JobMaxPriority) {
		errs.add("EvalPriority", "must be between %d and %d (got %d)", structs.JobMinPriority, structs.JobMaxPriority, req.EvalPriority)
	}
	job, err := FromAPI(req.Job)
	if err != nil {
		var ves ValidationErrors
		if !errors.As(err, &ves) {
			return nil, err
		}
		errs.addAll(ves)
	}
	if !errs.empty() {
		return nil, errs.err()
	}

	out := &RegisterRequest{
		Job:               job,
		EnforceIndex:      req.EnforceIndex,
		JobModifyIndex:    req.JobModifyIndex,
		PolicyOverride:    req.PolicyOverride,
		PreserveCounts:    req.PreserveCounts,
		PreserveResources: req.PreserveResources,
		EvalPriority:      req.EvalPriority,
		Region:            job.Region,
		Namespace:         job.Namespace,
		SecretID:          req.SecretID,
		Warnings:          Warnings(job),
	}
	if s := req.Submission; s != nil {
		out.Submission = &Submission{Source: s.Source, Format: s.Format, VariableFlags: s.VariableFlags, Variables: s.Variables}
	}
	return out, nil
}

// decodeStrict decodes data into v (a pointer to an api type), rejecting
// malformed JSON, trailing data, wrong JSON types and unknown fields with a
// ValidationError naming the JSON path.
func decodeStrict(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return ValidationErrors{{Field: "body", Rule: `is empty: expected {"Job": {...}} in Nomad's JSON job format`}}
	}

	// 1. Syntax, with the position of the first error.
	var tree any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return syntaxError(data, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		off := dec.InputOffset()
		return ValidationErrors{{Field: "body", Rule: fmt.Sprintf("malformed JSON at %s: unexpected data after the top-level value", position(data, off))}}
	}

	// 2. Types and field names, walking the generic tree alongside the
	// api types, so that every message carries the full path.
	var errs errorList
	checkValue(tree, reflect.TypeOf(v).Elem(), "", &errs)
	if !errs.empty() {
		return errs.err()
	}

	// 3. The real decode. Step 2 should have caught everything; this is
	// the backstop, with encoding/json's own errors mapped to a path.
	dec = json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := pathAtOffset(data, te.Offset)
			if field == "" {
				field = "body"
			}
			want := jsonKindOf(te.Type)
			if strings.HasPrefix(te.Value, want) {
				return ValidationErrors{{Field: field, Rule: fmt.Sprintf("%s does not fit %s", te.Value, te.Type)}}
			}
			return ValidationErrors{{Field: field, Rule: fmt.Sprintf("expected %s, got %s", want, te.Value)}}
		}
		return ValidationErrors{{Field: "body", Rule: err.Error()}}
	}
	return nil
}

func syntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		// Offset counts the offending byte itself.
		rule := fmt.Sprintf("malformed JSON at %s: %s", position(data, max(se.Offset-1, 0)), se.Error())
		field := pathAtOffset(data, se.Offset)
		if field == "" {
			field = "body"
		}
		return ValidationErrors{{Field: field, Rule: rule}}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		field := pathAtOffset(data, int64(len(data)))
		if field == "" {
			field = "body"
		}
		return ValidationErrors{{Field: field, Rule: "malformed JSON: unexpected end of input (unclosed object, array or string)"}}
	}
	return ValidationErrors{{Field: "body", Rule: "malformed JSON: " + err.Error()}}
}

// position renders a byte offset as "line L, column C (offset N)".
func position(data []byte, off int64) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d (offset %d)", line, col, off)
}

// pathAtOffset returns the JSON path (Job.TaskGroups[0].Count) of the value
// being read at byte offset off, scanning tokens up to there.
func pathAtOffset(data []byte, off int64) string {
	type frame struct {
		array     bool
		idx       int
		key       string
		expectKey bool
	}
	var stack []*frame
	render := func() string {
		var b strings.Builder
		for _, f := range stack {
			switch {
			case f.array && f.idx >= 0:
				fmt.Fprintf(&b, "[%d]", f.idx)
			case !f.array && !f.expectKey && f.key != "":
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			}
		}
		return b.String()
	}
	// valueStarts records, in the parent, that a value begins.
	valueStarts := func() {
		if n := len(stack); n > 0 && stack[n-1].array {
			stack[n-1].idx++
		}
	}
	// valueEnds records, in the parent, that a value ended.
	valueEnds := func() {
		if n := len(stack); n > 0 && !stack[n-1].array {
			stack[n-1].expectKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	last := ""      // the path after the last token read (for syntax errors)
	lastValue := "" // the path of the last value read completely
	for {
		tok, err := dec.Token()
		if err != nil {
			return last
		}
		// encoding/json reports an error at the end of the offending value
		// (for a number, one byte past it, which it had to read).
		reached := dec.InputOffset() >= off
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				valueStarts()
				if reached {
					return render()
				}
				stack = append(stack, &frame{array: t == '[', idx: -1, expectKey: t == '{'})
			case '}', ']':
				if reached {
					return lastValue
				}
				stack = stack[:len(stack)-1]
				lastValue = render()
				valueEnds()
			}
		default:
			if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].expectKey {
				if reached {
					return lastValue // the byte past the previous number
				}
				stack[n-1].key, _ = t.(string)
				stack[n-1].expectKey = false
				last = render()
				continue
			}
			valueStarts()
			p := render()
			if dec.InputOffset() >= off-1 {
				return p
			}
			lastValue = p
			valueEnds()
		}
		last = render()
	}
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkValue checks that the generic JSON value v (from a decoder with
// UseNumber) fits Go type t the way encoding/json would decode it, and that
// every object key names a field. JSON null fits everything.
func checkValue(v any, t reflect.Type, path string, errs *errorList) {
	if v == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return // decodes itself; encoding/json reports its errors
	}
	at := path
	if at == "" {
		at = "body"
	}
	got := jsonKind(v)
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			errs.add(at, "expected object, got %s", got)
			return
		}
		fields := structFields(t)
		// encoding/json matches keys to fields ignoring case, so "Tasks"
		// and "tasks" would both land in one field, the later one winning:
		// refuse the pair instead of merging them silently.
		seen := map[string]string{}
		for _, key := range sortedKeys(obj) {
			f, ok := lookupField(fields, key)
			if !ok {
				errs.add(join(path, key), "unknown field (not in Nomad's job format; check the spelling)")
				continue
			}
			if other, dup := seen[f.name]; dup {
				errs.add(join(path, f.name), "given twice, as %q and %q (keys differing only in case name the same field): keep one", other, key)
				continue
			}
			seen[f.name] = key
			checkValue(obj[key], f.typ, join(path, f.name), errs)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			errs.add(at, "expected object, got %s", got)
			return
		}
		for _, key := range sortedKeys(obj) {
			checkValue(obj[key], t.Elem(), join(path, key), errs)
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 { // []byte: base64 string
			s, ok := v.(string)
			if !ok {
				errs.add(at, "expected base64 string, got %s", got)
			} else if _, err := base64.StdEncoding.DecodeString(s); err != nil {
				errs.add(at, "expected base64 string: %v", err)
			}
			return
		}
		arr, ok := v.([]any)
		if !ok {
			errs.add(at, "expected array, got %s", got)
			return
		}
		for i, e := range arr {
			checkValue(e, t.Elem(), indexed(path, i), errs)
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			errs.add(at, "expected string, got %s", got)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			errs.add(at, "expected boolean, got %s", got)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			errs.add(at, "expected number, got %s", got)
			return
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err != nil {
			errs.add(at, "expected an integer (%s), got %s", integerType(t), n)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			errs.add(at, "expected number, got %s", got)
			return
		}
		if _, err := strconv.ParseUint(n.String(), 10, t.Bits()); err != nil {
			errs.add(at, "expected a non-negative integer (%s), got %s", integerType(t), n)
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			errs.add(at, "expected number, got %s", got)
		}
	case reflect.Interface:
		// any JSON value
	}
}

// integerType names an integer type for messages; durations are Nomad's
// integer nanoseconds.
func integerType(t reflect.Type) string {
	if t == reflect.TypeFor[time.Duration]() {
		return "int64 nanoseconds"
	}
	return t.Kind().String()
}

type fieldInfo struct {
	name string // JSON name
	typ  reflect.Type
}

// structFields lists the JSON fields of struct type t as encoding/json sees
// them: exported fields under their tag name, embedded structs flattened,
// `json:"-"` skipped.
func structFields(t reflect.Type) []fieldInfo {
	var out []fieldInfo
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, structFields(ft)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, fieldInfo{name: name, typ: f.Type})
	}
	return out
}

// lookupField finds key as encoding/json does: exact name first, then a
// case-insensitive match.
func lookupField(fields []fieldInfo, key string) (fieldInfo, bool) {
	for _, f := range fields {
		if f.name == key {
			return f, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(f.name, key) {
			return f, true
		}
	}
	return fieldInfo{}, false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// jsonKindOf names the JSON kind a Go type decodes from.
func jsonKindOf(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	}
	return t.String()
}
