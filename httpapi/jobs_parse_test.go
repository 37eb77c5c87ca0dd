package httpapi_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

func (e *env) client() *api.Client {
	cfg := api.DefaultConfig()
	cfg.Address = e.srv.URL
	c, err := api.NewClient(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

const parseHCL = `
variable "n" {
  type    = number
  default = 1
}
job "parsed" {
  group "g" {
    count = var.n
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["${NOMAD_ALLOC_INDEX}"]
      }
    }
  }
}`

// TestJobsParse: PUT /v1/jobs/parse through Nomad's Go client, with
// variables and canonicalization, and its errors.
func TestJobsParse(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: parseHCL, Variables: "n = 3", Canonicalize: true})
	if err != nil {
		t.Fatal(err)
	}
	if *job.ID != "parsed" || *job.TaskGroups[0].Count != 3 || *job.Priority != 50 || job.TaskGroups[0].Tasks[0].Config["args"].([]any)[0] != "${NOMAD_ALLOC_INDEX}" {
		t.Fatalf("parsed: %+v", job)
	}
	job, err = c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: parseHCL})
	if err != nil || job.Priority != nil || *job.TaskGroups[0].Count != 1 {
		t.Fatalf("without Canonicalize: %v %+v", err, job)
	}

	_, err = c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: "job \"x\" {\n  group \"g\" {\n    cuont = 1\n  }\n}"})
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "input.hcl:3,5") || !strings.Contains(err.Error(), "cuont") {
		t.Fatalf("bad HCL: %v", err)
	}
	resp, body := e.do("PUT", "/v1/jobs/parse", []byte(`{"JobHCL": "job \"x\" {}", "HCLv1": true}`))
	if resp.StatusCode != 400 || !strings.Contains(body, "HCL2 job files only") {
		t.Fatalf("HCLv1: %d %s", resp.StatusCode, body)
	}
	// The server reads no files.
	_, err = c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: "job \"x\" {\n  meta {\n    a = file(\"/etc/hostname\")\n  }\n}"})
	if err == nil || !strings.Contains(err.Error(), "file functions are disabled") {
		t.Fatalf("file() on the server: %v", err)
	}
	resp, body = e.do("PUT", "/v1/jobs/parse", []byte(`{"JobHCL": "job \"x\" {}", "Nope": 1}`))
	if resp.StatusCode != 400 || !strings.Contains(body, "Nope") {
		t.Fatalf("unknown field: %d %s", resp.StatusCode, body)
	}
}

// TestValidateJob: PUT /v1/validate/job answers the registration's rules
// and writes nothing.
func TestValidateJob(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	job, err := c.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: parseHCL})
	if err != nil {
		t.Fatal(err)
	}
	resp, _, err := c.Jobs().Validate(job, nil)
	if err != nil || resp.Error != "" || len(resp.ValidationErrors) != 0 {
		t.Fatalf("valid job: %v %+v", err, resp)
	}
	job.TaskGroups[0].Count = new(-1)
	resp, _, err = c.Jobs().Validate(job, nil)
	if err != nil || len(resp.ValidationErrors) != 1 || !strings.Contains(resp.Error, "Count") {
		t.Fatalf("invalid count: %v %+v", err, resp)
	}
	job.TaskGroups[0].Networks = []*api.NetworkResource{{CNI: &api.CNIConfig{Args: map[string]string{"a": "b"}}}}
	resp, _, err = c.Jobs().Validate(job, nil)
	if err != nil || !strings.Contains(resp.Error, "cni block is not supported") {
		t.Fatalf("unsupported block: %v %+v", err, resp)
	}
	if jobs, _, _ := c.Jobs().List(nil); len(jobs) != 0 {
		t.Fatalf("validate stored a job: %v", jobs)
	}
}
