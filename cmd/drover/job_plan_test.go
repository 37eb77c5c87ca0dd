package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// TestJobPlan: the diff in Nomad's +/-/+/- shape, the dry-run result, the
// modify index for -check-index, and Nomad's exit codes (1 allocations
// change, 0 none, 255 error).
func TestJobPlan(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	file := "testdata/web.nomad.hcl"

	r := ta.run(t, "job", "plan", file)
	mustCode(t, r, 1)
	mustContain(t, r.stdout, `+ Job: "web"`, `+ Task Group: "web" (2 create)`, `+ Task: "server" (forces create)`,
		"Scheduler dry-run:", "- All tasks successfully allocated.", "Job Modify Index: 0", "drover job run -check-index 0 "+file)
	if jobs, _, _ := ta.client.Jobs().List(nil); len(jobs) != 0 {
		t.Fatalf("plan registered the job")
	}

	mustCode(t, ta.run(t, "job", "run", file), 0)
	r = ta.run(t, "job", "plan", file)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Job: "web"`, "All tasks successfully allocated")
	if strings.Contains(r.stdout, "+/-") {
		t.Fatalf("an unchanged job shows edits:\n%s", r.stdout)
	}

	// A count change: the group is edited, one allocation created.
	r = ta.run(t, "job", "plan", "-var", "count=3", file)
	mustCode(t, r, 1)
	mustContain(t, r.stdout, `+/- Job: "web"`, `+/- Task Group: "web" (1 create, 2 in-place update)`, `+/- Count: "2" => "3" (forces create)`)
	idx := regexp.MustCompile(`Job Modify Index: (\d+)`).FindStringSubmatch(r.stdout)[1]
	if idx == "0" {
		t.Fatalf("modify index of a registered job is 0:\n%s", r.stdout)
	}

	// A destructive change: the task is edited, its config diff shown.
	r = ta.run(t, "job", "plan", "-var", "sleep=301", file)
	mustCode(t, r, 1)
	mustContain(t, r.stdout, `+/- Task: "server" (forces create/destroy update)`, "+/- Config {", `- args: "300"`, `+ args: "301"`)

	// -check-index from the plan registers; a stale one is refused.
	r = ta.run(t, "job", "run", "-check-index", idx, "-var", "count=3", file)
	mustCode(t, r, 0)
	r = ta.run(t, "job", "run", "-check-index", idx, "-var", "count=4", file)
	mustCode(t, r, 1)

	// -t formats the response; the exit code still tells (count 2 vs 3).
	r = ta.run(t, "job", "plan", "-t", "{{.JobModifyIndex}}", file)
	if r.code != 1 || strings.TrimSpace(r.stdout) == "" || strings.TrimSpace(r.stdout) == "0" {
		t.Fatalf("-t: %s", r)
	}

	bad := writeFile(t, "bad.nomad.hcl", "job \"x\" {\n  grop \"g\" {}\n}\n")
	r = ta.run(t, "job", "plan", bad)
	mustCode(t, r, 255)
	mustContain(t, r.stderr, "bad.nomad.hcl:2,3")
}

func TestFormatJobDiff(t *testing.T) {
	t.Parallel()
	// formatJobDiff aligns the fields of one level and nests objects.
	d := sampleDiff()
	// Unchanged fields of the job, group and task levels are left out.
	d.Fields = append(d.Fields, &api.FieldDiff{Type: "None", Name: "Region", Old: "global", New: "global"})
	d.TaskGroups[0].Objects = append(d.TaskGroups[0].Objects, &api.ObjectDiff{Type: "None", Name: "RestartPolicy"})
	got := formatJobDiff(d, false)
	want := strings.Join([]string{
		`+/- Job: "web"`,
		`+/- Priority: "50" => "60"`,
		`+   Meta[a]:  "1"`,
		`+/- Task Group: "web" (1 create, 1 destroy)`,
		`  +/- Count: "1" => "2" (forces create)`,
		`  +/- Task: "server" (forces create/destroy update)`,
		`    +/- Config {`,
		`      +/- args[0]: "1" => "2"`,
		`        }`,
	}, "\n")
	if got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
}
