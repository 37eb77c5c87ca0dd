package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestJobRun: job run submits the job, monitors its evaluation and then
// its deployment until it succeeds, as Nomad's monitor does.
func TestJobRun(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	file := writeFile(t, "web.json", serviceJobJSON("web", 2))
	r := ta.run(t, "job", "run", file)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Monitoring evaluation`, `Evaluation triggered by job "web"`, `Evaluation within deployment: "`, `finished with status "complete"`,
		`Monitoring deployment`, "Deployment completed successfully", "successful", "Deployed", "web ")
	if n := strings.Count(r.stdout, "created: node"); n != 2 {
		t.Fatalf("%d allocations reported:\n%s", n, r.stdout)
	}

	// Again, unchanged: no new deployment to follow.
	r = ta.run(t, "job", "run", file)
	mustCode(t, r, 0)
	if strings.Contains(r.stdout, "Monitoring deployment") {
		t.Fatalf("an unchanged job has no deployment to follow:\n%s", r.stdout)
	}

	// -detach: only the registration.
	r = ta.run(t, "job", "run", "-detach", file)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Job registration successful", "Evaluation ID: ")
	if strings.Contains(r.stdout, "Monitoring") {
		t.Fatalf("-detach monitored:\n%s", r.stdout)
	}

	// -check-index: a stale index is refused.
	r = ta.run(t, "job", "run", "-check-index", "1", file)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error submitting job: ", "-check-index")
}

func TestJobRunOutput(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "bare.json", `{"ID": "bare", "TaskGroups": [{"Name": "g"}]}`)
	r := runCmd(t, "job", "run", "-output", file)
	mustCode(t, r, 0)
	var body struct{ Job map[string]any }
	if err := json.Unmarshal([]byte(r.stdout), &body); err != nil || body.Job["ID"] != "bare" {
		t.Fatalf("-output is not {\"Job\": ...}: %v\n%s", err, r.stdout)
	}
}

// TestJobRunBadInput: what cannot be submitted is explained, exit 1 (2
// for a job that cannot be placed).
func TestJobRunBadInput(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	bad := writeFile(t, "bad.json", `{"Job": {"ID": "x", "TaskGroups": [{"Name": "g", "Count": -2, "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}}`)
	r := ta.run(t, "job", "run", bad)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error submitting job: ", "400", "Count")

	r = ta.run(t, "job", "run", "/nonexistent/missing.json")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, `Error reading job file "/nonexistent/missing.json": `)

	truncated := writeFile(t, "cut.json", `{"Job": {"ID": "x", "TaskGroups": [{"Name": "g"`)
	r = ta.run(t, "job", "run", truncated)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "truncated")
	if strings.Contains(r.stderr, "not a JSON object") {
		t.Fatalf("a truncated file is reported as not an object:\n%s", r)
	}
	malformed := writeFile(t, "bad-syntax.json", "{\"Job\": {\n  \"ID\": \"x\",,\n}}")
	r = ta.run(t, "job", "run", malformed)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "malformed JSON at line 2, column")
	array := writeFile(t, "array.json", `[1, 2]`)
	r = ta.run(t, "job", "run", array)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "not a JSON object")

	huge := writeFile(t, "huge.json", `{"ID": "huge", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec",
		"Config": {"command": "/bin/sleep", "args": ["100"]}, "Resources": {"CPU": 100000000, "MemoryMB": 64}}]}]}`)
	r = ta.run(t, "job", "run", huge)
	mustCode(t, r, 2)
	mustContain(t, r.stdout, "failed to place 1 allocation", `Dimension "cpu" exhausted on 1 node`, "waiting for additional capacity")
	if !regexp.MustCompile(`Evaluation "[0-9a-f]{8}" waiting`).MatchString(r.stdout) {
		t.Fatalf("blocked eval not named:\n%s", r.stdout)
	}
}

// TestJobRunHCL: an HCL2 job file with variables (-var, -var-file, the
// environment) runs, and the submission keeps its source.
func TestJobRunHCL(t *testing.T) {
	ta := newTestAgent(t)
	vars := writeFile(t, "prod.vars.hcl", "count = 3\n")
	r := ta.run(t, "job", "run", "-var-file", vars, "testdata/web.nomad.hcl")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Monitoring deployment", "successful")
	if n := strings.Count(r.stdout, "created: node"); n != 3 {
		t.Fatalf("-var-file count=3 placed %d:\n%s", n, r.stdout)
	}
	t.Setenv("NOMAD_VAR_sleep", "301") // not parallel-safe: this test sets no t.Parallel
	r = ta.run(t, "job", "run", "-var-file", vars, "-var", "count=1", "testdata/web.nomad.hcl")
	mustCode(t, r, 0)
	job, _, err := ta.client.Jobs().Info("web", nil)
	if err != nil || *job.TaskGroups[0].Count != 1 || job.TaskGroups[0].Tasks[0].Config["args"].([]any)[0] != "301" {
		t.Fatalf("-var over -var-file, NOMAD_VAR_sleep: %v %+v", err, job.TaskGroups[0].Tasks[0].Config)
	}
	// The submitted source is kept with the job (GET /v1/job/:id/submission).
	sub, _, err := ta.client.Jobs().Submission("web", int(*job.Version), nil)
	if err != nil || sub == nil || sub.Format != "hcl2" || !strings.Contains(sub.Source, `variable "count"`) || sub.VariableFlags["count"] != "1" ||
		!strings.Contains(sub.Variables, "count = 3") {
		t.Fatalf("submission: %v %+v", err, sub)
	}
	r = ta.run(t, "job", "inspect", "-hcl", "web")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `variable "count"`, `job "web"`)

	bad := writeFile(t, "bad.nomad", "job \"x\" {\n  group \"g\" {\n    tusk \"t\" {}\n  }\n}\n")
	r = ta.run(t, "job", "run", bad)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "bad.nomad:3,5", `Blocks of type "tusk" are not expected here`)
	r = ta.run(t, "job", "run", "-var", "nope=1", "../../examples/hello.nomad.hcl")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Undefined -var variable")

	// -output prints the JSON the API takes.
	r = ta.run(t, "job", "run", "-output", "-var", "count=5", "../../examples/hello.nomad.hcl")
	mustCode(t, r, 0)
	var body struct {
		Job struct{ TaskGroups []struct{ Count int } }
	}
	if err := json.Unmarshal([]byte(r.stdout), &body); err != nil || body.Job.TaskGroups[0].Count != 5 {
		t.Fatalf("-output: %v\n%s", err, r.stdout)
	}
}
