package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/jobfile"
	"github.com/drover-sched/drover/jobspec"
)

// cli runs the drover binary with DROVER_ADDR set and returns its output
// and exit code.
func cli(t *testing.T, addr string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(droverBin, args...)
	cmd.Env = append(os.Environ(), "DROVER_ADDR="+addr)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run drover %v: %v", args, err)
	}
	return out.String(), code
}

func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestExamplesAreValidJobs: every job in examples/ decodes and validates.
func TestExamplesAreValidJobs(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.json")
	hclFiles, _ := filepath.Glob("../examples/*.nomad.hcl")
	if len(files) == 0 || len(hclFiles) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range hclFiles {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		job, err := jobfile.Parse(jobfile.Config{Path: f, Source: src})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if _, err := jobspec.FromAPI(job); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, f := range files {
		b, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jobspec.DecodeRegisterRequest(b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		b.Close()
	}
}

// TestCLI drives the dev agent with drover's own commands, as a user would.
func TestCLI(t *testing.T) {
	dir := t.TempDir()
	data := dir + "/data"
	t.Cleanup(func() { killProcsUnder(data) })
	a := startAgent(t, data, anyPort)
	addr := a.addr

	out, code := cli(t, addr, "job", "run", "../examples/hello.json")
	if code != 0 {
		t.Fatalf("job run: exit %d\n%s", code, out)
	}
	mustContain(t, out, `Monitoring evaluation`, `finished with status "complete"`)
	if n := strings.Count(out, "Allocation "); n != 2 {
		t.Fatalf("job run reported %d allocations:\n%s", n, out)
	}
	waitFor(t, 20*time.Second, "both greeters running", func() bool {
		out, _ := cli(t, addr, "job", "status", "hello")
		return regexp.MustCompile(`greeters\s+0\s+0\s+2\s+0\s+0\s+0\s+0`).MatchString(out)
	})
	out, _ = cli(t, addr, "job", "status")
	mustContain(t, out, "ID", "hello", "service", "running")
	out, _ = cli(t, addr, "job", "status", "hello")
	mustContain(t, out, "Summary", "Allocations", "Status       = running")

	allocID := regexp.MustCompile(`(?m)^([0-9a-f]{8})\s`).FindStringSubmatch(out[strings.Index(out, "Allocations"):])
	if allocID == nil {
		t.Fatalf("no alloc ID in:\n%s", out)
	}
	out, code = cli(t, addr, "alloc", "status", allocID[1])
	if code != 0 {
		t.Fatalf("alloc status: %d\n%s", code, out)
	}
	mustContain(t, out, `Task "greeter" is "running"`, "Started", "Client Status        = running")

	evalID := regexp.MustCompile(`Monitoring evaluation "([0-9a-f]{8})"`)
	runOut, _ := cli(t, addr, "job", "run", "-detach", "../examples/hello.json")
	mustContain(t, runOut, "Job registration successful", "Evaluation ID: ")
	out, _ = cli(t, addr, "job", "run", "../examples/hello.json")
	id := evalID.FindStringSubmatch(out)[1]
	out, code = cli(t, addr, "eval", "status", id)
	if code != 0 {
		t.Fatalf("eval status: %d\n%s", code, out)
	}
	mustContain(t, out, "Status              = complete", "TriggeredBy         = job-register", "Job ID              = hello")

	// job plan with the real binary: Nomad's exit codes.
	if out, code = cli(t, addr, "job", "plan", "../examples/hello.json"); code != 0 || !strings.Contains(out, "All tasks successfully allocated") {
		t.Fatalf("plan of the unchanged job: exit %d\n%s", code, out)
	}
	if out, code = cli(t, addr, "job", "plan", "-var", "count=3", "../examples/hello.nomad.hcl"); code != 1 || !strings.Contains(out, `+/- Count: "2" => "3"`) {
		t.Fatalf("plan of a count change: exit %d\n%s", code, out)
	}
	if out, code = cli(t, addr, "job", "inspect", "-t", "{{.ID}} {{.Version}}", "hello"); code != 0 || !strings.HasPrefix(out, "hello ") {
		t.Fatalf("inspect -t: exit %d\n%s", code, out)
	}

	out, _ = cli(t, addr, "node", "status")
	mustContain(t, out, "Node Pool", "dc1", "ready", "eligible")
	nodeID := regexp.MustCompile(`(?m)^([0-9a-f]{8})\s`).FindStringSubmatch(out)[1]
	out, code = cli(t, addr, "node", "status", nodeID)
	if code != 0 {
		t.Fatalf("node status: %d\n%s", code, out)
	}
	mustContain(t, out, "Allocated Resources", "100/", "raw_exec")

	// The batch example completes.
	out, code = cli(t, addr, "job", "run", "../examples/batch.json")
	if code != 0 {
		t.Fatalf("batch run: %d\n%s", code, out)
	}
	waitFor(t, 20*time.Second, "the batch job to complete", func() bool {
		out, _ := cli(t, addr, "job", "status", "countdown")
		return strings.Contains(out, "dead") && regexp.MustCompile(`count\s+0\s+0\s+0\s+0\s+1`).MatchString(out)
	})

	// Bad input: a clear error naming the field, exit 1.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"Job": {"ID": "x", "TaskGroups": [{"Name": "g", "Count": -2, "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}}`), 0o644)
	out, code = cli(t, addr, "job", "run", bad)
	if code != 1 || !strings.Contains(out, "Count") || !strings.Contains(out, "400") {
		t.Fatalf("bad job: exit %d\n%s", code, out)
	}
	out, code = cli(t, addr, "job", "run", filepath.Join(dir, "missing.json"))
	if code != 1 || !strings.Contains(out, "missing.json") {
		t.Fatalf("missing file: exit %d\n%s", code, out)
	}
	// HCL job files are read; the server still judges the job.
	emptyHCL := filepath.Join(dir, "job.hcl")
	os.WriteFile(emptyHCL, []byte(`job "x" { }`), 0o644)
	out, code = cli(t, addr, "job", "run", emptyHCL)
	if code != 1 || !strings.Contains(out, "400") || !strings.Contains(out, "TaskGroups") {
		t.Fatalf("HCL job without groups: exit %d\n%s", code, out)
	}
	out, code = cli(t, addr, "job", "run", "-detach", "-var", "count=1", "../examples/hello.nomad.hcl")
	if code != 0 || !strings.Contains(out, "Job registration successful") {
		t.Fatalf("HCL example: exit %d\n%s", code, out)
	}

	// A job that cannot be placed: exit 2 and the reason.
	huge := filepath.Join(dir, "huge.json")
	os.WriteFile(huge, []byte(`{"ID": "huge", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec",
		"Config": {"command": "/bin/sleep", "args": ["100"]}, "Resources": {"CPU": 100000000, "MemoryMB": 64}}]}]}`), 0o644)
	out, code = cli(t, addr, "job", "run", huge)
	if code != 2 {
		t.Fatalf("unplaceable job: exit %d\n%s", code, out)
	}
	mustContain(t, out, "failed to place 1 allocation", `Dimension "cpu" exhausted on 1 node`, "waiting for additional capacity")

	out, code = cli(t, addr, "alloc", "status", "zz")
	if code != 1 || !strings.Contains(out, "no allocation") {
		t.Fatalf("unknown alloc: %d\n%s", code, out)
	}
	out, code = cli(t, addr, "job", "status", "nope")
	if code != 1 || !strings.Contains(out, `no job with prefix or id "nope"`) {
		t.Fatalf("unknown job: %d\n%s", code, out)
	}
	// A unique prefix names the job, as in Nomad's CLI.
	out, code = cli(t, addr, "job", "status", "hel")
	if code != 0 || !strings.Contains(out, "ID           = hello") {
		t.Fatalf("job prefix: %d\n%s", code, out)
	}
	if out, code = cli(t, addr, "job", "history", "hel"); code != 0 || !strings.Contains(out, "Version") {
		t.Fatalf("job history by prefix: %d\n%s", code, out)
	}
	// Conflicting drain flags are refused, as Nomad does; -yes is accepted.
	if out, code = cli(t, addr, "node", "drain", "-enable", "-force", "-no-deadline", "-yes", nodeID); code != 1 || !strings.Contains(out, "at most one") {
		t.Fatalf("conflicting drain flags: %d\n%s", code, out)
	}
	out, code = cli(t, "127.0.0.1:1", "job", "stop", "--address", addr, "hello")
	if code != 0 {
		t.Fatalf("job stop with --address: %d\n%s", code, out)
	}
	waitFor(t, 20*time.Second, "no greeter left", func() bool { return len(tasksUnder(data)) == 0 && len(supervisorsUnder(data)) == 0 })
	out, code = cli(t, addr, "nonsense")
	if code != 1 || !strings.Contains(out, "Usage: drover") {
		t.Fatalf("unknown command: %d\n%s", code, out)
	}
}
