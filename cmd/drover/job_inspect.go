package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// JobInspectCommand is `drover job inspect`: a job as the API holds it.
type JobInspectCommand struct{ Meta }

func (c *JobInspectCommand) Synopsis() string {
	return "Prints a job as JSON (or its submitted source)"
}

func (c *JobInspectCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job inspect [options] <job>

  Prints the job (ID or unique prefix) as {"Job": ...}, the JSON the API
  takes, as Nomad's "job inspect": "drover job run" of the output registers
  the same job again.
` + clientOptionsUsage() + `

Inspect Options:

  -version=<n>
    Print this version of the job.

  -hcl
    Print the source the job was submitted with (HCL files keep theirs).

  -json
    Print the job object itself rather than {"Job": ...}.

  -t
    Format the job with a Go template.`)
}

func (c *JobInspectCommand) Run(args []string) int {
	fs := c.FlagSet("job inspect", c.Help, flagSetClient)
	version := fs.Int64("version", -1, "")
	source := fs.Bool("hcl", false, "")
	out := addOutputFlags(fs)
	cl, rest, ok := c.setup(fs, args, 1, 1, "<job>")
	if !ok {
		return 1
	}
	id, ns, err := c.jobByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("inspecting job", err)
	}
	job, err := jobVersion(cl, id, ns, *version)
	if err != nil {
		return c.errorf("inspecting job", err)
	}
	if *source {
		sub, _, err := cl.Jobs().Submission(id, int(deref(job.Version)), nsQuery(ns))
		var ue api.UnexpectedResponseError
		if err != nil && !(errors.As(err, &ue) && ue.StatusCode() == http.StatusNotFound) {
			return c.errorf("reading the job's submission", err)
		}
		if sub == nil || sub.Source == "" {
			return c.errorf("", fmt.Errorf("job %q version %d was submitted without its source (as JSON to the API)", id, deref(job.Version)))
		}
		fmt.Fprint(c.Stdout, sub.Source)
		if !strings.HasSuffix(sub.Source, "\n") {
			fmt.Fprintln(c.Stdout)
		}
		return 0
	}
	if out.wanted() {
		return out.write(&c.Meta, job)
	}
	return (&outputFlags{json: true}).write(&c.Meta, map[string]*api.Job{"Job": job})
}

// jobVersion returns the job, or version v of it (v < 0: the current).
func jobVersion(cl *api.Client, id, ns string, v int64) (*api.Job, error) {
	if v < 0 {
		job, _, err := cl.Jobs().Info(id, nsQuery(ns))
		return job, err
	}
	versions, _, _, err := cl.Jobs().Versions(id, false, nsQuery(ns))
	if err != nil {
		return nil, err
	}
	for _, j := range versions {
		if int64(deref(j.Version)) == v {
			return j, nil
		}
	}
	return nil, fmt.Errorf("job %q has no version %d", id, v)
}
