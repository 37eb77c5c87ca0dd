package tasktemplate

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	"gopkg.in/yaml.v3"
)

// refused names the functions a drover template may not call, each with
// why (the reason is part of the 400 at submission).
var refused = func() map[string]string {
	m := map[string]string{}
	for _, f := range []string{"key", "keyExists", "keyOrDefault", "ls", "safeLs", "tree", "safeTree",
		"service", "services", "node", "nodes", "datacenters", "connect", "caRoots", "caLeaf",
		"partitions", "peerings", "exportedServices", "importedServices"} {
		m[f] = "reads Consul, which drover does not integrate with"
	}
	for _, f := range []string{"secret", "secrets", "pkiCert"} {
		m[f] = "reads Vault, which drover does not integrate with"
	}
	for _, f := range []string{"nomadVar", "nomadVarList", "nomadVarListSafe", "nomadVarExists"} {
		m[f] = "reads Nomad variables, which drover does not support yet"
	}
	m["plugin"] = "is denied by Nomad's default template function_denylist"
	m["writeToFile"] = "is denied by Nomad's default template function_denylist"
	m["sockaddr"] = "is not provided by drover"
	m["toTOML"] = "is not provided by drover"
	for _, f := range []string{"spew_dump", "spew_printf", "spew_sdump", "spew_sprintf"} {
		m[f] = "is not provided by drover"
	}
	return m
}()

// sprigFuncs are sprig's hermetic functions under consul-template's
// "sprig_" names.
var sprigFuncs = func() template.FuncMap {
	m := template.FuncMap{}
	for k, v := range sprig.HermeticTxtFuncMap() {
		m["sprig_"+k] = v
	}
	return m
}()

// funcMap builds the functions of one render: the helpers, sprig's, the
// service lookups, and a stub for every refused name (so that a template
// naming one parses, and Check can name it).
func funcMap(r *renderContext) template.FuncMap {
	m := template.FuncMap{
		"env":          r.env,
		"envOrDefault": r.envOrDefault,
		"mustEnv":      r.mustEnv,
		"file":         r.file,
		"timestamp":    r.timestamp,

		"nomadService":  r.nomadService,
		"nomadServices": r.nomadServices,

		"base64Decode":          base64Decode,
		"base64Encode":          base64Encode,
		"base64URLDecode":       base64URLDecode,
		"base64URLEncode":       base64URLEncode,
		"byTag":                 byTag,
		"byMeta":                byMeta,
		"contains":              contains,
		"containsAll":           containsSome(true, true),
		"containsAny":           containsSome(false, false),
		"containsNone":          containsSome(true, false),
		"containsNotAll":        containsSome(false, true),
		"explodeMap":            explodeMap,
		"mergeMap":              mergeMap(false),
		"mergeMapWithOverride":  mergeMap(true),
		"in":                    in,
		"indent":                indent,
		"loop":                  loop,
		"join":                  join,
		"trim":                  func(cut, s string) string { return strings.Trim(s, cut) },
		"trimPrefix":            func(p, s string) string { return strings.TrimPrefix(s, p) },
		"trimSuffix":            func(p, s string) string { return strings.TrimSuffix(s, p) },
		"trimSpace":             strings.TrimSpace,
		"parseBool":             parseBool,
		"parseFloat":            parseFloat,
		"parseInt":              parseInt,
		"parseUint":             parseUint,
		"parseJSON":             parseJSON,
		"parseYAML":             parseYAML,
		"regexReplaceAll":       regexReplaceAll,
		"regexMatch":            regexMatch,
		"replaceAll":            func(from, to, s string) string { return strings.ReplaceAll(s, from, to) },
		"sha256Hex":             func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) },
		"md5sum":                func(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) },
		"hmacSHA256Hex":         hmacSHA256Hex,
		"toLower":               strings.ToLower,
		"toUpper":               strings.ToUpper,
		"toTitle":               toTitle,
		"toJSON":                toJSON(false, true),
		"toJSONPretty":          toJSON(true, true),
		"toUnescapedJSON":       toJSON(false, false),
		"toUnescapedJSONPretty": toJSON(true, false),
		"toYAML":                toYAML,
		"split":                 split,
		"splitToMap":            splitToMap,
		"add":                   arith("add"),
		"subtract":              arith("subtract"),
		"multiply":              arith("multiply"),
		"divide":                arith("divide"),
		"modulo":                arith("modulo"),
		"minimum":               arith("minimum"),
		"maximum":               arith("maximum"),
		"scratch":               r.scratchPad,
		"executeTemplate":       r.executeTemplate,
	}
	for k, v := range sprigFuncs {
		m[k] = v
	}
	for name := range refused {
		if _, ok := m[name]; !ok {
			m[name] = deniedFunc(name)
		}
	}
	return m
}

// deniedFunc stands in for a refused function at render time (Check
// refuses it before a job gets that far).
func deniedFunc(name string) func(...any) (string, error) {
	return func(...any) (string, error) {
		return "", fmt.Errorf("function %q %s", name, refused[name])
	}
}

func base64Decode(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("base64Decode: %w", err)
	}
	return string(b), nil
}

func base64Encode(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func base64URLDecode(s string) (string, error) {
	b, err := base64.URLEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("base64URLDecode: %w", err)
	}
	return string(b), nil
}

func base64URLEncode(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }

func hmacSHA256Hex(message, key string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(message))
	return hex.EncodeToString(m.Sum(nil))
}

// split splits s (trimmed) by sep; an empty s is an empty list, as
// consul-template's.
func split(sep, s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return []string{}
	}
	return strings.Split(s, sep)
}

// splitToMap splits s by sep1 into items and each item by sep2 into key
// and value; items without sep2 are left out.
func splitToMap(sep1, sep2, s string) map[string]string {
	out := map[string]string{}
	s = strings.TrimSpace(s)
	if s == "" {
		return out
	}
	for _, item := range strings.Split(s, sep1) {
		if k, v, ok := strings.Cut(item, sep2); ok {
			out[k] = v
		}
	}
	return out
}

// join joins a list of strings (or of any values, printed) with sep.
func join(sep string, list any) (string, error) {
	switch l := list.(type) {
	case []string:
		return strings.Join(l, sep), nil
	case []any:
		parts := make([]string, len(l))
		for i, v := range l {
			parts[i] = fmt.Sprint(v)
		}
		return strings.Join(parts, sep), nil
	}
	return "", fmt.Errorf("join: cannot join a %T", list)
}

// toTitle upper-cases the first letter of each word, keeping the spacing.
func toTitle(s string) string {
	out := []byte(s)
	start := -1
	for i := 0; i <= len(out); i++ {
		if i < len(out) && out[i] != ' ' && out[i] != '\t' && out[i] != '\n' {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && out[start] >= 'a' && out[start] <= 'z' {
			out[start] -= 'a' - 'A'
		}
		start = -1
	}
	return string(out)
}

func parseBool(s string) (bool, error) {
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("parseBool: %w", err)
	}
	return b, nil
}

func parseFloat(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("parseFloat: %w", err)
	}
	return f, nil
}

func parseInt(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parseInt: %w", err)
	}
	return i, nil
}

func parseUint(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	i, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parseUint: %w", err)
	}
	return i, nil
}

func parseJSON(s string) (any, error) {
	if s == "" {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("parseJSON: %w", err)
	}
	return v, nil
}

func parseYAML(s string) (any, error) {
	if s == "" {
		return map[string]any{}, nil
	}
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("parseYAML: %w", err)
	}
	return v, nil
}

func toYAML(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toYAML: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// toJSON encodes v as JSON, indented or not, HTML-escaped or not.
func toJSON(pretty, escape bool) func(any) (string, error) {
	return func(v any) (string, error) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(escape)
		if pretty {
			enc.SetIndent("", "  ")
		}
		if err := enc.Encode(v); err != nil {
			return "", fmt.Errorf("toJSON: %w", err)
		}
		return strings.TrimSpace(buf.String()), nil
	}
}

func regexReplaceAll(re, repl, s string) (string, error) {
	r, err := regexp.Compile(re)
	if err != nil {
		return "", fmt.Errorf("regexReplaceAll: %w", err)
	}
	return r.ReplaceAllString(s, repl), nil
}

func regexMatch(re, s string) (bool, error) {
	r, err := regexp.Compile(re)
	if err != nil {
		return false, fmt.Errorf("regexMatch: %w", err)
	}
	return r.MatchString(s), nil
}

// contains reports whether list l holds v.
func contains(v, l any) (bool, error) { return in(l, v) }

// in reports whether l (a list, or a string) holds v (an element, or a
// substring).
func in(l, v any) (bool, error) {
	lv := reflect.ValueOf(l)
	switch lv.Kind() {
	case reflect.String:
		s, ok := v.(string)
		return ok && strings.Contains(lv.String(), s), nil
	case reflect.Slice, reflect.Array:
		for i := 0; i < lv.Len(); i++ {
			if equalValues(lv.Index(i).Interface(), v) {
				return true, nil
			}
		}
		return false, nil
	}
	return false, fmt.Errorf("in: cannot search a %T", l)
}

// equalValues compares two template values, numbers by value whatever
// their Go type.
func equalValues(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	}
	return 0, false
}

// containsSome builds containsAll (all of vs in l), containsAny,
// containsNone and containsNotAll, as consul-template.
func containsSome(retTrue, invert bool) func([]any, any) (bool, error) {
	return func(vs []any, l any) (bool, error) {
		for _, v := range vs {
			ok, err := in(l, v)
			if err != nil {
				return false, err
			}
			if ok != retTrue {
				return !retTrue != invert, nil
			}
		}
		return retTrue != invert, nil
	}
}

// indent prefixes every line of s with n spaces.
func indent(n int, s string) (string, error) {
	if n < 0 {
		return "", fmt.Errorf("indent: %d is negative", n)
	}
	pad := strings.Repeat(" ", n)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = pad + l
	}
	return strings.Join(lines, "\n"), nil
}

// loop returns the integers [0, a) or [a, b), for range.
func loop(args ...any) ([]int64, error) {
	var start, stop int64
	toInt := func(v any) (int64, error) {
		f, ok := number(v)
		if !ok {
			if s, isStr := v.(string); isStr {
				return strconv.ParseInt(s, 10, 64)
			}
			return 0, fmt.Errorf("loop: %v is not a number", v)
		}
		return int64(f), nil
	}
	var err error
	switch len(args) {
	case 1:
		stop, err = toInt(args[0])
	case 2:
		if start, err = toInt(args[0]); err == nil {
			stop, err = toInt(args[1])
		}
	default:
		return nil, fmt.Errorf("loop: takes 1 or 2 arguments, got %d", len(args))
	}
	if err != nil {
		return nil, err
	}
	out := []int64{}
	for i := start; i < stop; i++ {
		out = append(out, i)
	}
	return out, nil
}

// explodeMap turns a map with "a/b/c" keys into nested maps.
func explodeMap(in map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range in {
		parts := strings.Split(strings.Trim(k, "/"), "/")
		cur := out
		for i, p := range parts {
			if i == len(parts)-1 {
				cur[p] = v
				break
			}
			next, ok := cur[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
	}
	return out, nil
}

// mergeMap merges src into a copy of dst, recursively for nested maps;
// with override, src's values win.
func mergeMap(override bool) func(dst, src map[string]any) map[string]any {
	var merge func(dst, src map[string]any) map[string]any
	merge = func(dst, src map[string]any) map[string]any {
		out := maps.Clone(dst)
		if out == nil {
			out = map[string]any{}
		}
		for k, sv := range src {
			dv, ok := out[k]
			dm, dIsMap := dv.(map[string]any)
			sm, sIsMap := sv.(map[string]any)
			switch {
			case !ok:
				out[k] = sv
			case dIsMap && sIsMap:
				out[k] = merge(dm, sm)
			case override:
				out[k] = sv
			}
		}
		return out
	}
	return merge
}

// arith applies a consul-template math function: integers stay integers,
// anything with a float is a float. As in consul-template, the piped value
// comes last and is the left operand: {{ 5 | subtract 2 }} is 3.
func arith(op string) func(b, a any) (any, error) {
	return func(b, a any) (any, error) {
		fa, aok := number(a)
		fb, bok := number(b)
		if !aok || !bok {
			return nil, fmt.Errorf("%s: %v and %v must be numbers", op, a, b)
		}
		ints := isInt(a) && isInt(b)
		var r float64
		switch op {
		case "add":
			r = fa + fb
		case "subtract":
			r = fa - fb
		case "multiply":
			r = fa * fb
		case "divide":
			if fb == 0 {
				return nil, fmt.Errorf("divide: division by 0")
			}
			if ints {
				return int64(fa) / int64(fb), nil
			}
			r = fa / fb
		case "modulo":
			if !ints {
				return nil, fmt.Errorf("modulo: %v and %v must be integers", a, b)
			}
			if int64(fb) == 0 {
				return nil, fmt.Errorf("modulo: division by 0")
			}
			return int64(fa) % int64(fb), nil
		case "minimum":
			r = min(fa, fb)
		case "maximum":
			r = max(fa, fb)
		}
		if ints {
			return int64(r), nil
		}
		return r, nil
	}
}

func isInt(v any) bool {
	switch reflect.ValueOf(v).Kind() {
	case reflect.Float32, reflect.Float64:
		return false
	}
	return true
}

// byTag groups service instances by tag, tags sorted.
func byTag(services []*ServiceInstance) map[string][]*ServiceInstance {
	out := map[string][]*ServiceInstance{}
	for _, s := range services {
		for _, t := range s.Tags {
			out[t] = append(out[t], s)
		}
	}
	return out
}

// byMeta groups service instances by the value of a meta key ("key" or
// "key|int" to group numerically, as consul-template).
func byMeta(key string, services []*ServiceInstance) map[string][]*ServiceInstance {
	k, _, _ := strings.Cut(key, "|")
	out := map[string][]*ServiceInstance{}
	for _, s := range services {
		out[s.Meta[k]] = append(out[s.Meta[k]], s)
	}
	for _, list := range out {
		sort.SliceStable(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	}
	return out
}

// now is the clock of timestamp; tests replace it.
var now = time.Now
