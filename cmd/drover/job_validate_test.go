package main

import (
	"strings"
	"testing"
)

func TestJobValidate(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	r := ta.run(t, "job", "validate", "../../examples/hello.nomad.hcl")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Job validation successful")
	r = ta.run(t, "job", "validate", "-var", "count=-1", "../../examples/hello.nomad.hcl")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Job validation errors:", "Count")
	network := writeFile(t, "net.nomad.hcl", `
job "net" {
  group "g" {
    network {
      mode = "bridge"
      port "http" {}
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
    }
  }
}`)
	r = ta.run(t, "job", "validate", network)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, `network mode "bridge" needs every task of the group on a driver that runs it in the group's network namespace (docker), but task "t" (Tasks[0]) uses "raw_exec"`)
	r = ta.run(t, "job", "validate", "../../examples/batch.json")
	mustCode(t, r, 0)
	if jobs, _, _ := ta.client.Jobs().List(nil); len(jobs) != 0 {
		t.Fatalf("validate registered %d jobs", len(jobs))
	}
	bad := writeFile(t, "bad.nomad.hcl", "job \"x\" {\n  group \"g\" {\n    count = = 1\n  }\n}\n")
	r = ta.run(t, "job", "validate", bad)
	mustCode(t, r, 1)
	if !strings.Contains(r.stderr, "bad.nomad.hcl:3,13") {
		t.Fatalf("HCL error without file:line,column:\n%s", r)
	}
}
