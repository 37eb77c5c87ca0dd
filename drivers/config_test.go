package drivers

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type testMount struct {
	Type     string `config:"type,required"`
	Target   string `config:"target"`
	ReadOnly bool   `config:"readonly"`
}

type testAuth struct {
	Username string `config:"username"`
}

type testConfig struct {
	Image   string            `config:"image,required"`
	Args    []string          `config:"args"`
	Count   int               `config:"count"`
	Ratio   float64           `config:"ratio"`
	Wait    time.Duration     `config:"wait"`
	Labels  map[string]string `config:"labels"`
	Auth    testAuth          `config:"auth"`
	Mounts  []testMount       `config:"mount"`
	Private bool              `config:"private"`
}

func (c *testConfig) Rules(vc ValidateContext) FieldErrors {
	if c.Count < 0 {
		return FieldErrors{{Field: "count", Rule: "must not be negative"}}
	}
	return nil
}

var testSpec = Spec[testConfig]{Driver: "test"}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSpecDecodesEveryShape(t *testing.T) {
	// Blocks and maps as `nomad job run -output` renders HCL blocks: lists
	// of objects.
	raw := decodeJSON(t, `{"image": "app:1", "args": ["a", "b"], "count": 3, "ratio": 0.5, "wait": "1m30s",
		"labels": [{"team": "core"}, {"tier": "web"}], "auth": [{"username": "u"}],
		"mount": [{"type": "bind", "target": "/data", "readonly": true}, {"type": "tmpfs"}], "private": false}`)
	got, err := testSpec.Decode(raw, ValidateContext{})
	if err != nil {
		t.Fatal(err)
	}
	want := &testConfig{Image: "app:1", Args: []string{"a", "b"}, Count: 3, Ratio: 0.5, Wait: 90 * time.Second,
		Labels: map[string]string{"team": "core", "tier": "web"}, Auth: testAuth{Username: "u"},
		Mounts: []testMount{{Type: "bind", Target: "/data", ReadOnly: true}, {Type: "tmpfs"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v\nwant    %+v", got, want)
	}
	// Objects where HCL would have blocks, durations in nanoseconds.
	got, err = testSpec.Decode(map[string]any{"image": "x", "labels": map[string]any{"a": "b"},
		"auth": map[string]any{"username": "v"}, "mount": map[string]any{"type": "volume"}, "wait": float64(time.Second)}, ValidateContext{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["a"] != "b" || got.Auth.Username != "v" || len(got.Mounts) != 1 || got.Mounts[0].Type != "volume" || got.Wait != time.Second {
		t.Fatalf("decoded %+v", got)
	}
}

func TestSpecNamesFieldAndRule(t *testing.T) {
	cases := []struct {
		name, body, field, rule string
	}{
		{"required", `{}`, "image", "is required by the test driver"},
		{"unknown key", `{"image": "x", "imgae": "y"}`, "imgae", "is not a test option drover supports (options: args, auth, count, image, labels, mount, private, ratio, wait)"},
		{"string", `{"image": 3}`, "image", "must be a string (got number)"},
		{"list of strings", `{"image": "x", "args": "a b"}`, "args", "must be a list of strings (got string)"},
		{"list element", `{"image": "x", "args": ["a", true]}`, "args[1]", "must be a string (got boolean)"},
		{"whole number", `{"image": "x", "count": 1.5}`, "count", "must be a whole number (got 1.5)"},
		{"bool", `{"image": "x", "private": "yes"}`, "private", "must be a boolean (got string)"},
		{"duration", `{"image": "x", "wait": "soon"}`, "wait", `must be a duration such as "10s" or "1m30s" (got "soon")`},
		{"map value", `{"image": "x", "labels": {"a": 1}}`, "labels.a", "must be a string (got number)"},
		{"block unknown key", `{"image": "x", "auth": [{"user": "u"}]}`, "auth[0].user", "is not a test option drover supports (options: username)"},
		{"two single blocks", `{"image": "x", "auth": [{}, {}]}`, "auth", "must be a single block (got 2)"},
		{"repeated block required key", `{"image": "x", "mount": [{"type": "bind"}, {"target": "/t"}]}`, "mount[1].type", "is required by the test driver"},
		{"rules", `{"image": "x", "count": -1}`, "count", "must not be negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := testSpec.Validate(decodeJSON(t, c.body), ValidateContext{})
			for _, e := range errs {
				if e.Field == c.field && e.Rule == c.rule {
					return
				}
			}
			t.Fatalf("errors %v, want %s: %s", errs, c.field, c.rule)
		})
	}
}

func TestSpecKeys(t *testing.T) {
	if got := testSpec.Keys(); strings.Join(got, ",") != "args,auth,count,image,labels,mount,private,ratio,wait" {
		t.Fatalf("Keys() = %v", got)
	}
}

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]string{"": "SIGINT", "TERM": "SIGTERM", "sigusr1": "SIGUSR1", "9": "SIGKILL"} {
		sig, err := ParseSignal(in)
		if err != nil || SignalName(sig) != want {
			t.Errorf("ParseSignal(%q) = %v, %v; want %s", in, sig, err, want)
		}
	}
	if _, err := ParseSignal("SIGNOPE"); err == nil {
		t.Error("unknown signal accepted")
	}
}
