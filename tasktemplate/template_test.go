package tasktemplate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func render(t *testing.T, text string, ctx *Context) string {
	t.Helper()
	tt, err := New("t", text, "", "", false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tt.Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestFunctions: the helpers Nomad templates use without Consul or Vault
// render as consul-template's do.
func TestFunctions(t *testing.T) {
	now = func() time.Time { return time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC) }
	t.Cleanup(func() { now = time.Now })
	ctx := &Context{Env: map[string]string{"NOMAD_ALLOC_INDEX": "2", "LIST": "a,b,c", "J": `{"k":["x","y"]}`}}
	cases := []struct{ in, want string }{
		{`{{ env "NOMAD_ALLOC_INDEX" }}`, "2"},
		{`{{ env "HOME" }}|{{ envOrDefault "NOPE" "d" }}`, "|d"}, // the agent's own environment is not visible
		{`{{ timestamp }} {{ timestamp "unix" }} {{ timestamp "2006" }}`, "2024-05-06T07:08:09Z 1714979289 2024"},
		{`{{ range split "," (env "LIST") }}[{{ . }}]{{ end }}`, "[a][b][c]"},
		{`{{ split "," (env "LIST") | join "-" }}`, "a-b-c"},
		{`{{ (env "J" | parseJSON).k | toJSON }}`, `["x","y"]`},
		{`{{ "Hello" | toLower }} {{ "Hello" | toUpper }} {{ "hello world" | toTitle }}`, "hello HELLO Hello World"},
		{`{{ "a.b.c" | replaceAll "." "/" }}`, "a/b/c"},
		{`{{ "drover" | base64Encode }} {{ "ZHJvdmVy" | base64Decode }}`, "ZHJvdmVy drover"},
		{`{{ 5 | subtract 2 }} {{ 2 | add 3 }} {{ 7 | modulo 4 }} {{ 1.5 | multiply 2 }}`, "3 5 3 3"},
		{`{{ range loop 3 }}{{ . }}{{ end }}`, "012"},
		{`{{ sprig_upper "x" }} {{ sprig_list 1 2 | len }}`, "X 2"},
		{`{{ "a:1,b:2" | splitToMap "," ":" | toJSON }}`, `{"a":"1","b":"2"}`},
		{`{{ if (split "," "a,b" | contains "b") }}yes{{ end }}`, "yes"},
		{`{{ define "x" }}[{{ . }}]{{ end }}{{ executeTemplate "x" "y" }}`, "[y]"},
		{`{{ with scratch }}{{ .Set "k" "v" }}{{ .Get "k" }}{{ end }}`, "v"},
		{`{{ "x" | sha256Hex }}`, "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"},
	}
	for _, c := range cases {
		if got := render(t, c.in, ctx); got != c.want {
			t.Errorf("%s = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCheckRefusesConsulVault: every Consul, Vault and Nomad-variable
// function is refused by name, wherever it sits in the template; an
// unknown function is a parse error.
func TestCheckRefusesConsulVault(t *testing.T) {
	for in, fn := range map[string]string{
		`{{ key "a/b" }}`:                                         "key",
		`{{ keyOrDefault "a" "b" }}`:                              "keyOrDefault",
		`{{ range ls "a" }}{{ end }}`:                             "ls",
		`{{ range tree "a" }}{{ end }}`:                           "tree",
		`{{ if true }}{{ range service "db" }}{{ end }}{{ end }}`: "service",
		`{{ with secret "kv/x" }}{{ .Data }}{{ end }}`:            "secret",
		`{{ secrets "kv/" }}`:                                     "secrets",
		`{{ pkiCert "pki/issue/x" }}`:                             "pkiCert",
		`{{ nomadVar "x" }}`:                                      "nomadVar",
		`{{ define "t" }}{{ services }}{{ end }}`:                 "services",
		`{{ writeToFile "a" "" "" "0644" "x" }}`:                  "writeToFile",
	} {
		err := Check(in, "", "")
		var rf *RefusedFuncError
		if !errors.As(err, &rf) || rf.Func != fn {
			t.Errorf("Check(%s) = %v, want refusal of %q", in, err, fn)
		}
	}
	if err := Check(`{{ nosuch "x" }}`, "", ""); err == nil || !strings.Contains(err.Error(), `"nosuch" not defined`) {
		t.Errorf("unknown function: %v", err)
	}
	if err := Check(`[[ env "X" ]] {{ key }}`, "[[", "]]"); err != nil {
		t.Errorf("custom delimiters: {{ key }} is text, not a call: %v", err)
	}
	if err := Check(`{{ env "X" | toUpper }}`, "", ""); err != nil {
		t.Errorf("allowed template refused: %v", err)
	}
}

// TestMissingKey: error_on_missing_key turns a missing map key into an
// error.
func TestMissingKey(t *testing.T) {
	text := `{{ $m := parseJSON "{}" }}{{ $m.nope }}`
	tt, _ := New("t", text, "", "", false)
	if out, err := tt.Render(&Context{}); err != nil || string(out) != "<no value>" {
		t.Fatalf("default: %q %v", out, err)
	}
	tt, _ = New("t", text, "", "", true)
	if _, err := tt.Render(&Context{}); err == nil {
		t.Fatal("error_on_missing_key: no error")
	}
}

// TestFileSandbox: file reads inside the task's directories only, also
// through symlinks.
func TestFileSandbox(t *testing.T) {
	root := t.TempDir()
	task, alloc, outside := filepath.Join(root, "task"), filepath.Join(root, "alloc"), filepath.Join(root, "outside")
	for _, d := range []string{task, alloc, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(task, "in.txt"), []byte("inside"), 0o644)
	os.WriteFile(filepath.Join(alloc, "shared.txt"), []byte("shared"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(task, "link"))
	ctx := &Context{Sandbox: []string{task, alloc}}
	if got := render(t, `{{ file "in.txt" }} {{ file "../alloc/shared.txt" }}`, ctx); got != "inside shared" {
		t.Fatalf("got %q", got)
	}
	for _, p := range []string{"../outside/secret", filepath.Join(outside, "secret"), "link"} {
		tt, _ := New("t", `{{ file "`+p+`" }}`, "", "", false)
		if _, err := tt.Render(ctx); !errors.Is(err, ErrEscapesSandbox) {
			t.Errorf("file %s: %v, want escape", p, err)
		}
	}
}

type fakeLookup struct{ got []string }

func (f *fakeLookup) Service(ns, name string, tags []string) ([]*ServiceInstance, error) {
	f.got = append(f.got, ns+"/"+name+"/"+strings.Join(tags, ","))
	return []*ServiceInstance{{ID: "a", ServiceName: name, Address: "10.0.0.1", Port: 8080}}, nil
}

func (f *fakeLookup) Services(ns string) ([]*ServiceSummary, error) {
	return []*ServiceSummary{{Name: "db", Tags: []string{"x"}}}, nil
}

// TestServiceLookupPluggable: nomadService and nomadServices ask the
// context's lookup (the registry's, once drover has one); without one
// they fail.
func TestServiceLookupPluggable(t *testing.T) {
	f := &fakeLookup{}
	ctx := &Context{Namespace: "prod", Services: f}
	got := render(t, `{{ range nomadService "v1.api" }}{{ .Address }}:{{ .Port }}{{ end }} {{ range nomadServices }}{{ .Name }}{{ end }}`, ctx)
	if got != "10.0.0.1:8080 db" || f.got[0] != "prod/api/v1" {
		t.Fatalf("got %q, lookups %v", got, f.got)
	}
	tt, _ := New("t", `{{ nomadService "api" }}`, "", "", false)
	if _, err := tt.Render(&Context{}); err == nil {
		t.Fatal("no lookup: no error")
	}
}
