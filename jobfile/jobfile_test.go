package jobfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func parseFile(t *testing.T, path string, cfg Config) (*api.Job, error) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Path, cfg.Source = path, src
	return Parse(cfg)
}

func parseString(src string, cfg Config) (*api.Job, error) {
	if cfg.Path == "" {
		cfg.Path = "job.nomad.hcl"
	}
	cfg.Source = []byte(src)
	return Parse(cfg)
}

// TestRealisticJob: a job with variables, locals, functions, meta and env
// blocks, constraints (with a shorthand), durations, a free-form driver
// config with a nested block, and run-time references left for the node.
func TestRealisticJob(t *testing.T) {
	job, err := parseFile(t, "testdata/web.nomad.hcl", Config{})
	if err != nil {
		t.Fatal(err)
	}
	if *job.ID != "web" || *job.Name != "web" || *job.Type != "service" || strings.Join(job.Datacenters, ",") != "dc1" {
		t.Fatalf("job header: %+v", job)
	}
	if job.Meta["owner"] != "team" || job.Meta["n"] != "3" {
		t.Fatalf("meta (numbers become strings, as Nomad): %v", job.Meta)
	}
	if len(job.Constraints) != 2 || job.Constraints[0].LTarget != "${attr.kernel.name}" || job.Constraints[0].Operand != "=" ||
		job.Constraints[0].RTarget != "linux" || job.Constraints[1].Operand != "distinct_hosts" {
		t.Fatalf("constraints: %+v %+v", job.Constraints[0], job.Constraints[1])
	}
	if *job.Update.MaxParallel != 1 || *job.Update.MinHealthyTime != time.Second {
		t.Fatalf("update: %+v", job.Update)
	}
	tg := job.TaskGroups[0]
	if *tg.Name != "web" || *tg.Count != 2 || *tg.RestartPolicy.Attempts != 2 || *tg.RestartPolicy.Delay != 5*time.Second {
		t.Fatalf("group: %+v %+v", tg, tg.RestartPolicy)
	}
	task := tg.Tasks[0]
	if task.Name != "server" || task.Driver != "raw_exec" || *task.Resources.CPU != 100 || *task.Resources.MemoryMB != 64 ||
		*task.KillTimeout != 3*time.Second {
		t.Fatalf("task: %+v", task)
	}
	args := task.Config["args"].([]any)
	if args[1] != "echo WEB-HELLO on ${node.unique.name} $NOMAD_ALLOC_ID; sleep 300" {
		t.Fatalf("args (locals, upper(), run-time references): %q", args[1])
	}
	if pm := task.Config["port_map"].([]any)[0].(map[string]any); pm["http"] != float64(80) {
		t.Fatalf("nested config block: %#v", task.Config["port_map"])
	}
	if task.Env["GREETING"] != "hello" || task.Env["ALLOC"] != "${NOMAD_ALLOC_INDEX}" {
		t.Fatalf("env: %v", task.Env)
	}
	// What Nomad's Canonicalize fills in applies on top.
	job.Canonicalize()
	if *job.Priority != 50 || *job.TaskGroups[0].Update.MaxParallel != 1 {
		t.Fatalf("canonicalized: priority %d", *job.Priority)
	}
}

// TestVariablePrecedence: default < NOMAD_VAR_ < each -var-file in order
// < VarContent < -var.
func TestVariablePrecedence(t *testing.T) {
	count := func(cfg Config) int {
		t.Helper()
		job, err := parseFile(t, "testdata/web.nomad.hcl", cfg)
		if err != nil {
			t.Fatal(err)
		}
		return *job.TaskGroups[0].Count
	}
	greeting := func(cfg Config) string {
		t.Helper()
		job, err := parseFile(t, "testdata/web.nomad.hcl", cfg)
		if err != nil {
			t.Fatal(err)
		}
		return job.TaskGroups[0].Tasks[0].Env["GREETING"]
	}
	env := []string{"NOMAD_VAR_count=7", "NOMAD_VAR_undeclared=x", "PATH=/bin"}
	cases := []struct {
		name string
		cfg  Config
		want int
	}{
		{"default", Config{}, 2},
		{"environment", Config{Envs: env}, 7},
		{"var file over environment", Config{Envs: env, VarFiles: []string{"testdata/web.vars.hcl"}}, 4},
		{"later var file wins", Config{VarFiles: []string{"testdata/web.vars.hcl", "testdata/later.vars.hcl"}}, 5},
		{"variables text over files", Config{VarFiles: []string{"testdata/later.vars.hcl"}, VarContent: "count = 6"}, 6},
		{"-var over everything", Config{Envs: env, VarFiles: []string{"testdata/later.vars.hcl"}, VarContent: "count = 6", ArgVars: []string{"count=8"}}, 8},
	}
	for _, c := range cases {
		if got := count(c.cfg); got != c.want {
			t.Errorf("%s: count %d, want %d", c.name, got, c.want)
		}
	}
	if g := greeting(Config{VarFiles: []string{"testdata/web.vars.hcl"}}); g != "from-file" {
		t.Errorf("greeting from the var file: %q", g)
	}
	if g := greeting(Config{VarFiles: []string{"testdata/web.vars.hcl"}, ArgVars: []string{"greeting=a=b"}}); g != "a=b" {
		t.Errorf("-var value with '=': %q", g)
	}
}

func TestFunctions(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "motd.txt"), []byte("hi there\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := `
job "f" {
  meta {
    fmt     = format("%s-%03d", "web", 7)
    json    = jsonencode({a = 1})
    merged  = join(",", keys(merge({a = 1}, {b = 2})))
    subnet  = cidrsubnet("10.0.0.0/16", 8, 2)
    trimmed = trimspace(file("motd.txt"))
    tried   = try(tonumber("x"), "fallback")
    yaml    = yamlencode(["x"])
    sha     = substr(sha256("drover"), 0, 8)
  }
}`
	job, err := parseString(src, Config{Path: filepath.Join(dir, "f.nomad.hcl"), AllowFS: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"fmt": "web-007", "json": `{"a":1}`, "merged": "a,b", "subnet": "10.0.2.0/24",
		"trimmed": "hi there", "tried": "fallback", "yaml": "- \"x\"\n"}
	for k, v := range want {
		if job.Meta[k] != v {
			t.Errorf("meta.%s = %q, want %q", k, job.Meta[k], v)
		}
	}
	if len(job.Meta["sha"]) != 8 {
		t.Errorf("sha256: %q", job.Meta["sha"])
	}
	// Without AllowFS (the server) the file functions fail.
	_, err = parseString(src, Config{Path: filepath.Join(dir, "f.nomad.hcl")})
	if err == nil || !strings.Contains(err.Error(), "file functions are disabled") {
		t.Fatalf("file() without AllowFS: %v", err)
	}
}

// TestBadFiles: each error names the file, line and column, and says
// what is wrong.
func TestBadFiles(t *testing.T) {
	cases := []struct {
		name, src string
		cfg       Config
		wants     []string
	}{
		{"syntax", "job \"x\" {\n  group \"g\" {\n    count = = 2\n  }\n}\n", Config{}, []string{"bad.nomad.hcl:3,13", "Invalid expression"}},
		{"unknown block", "job \"x\" {\n  group \"g\" {\n    tusk \"t\" {}\n  }\n}\n", Config{}, []string{"bad.nomad.hcl:3,5", `Blocks of type "tusk" are not expected here`}},
		{"unknown argument", "job \"x\" {\n  group \"g\" {\n    cuont = 2\n  }\n}\n", Config{}, []string{"bad.nomad.hcl:3,5", `An argument named "cuont" is not expected here`}},
		{"wrong type", "job \"x\" {\n  group \"g\" {\n    count = \"many\"\n  }\n}\n", Config{}, []string{"bad.nomad.hcl:3,13", "number is required"}},
		{"bad duration", "job \"x\" {\n  group \"g\" {\n    restart {\n      delay = \"5 parsecs\"\n    }\n  }\n}\n", Config{}, []string{"bad.nomad.hcl:4,15", "not a duration"}},
		{"duplicate block", "job \"x\" {\n  update {}\n  update {}\n}\n", Config{}, []string{"bad.nomad.hcl:3,3", "Duplicate update block"}},
		{"no job", "variable \"a\" {}\n", Config{ArgVars: []string{"a=1"}}, []string{"bad.nomad.hcl:1,1", "Missing job block"}},
		{"two jobs", "job \"a\" {}\njob \"b\" {}\n", Config{}, []string{"bad.nomad.hcl:2,1", "Duplicate job block"}},
		{"unknown top-level block", "jobs \"a\" {}\n", Config{}, []string{"bad.nomad.hcl:1,1", `Blocks of type "jobs" are not expected here`}},
		{"required variable", "variable \"image\" {\n  type = string\n}\njob \"x\" {}\n", Config{}, []string{"bad.nomad.hcl:1,1", "Missing required variable", `"image"`}},
		{"undeclared -var", "job \"x\" {}\n", Config{ArgVars: []string{"nope=1"}}, []string{"Undefined -var variable", `"nope"`}},
		{"-var without =", "variable \"a\" {\n  default = 1\n}\njob \"x\" {}\n", Config{ArgVars: []string{"a"}}, []string{"Invalid -var option"}},
		{"-var without a name", "variable \"a\" {\n  default = 1\n}\njob \"x\" {}\n", Config{ArgVars: []string{"=3"}}, []string{"Invalid -var option", `"=3" is not name=value`}},
		{"unreadable -var-file", "job \"x\" {}\n", Config{VarFiles: []string{"/nonexistent/v.hcl"}}, []string{"Failed to read variable file", "/nonexistent/v.hcl"}},
		{"-var of the wrong type", "variable \"n\" {\n  type = number\n}\njob \"x\" {}\n", Config{ArgVars: []string{"n=abc"}}, []string{"Invalid value for variable", `"n"`}},
		{"undeclared in var file", "job \"x\" {}\n", Config{VarContent: "\nnope = 1\n"}, []string{"<variables>:2,1", "Undefined variable", `"nope"`}},
		{"validation", "variable \"n\" {\n  default = 0\n  validation {\n    condition = var.n > 0\n    error_message = \"n must be positive\"\n  }\n}\njob \"x\" {}\n", Config{}, []string{"bad.nomad.hcl:4,17", "n must be positive"}},
		{"undefined function", "job \"x\" {\n  type = nofunc(1)\n}\n", Config{}, []string{"bad.nomad.hcl:2,10", "Call to unknown function"}},
		{"local cycle", "locals {\n  a = local.b\n  b = local.a\n}\njob \"x\" {}\n", Config{}, []string{"bad.nomad.hcl:2,7", "Invalid local value"}},
	}
	for _, c := range cases {
		c.cfg.Path = "bad.nomad.hcl"
		_, err := parseString(c.src, c.cfg)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, w := range c.wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q: %v", c.name, w, err)
			}
		}
		// A diagnostic without a place in a file (-var, -var-file) is
		// printed without one, not as "<nil>: ".
		if strings.Contains(err.Error(), "<nil>") {
			t.Errorf("%s: %v", c.name, err)
		}
		var perr *Error
		if !errors.As(err, &perr) || len(perr.Diagnostics) == 0 {
			t.Errorf("%s: not a *jobfile.Error with diagnostics: %T", c.name, err)
		}
	}
}

// TestNomadBlocksDecode: blocks of Nomad's job specification that drover
// does not run (service...) are decoded, not dropped, so the server's
// validation refuses them by name; a port with `static` is a reserved
// port, as Nomad's parser makes it.
func TestNomadBlocksDecode(t *testing.T) {
	src := `
job "x" {
  periodic {
    crons = ["*/5 * * * *"]
  }
  group "g" {
    network {
      port "http" {
        static = 8080
      }
    }
    service {
      name = "web"
      port = "http"
      check {
        type     = "http"
        path     = "/health"
        interval = "10s"
        timeout  = "2s"
      }
    }
    volume "data" {
      type   = "host"
      source = "data"
    }
    task "t" {
      driver = "docker"
      template {
        data        = "x"
        destination = "local/x"
      }
      artifact {
        source = "https://example.com/x.tgz"
      }
    }
  }
}`
	job, err := parseString(src, Config{})
	if err != nil {
		t.Fatal(err)
	}
	tg := job.TaskGroups[0]
	if job.Periodic == nil || len(job.Periodic.Specs) != 1 || len(tg.Networks) != 1 || len(tg.Networks[0].ReservedPorts) != 1 || len(tg.Networks[0].DynamicPorts) != 0 ||
		len(tg.Services) != 1 || len(tg.Services[0].Checks) != 1 || tg.Services[0].Checks[0].Interval != 10*time.Second ||
		tg.Volumes["data"] == nil || tg.Volumes["data"].Source != "data" || len(tg.Tasks[0].Templates) != 1 || len(tg.Tasks[0].Artifacts) != 1 {
		t.Fatalf("Nomad blocks not decoded: %+v", tg)
	}
}

// A network block as Nomad users write it: static ports become reserved
// ports, the others dynamic, `to` kept.
func TestNetworkPortsDecode(t *testing.T) {
	job, err := parseString(`
job "web" {
  group "g" {
    network {
      mode = "host"
      port "http" { to = 8080 }
      port "admin" { static = 9000 }
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}`, Config{})
	if err != nil {
		t.Fatal(err)
	}
	n := job.TaskGroups[0].Networks[0]
	if n.Mode != "host" || len(n.DynamicPorts) != 1 || n.DynamicPorts[0].Label != "http" || n.DynamicPorts[0].To != 8080 ||
		len(n.ReservedPorts) != 1 || n.ReservedPorts[0].Label != "admin" || n.ReservedPorts[0].Value != 9000 {
		t.Fatalf("network %+v", n)
	}
}

// TestPeriodicParameterizedHCL: the periodic, parameterized and
// dispatch_payload blocks in HCL, with Nomad's argument names.
func TestPeriodicParameterizedHCL(t *testing.T) {
	job, err := parseString(`
job "report" {
  type = "batch"
  periodic {
    crons            = ["0 9 * * *"]
    time_zone        = "Europe/Paris"
    prohibit_overlap = true
    enabled          = true
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}`, Config{})
	if err != nil {
		t.Fatal(err)
	}
	p := job.Periodic
	if p == nil || len(p.Specs) != 1 || p.Specs[0] != "0 9 * * *" || *p.TimeZone != "Europe/Paris" || !*p.ProhibitOverlap || !*p.Enabled {
		t.Fatalf("periodic %+v", p)
	}
	job, err = parseString(`
job "proc" {
  type = "batch"
  parameterized {
    payload       = "required"
    meta_required = ["input"]
    meta_optional = ["mode"]
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/cat" }
      dispatch_payload { file = "in.txt" }
    }
  }
}`, Config{})
	if err != nil {
		t.Fatal(err)
	}
	pj := job.ParameterizedJob
	if pj == nil || pj.Payload != "required" || pj.MetaRequired[0] != "input" || pj.MetaOptional[0] != "mode" {
		t.Fatalf("parameterized %+v", pj)
	}
	if d := job.TaskGroups[0].Tasks[0].DispatchPayload; d == nil || d.File != "in.txt" {
		t.Fatalf("dispatch_payload %+v", d)
	}
}
