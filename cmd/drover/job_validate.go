package main

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// JobValidateCommand is `drover job validate`: check a job file without
// submitting it.
type JobValidateCommand struct{ Meta }

func (c *JobValidateCommand) Synopsis() string { return "Checks a job file without submitting it" }

func (c *JobValidateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job validate [options] <path>

  Checks the job file: it parses it (HCL errors name file, line and
  column), then asks the agent (PUT /v1/validate/job) to apply every rule
  a registration would, storing nothing. Exit code 0 when the job is
  valid, 1 otherwise.

` + jobFileHelp + `
` + clientOptionsUsage() + `

Validate Options:
` + jobFileOptionsUsage)
}

func (c *JobValidateCommand) Run(args []string) int {
	fs := c.FlagSet("job validate", c.Help, flagSetClient)
	jf := addJobFileFlags(fs)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<path>")
	if !ok {
		return 1
	}
	src, err := readJobSource(rest[0], jf)
	if err != nil {
		return c.errorf(fmt.Sprintf("reading job file %q", rest[0]), err)
	}
	body, err := src.body(nil)
	if err != nil {
		return c.errorf("encoding job", err)
	}
	var resp api.JobValidateResponse
	if _, err := cl.Raw().Write("/v1/validate/job", rawJSON(body), &resp, nsWrite(c.jobNamespace(src))); err != nil {
		return c.errorf("validating job", err)
	}
	if resp.Error != "" || len(resp.ValidationErrors) > 0 {
		fmt.Fprintln(c.Stderr, "Job validation errors:")
		for _, e := range resp.ValidationErrors {
			fmt.Fprintf(c.Stderr, "  * %s\n", e)
		}
		return 1
	}
	if resp.Warnings != "" {
		fmt.Fprintf(c.Stdout, "Job Warnings:\n%s\n\n", resp.Warnings)
	}
	fmt.Fprintln(c.Stdout, "Job validation successful")
	return 0
}
