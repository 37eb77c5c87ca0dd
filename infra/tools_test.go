package infra_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/go-version"
)

// requireTool finds a command; without it the test is skipped with one
// line saying how to get it, or fails when DROVER_REQUIRE_TOOLS=1 (as
// .ci/run sets it).
func requireTool(t *testing.T, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	missing(t, fmt.Sprintf("%s not found (%s)", name, install))
	return ""
}

func missing(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("DROVER_REQUIRE_TOOLS") == "1" {
		t.Fatalf("%s; DROVER_REQUIRE_TOOLS=1 requires it", msg)
	}
	t.Skip(msg)
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// providerMirror is a filesystem mirror holding hashicorp/aws for this
// platform.
type providerMirror struct {
	dir      string // the mirror (holds registry.terraform.io/...)
	version  string
	unpacked string // the unpacked provider directory, if it is one
}

// findAWSProvider looks for hashicorp/aws in the places Terraform reads
// filesystem mirrors from: DROVER_TF_PROVIDER_MIRROR, the mirrors named in
// the CLI configuration, the implied local mirror directories, and
// /opt/tf-plugins. Highest 5.x version wins.
func findAWSProvider(t *testing.T) *providerMirror {
	t.Helper()
	home, _ := os.UserHomeDir()
	var dirs []string
	if d := os.Getenv("DROVER_TF_PROVIDER_MIRROR"); d != "" {
		dirs = append(dirs, d)
	}
	for _, cfg := range []string{os.Getenv("TF_CLI_CONFIG_FILE"), filepath.Join(home, ".terraformrc")} {
		if data, err := os.ReadFile(cfg); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "path" {
					dirs = append(dirs, strings.Trim(strings.TrimSpace(v), `"`))
				}
			}
		}
	}
	xdg := os.Getenv("XDG_DATA_HOME")
	if xdg == "" {
		xdg = filepath.Join(home, ".local", "share")
	}
	dirs = append(dirs, filepath.Join(home, ".terraform.d", "plugins"), filepath.Join(xdg, "terraform", "plugins"),
		"/usr/local/share/terraform/plugins", "/usr/share/terraform/plugins", "/opt/tf-plugins")
	platform := runtime.GOOS + "_" + runtime.GOARCH
	var best *providerMirror
	var bestV *version.Version
	consider := func(dir, v, unpacked string) {
		pv, err := version.NewVersion(v)
		if err != nil || pv.Segments()[0] != 5 {
			return
		}
		if bestV == nil || pv.GreaterThan(bestV) {
			best, bestV = &providerMirror{dir: dir, version: v, unpacked: unpacked}, pv
		}
	}
	for _, dir := range dirs {
		base := filepath.Join(dir, "registry.terraform.io", "hashicorp", "aws")
		unpacked, _ := filepath.Glob(filepath.Join(base, "*", platform, "terraform-provider-aws_*"))
		for _, p := range unpacked {
			consider(dir, filepath.Base(filepath.Dir(filepath.Dir(p))), filepath.Dir(p))
		}
		packed, _ := filepath.Glob(filepath.Join(base, "terraform-provider-aws_*_"+platform+".zip"))
		for _, p := range packed {
			consider(dir, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "terraform-provider-aws_"), "_"+platform+".zip"), "")
		}
	}
	if best == nil {
		missing(t, fmt.Sprintf("no filesystem mirror of hashicorp/aws 5.x for %s (looked in %s; set DROVER_TF_PROVIDER_MIRROR)", platform, strings.Join(dirs, ", ")))
	}
	return best
}

// TestTerraform: infra/ is formatted as terraform fmt wants, initializes
// with the aws provider alone, validates without errors or warnings, and
// its plans against a mock provider (tests/plan.tftest.hcl) pass: the
// longest name fits every limit, bad inputs are refused by name, the
// evaluate function's concurrency is capped on its event source mapping.
// It runs in a copy of the module with its own CLI configuration (the
// mirror it finds, nothing downloaded) and its own plugin cache, which
// links an unpacked mirror's provider instead of copying its 700 MB.
func TestTerraform(t *testing.T) {
	tf := requireTool(t, "terraform", "install Terraform >= 1.7")
	mirror := findAWSProvider(t)
	tmp := t.TempDir()
	mod, cache, build := filepath.Join(tmp, "infra"), filepath.Join(tmp, "plugin-cache"), filepath.Join(tmp, "build")
	for _, d := range []string{filepath.Join(mod, "tests"), build} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob("*.tf")
	tests, _ := filepath.Glob(filepath.Join("tests", "*.tftest.hcl"))
	if len(tests) == 0 {
		t.Fatal("no tests/*.tftest.hcl")
	}
	for _, f := range append(files, tests...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mod, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The plan reads the zips' hashes: any content will do.
	for _, fn := range []string{"api", "evaluate", "sweeper", "authorizer"} {
		if err := os.WriteFile(filepath.Join(build, fn+".zip"), []byte(fn), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if mirror.unpacked != "" {
		entry := filepath.Join(cache, "registry.terraform.io", "hashicorp", "aws", mirror.version)
		if err := os.MkdirAll(entry, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(mirror.unpacked, filepath.Join(entry, filepath.Base(mirror.unpacked))); err != nil {
			t.Fatal(err)
		}
	}
	cli := filepath.Join(tmp, "terraform.rc")
	config := fmt.Sprintf(`plugin_cache_dir = %q
provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["registry.terraform.io/hashicorp/aws"]
  }
  direct {
    exclude = ["*/*/*"]
  }
}
`, cache, mirror.dir)
	if err := os.WriteFile(cli, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"TF_CLI_CONFIG_FILE=" + cli, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_INPUT=0", "TF_DATA_DIR=" + filepath.Join(mod, ".terraform")}

	fmtCmd := exec.Command(tf, "fmt", "-check", "-diff", "-recursive", mod)
	fmtCmd.Env = append(os.Environ(), env...)
	if out, err := fmtCmd.CombinedOutput(); err != nil {
		t.Errorf("terraform fmt -check: %v\n%s", err, out)
	}
	run(t, mod, env, tf, "init", "-backend=false", "-no-color")
	var validate struct {
		Valid        bool `json:"valid"`
		ErrorCount   int  `json:"error_count"`
		WarningCount int  `json:"warning_count"`
		Diagnostics  []struct {
			Severity, Summary, Detail string
		} `json:"diagnostics"`
	}
	cmd := exec.Command(tf, "validate", "-json", "-no-color")
	cmd.Dir, cmd.Env = mod, append(os.Environ(), env...)
	out, _ := cmd.Output()
	if err := json.Unmarshal(out, &validate); err != nil {
		t.Fatalf("terraform validate -json: %v\n%s", err, out)
	}
	if !validate.Valid || validate.ErrorCount+validate.WarningCount > 0 {
		t.Errorf("terraform validate: valid=%v, %d errors, %d warnings: %+v", validate.Valid, validate.ErrorCount, validate.WarningCount, validate.Diagnostics)
	}
	run(t, mod, env, tf, "test", "-no-color", "-var", "build_dir="+build)
}

// samTransform is what CloudFormation does with template.yaml after `sam
// deploy` has uploaded the artifacts: the SAM transform (AWS's samtranslator),
// with each local CodeUri replaced by the S3 location sam package gives it.
const samTransform = `
import json, os, sys
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

class NoManagedPolicies:
    def load(self):
        return {}

with open(sys.argv[1]) as f:
    template = yaml_parse(f.read())
for name, r in template["Resources"].items():
    p = r.get("Properties", {})
    if r["Type"] == "AWS::Serverless::Function" and not str(p.get("CodeUri", "")).startswith("s3://"):
        p["CodeUri"] = "s3://drover-artifacts/%s.zip" % name
json.dump(transform(template, {}, NoManagedPolicies()), sys.stdout)
`

// TestSAMTransform: the SAM transform accepts template.yaml, and the
// CloudFormation it produces is what drover needs: no role made by SAM
// (each function runs as its own role of the template), each function
// logging to its own log group with the retention parameter, no reserved
// concurrency, the evaluate function's SQS mapping capped at 20 concurrent
// batches with partial batch responses, node-agent routes on IAM and user
// routes on the X-Nomad-Token authorizer, the sweeper every minute.
func TestSAMTransform(t *testing.T) {
	py := requireTool(t, "python3", "install Python 3")
	if err := exec.Command(py, "-c", "import samtranslator").Run(); err != nil {
		missing(t, "the samtranslator Python package is not installed (pip install aws-sam-translator)")
	}
	tpl, _ := filepath.Abs(filepath.Join("..", "template.yaml"))
	out := run(t, ".", nil, py, "-c", samTransform, tpl)
	var cf struct {
		Resources map[string]struct {
			Type           string
			Properties     map[string]any
			DeletionPolicy string
		}
	}
	if err := json.Unmarshal([]byte(out), &cf); err != nil {
		t.Fatalf("transform output: %v\n%s", err, out)
	}
	byType := map[string][]string{}
	for name, r := range cf.Resources {
		byType[r.Type] = append(byType[r.Type], name)
	}
	for _, l := range byType {
		sort.Strings(l)
	}
	tplRoles := sortedKeys(loadTemplate(t).ofType("AWS::IAM::Role"))
	if got := byType["AWS::IAM::Role"]; !equalStrings(got, tplRoles) {
		t.Errorf("roles after the transform %v, the template's %v (SAM must make none)", got, tplRoles)
	}
	fns := byType["AWS::Lambda::Function"]
	if len(fns) != 4 {
		t.Fatalf("functions after the transform: %v", fns)
	}
	for _, name := range fns {
		p := cf.Resources[name].Properties
		base := strings.TrimSuffix(name, "Function")
		if got := canonical(p["Role"]); got != canonical(map[string]any{"Fn::GetAtt": []any{base + "Role", "Arn"}}) {
			t.Errorf("%s: role %s, want its own %sRole", name, got, base)
		}
		lc, _ := p["LoggingConfig"].(map[string]any)
		lg := cf.Resources[base+"LogGroup"]
		if canonical(lc["LogGroup"]) != canonical(map[string]any{"Ref": base + "LogGroup"}) || lg.Type != "AWS::Logs::LogGroup" ||
			canonical(lg.Properties["RetentionInDays"]) != canonical(map[string]any{"Ref": "LogRetentionInDays"}) {
			t.Errorf("%s: logging %v to %+v; want its own log group with the LogRetentionInDays retention", name, lc, lg)
		}
		if _, ok := p["ReservedConcurrentExecutions"]; ok {
			t.Errorf("%s reserves concurrency", name)
		}
		if p["Runtime"] != "provided.al2023" || canonical(p["Architectures"]) != `["arm64"]` || p["Handler"] != "bootstrap" {
			t.Errorf("%s: %v %v %v", name, p["Runtime"], p["Architectures"], p["Handler"])
		}
	}
	esms := byType["AWS::Lambda::EventSourceMapping"]
	if len(esms) != 1 {
		t.Fatalf("event source mappings: %v", esms)
	}
	esm := cf.Resources[esms[0]].Properties
	if canonical(esm["FunctionName"]) != canonical(map[string]any{"Ref": "EvaluateFunction"}) ||
		canonical(esm["EventSourceArn"]) != canonical(map[string]any{"Fn::GetAtt": []any{"EvalQueue", "Arn"}}) ||
		canonical(esm["ScalingConfig"]) != `{"MaximumConcurrency":"20"}` || canonical(esm["FunctionResponseTypes"]) != `["ReportBatchItemFailures"]` ||
		fmt.Sprint(esm["BatchSize"]) != "5" {
		t.Errorf("evaluate's mapping: %v", esm)
	}
	rules := byType["AWS::Events::Rule"]
	if len(rules) != 1 || cf.Resources[rules[0]].Properties["ScheduleExpression"] != "rate(1 minute)" {
		t.Errorf("sweeper schedule: %v", rules)
	}
	apis := byType["AWS::ApiGatewayV2::Api"]
	if len(apis) != 1 {
		t.Fatalf("HTTP APIs: %v", apis)
	}
	paths, _ := cf.Resources[apis[0]].Properties["Body"].(map[string]any)["paths"].(map[string]any)
	security := func(path string) string {
		m, _ := paths[path].(map[string]any)
		op, _ := m["x-amazon-apigateway-any-method"].(map[string]any)
		return canonical(op["security"])
	}
	if s := security("/v1/nodeagent/{proxy+}"); s != `[{"AWS_IAM":[]}]` {
		t.Errorf("node-agent routes: security %s, want AWS_IAM", s)
	}
	if s := security("/{proxy+}"); s != `[{"NomadToken":[]}]` {
		t.Errorf("user routes: security %s, want the NomadToken authorizer", s)
	}
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, ",") == strings.Join(b, ",")
}

// TestSAMBuildTargets: every function of template.yaml is built by `sam
// build` with the Makefile (Metadata BuildMethod: makefile; for
// provided.al2023 SAM has no builder of its own), and the Makefile's
// build-<LogicalId> target writes that function's bootstrap into
// $(ARTIFACTS_DIR) for the template's architecture.
func TestSAMBuildTargets(t *testing.T) {
	mk := requireTool(t, "make", "install GNU make")
	c := loadTemplate(t)
	arch := fmt.Sprint(c.globalFunction()["Architectures"].([]any)[0])
	goarch := map[string]string{"arm64": "arm64", "x86_64": "amd64"}[arch]
	for name, r := range c.ofType("AWS::Serverless::Function") {
		md, _ := r["Metadata"].(map[string]any)
		if md["BuildMethod"] != "makefile" {
			t.Errorf("%s: Metadata BuildMethod %v; sam build needs makefile for provided.al2023", name, md["BuildMethod"])
			continue
		}
		if cu := props(r)["CodeUri"]; cu != "." {
			t.Errorf("%s: CodeUri %v, want . (the directory holding the Makefile)", name, cu)
		}
		out := run(t, "..", nil, mk, "-n", "build-"+name, "ARTIFACTS_DIR=/artifacts/"+name)
		for _, want := range []string{"GOOS=linux", "GOARCH=" + goarch, "CGO_ENABLED=0", "-o /artifacts/" + name + "/bootstrap",
			"./functions/" + norm(name)} {
			if !strings.Contains(out, want) {
				t.Errorf("make build-%s runs %q: lacks %q", name, strings.TrimSpace(out), want)
			}
		}
	}
}

// TestLambdaZipFailureShown: when zipping a bootstrap fails, `make lambda`
// fails with the zip tool's own error and names the bootstrap, instead of
// only make's "Error 1". It runs the Makefile in a scratch directory with a
// stand-in go command whose build writes a file and whose run fails.
func TestLambdaZipFailureShown(t *testing.T) {
	mk := requireTool(t, "make", "install GNU make")
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	fakeGo := filepath.Join(dir, "fake-go")
	script := `#!/bin/sh
case "$1" in
build) while [ $# -gt 0 ]; do if [ "$1" = -o ]; then mkdir -p "$(dirname "$2")"; echo bin > "$2"; fi; shift; done ;;
run) echo "build-lambda-zip: no space left on device" >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fakeGo, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mk, "lambda", "GO="+fakeGo, "LAMBDAS=api")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("make lambda succeeded though the zip failed:\n%s", out)
	}
	for _, want := range []string{"build-lambda-zip: no space left on device", "zipping build/api/bootstrap failed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("make lambda's output lacks %q:\n%s", want, out)
		}
	}
}

// TestChaosTargetsRefuseNonNumbers: make chaos* refuses a count that is
// not a whole number, naming the variable, before go test runs (which
// answered with its whole usage); GO=false stands in for go, so a run
// that got that far fails without the message.
func TestChaosTargetsRefuseNonNumbers(t *testing.T) {
	mk := requireTool(t, "make", "install GNU make")
	for _, tc := range []struct{ target, arg, want string }{
		{"chaos", "SEEDS=abc", "make: SEEDS=abc: a whole number is wanted"},
		{"chaos", "FIRST=-3", "make: FIRST=-3: a whole number is wanted"},
		{"chaos-aws", "STEPS=1x", "make: STEPS=1x: a whole number is wanted"},
		{"chaos-proc", "PARALLEL=two", "make: PARALLEL=two: a whole number is wanted"},
		{"chaos", "SEED=abc", "make: SEED=abc: a whole number is wanted"},
		{"chaos-proc", "PARALLEL=0", "make: PARALLEL=0: at least 1"},
	} {
		cmd := exec.Command(mk, "-s", tc.target, tc.arg, "GO=false")
		cmd.Dir = ".."
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("make %s %s: %v\n%s", tc.target, tc.arg, err, out)
		}
	}
}
