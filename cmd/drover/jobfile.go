package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/jobfile"
)

// jobFileFlags are the flags of the commands that read a job file (job
// run, plan, validate): Nomad's -var, -var-file and -json.
type jobFileFlags struct {
	vars     multiFlag
	varFiles multiFlag
	json     bool
}

func addJobFileFlags(fs *flag.FlagSet) *jobFileFlags {
	f := &jobFileFlags{}
	fs.Var(&f.vars, "var", "")
	fs.Var(&f.varFiles, "var-file", "")
	fs.BoolVar(&f.json, "json", false, "")
	return f
}

// jobFileOptionsUsage is the help text of the job file flags.
const jobFileOptionsUsage = `
  -var 'key=value'
    Variable for the HCL job file's variable blocks (repeatable; wins over
    -var-file and NOMAD_VAR_<name> in the environment).

  -var-file=path
    HCL file of variable values (repeatable; later files win).

  -json
    Read the file as a JSON job even without a .json name.`

// jobFileHelp explains which files the commands read.
const jobFileHelp = `  The file is an HCL2 job (.nomad.hcl, .nomad, .hcl: job, group and task
  blocks, variable blocks, Nomad's HCL functions) or a JSON job (.json or a
  file starting with "{": {"Job": {...}} as "nomad job run -output" prints
  it, or the bare job object). "-" reads standard input.`

// jobSource is a job file read for the API: the job as JSON (exactly the
// user's object for a JSON file, so the server's strict decoding sees
// every field), its ID and namespace, and for HCL the submission Nomad
// keeps with the job.
type jobSource struct {
	path string
	// job is the job object as JSON.
	job json.RawMessage
	// top holds the other fields of a {"Job": ...} file (EnforceIndex...).
	top map[string]json.RawMessage
	id  string
	// namespace is the job's Namespace field ("" when unset).
	namespace  string
	submission *api.JobSubmission
}

// readJobSource reads path ("-": stdin) as a JSON or HCL2 job.
func readJobSource(path string, f *jobFileFlags) (*jobSource, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	src := &jobSource{path: path}
	if f.json || strings.HasSuffix(path, ".json") || jobfile.IsJSON(data) {
		if err := src.fromJSON(data); err != nil {
			return nil, err
		}
	} else {
		job, err := jobfile.Parse(jobfile.Config{Path: path, Source: data, ArgVars: f.vars, VarFiles: f.varFiles,
			Envs: os.Environ(), AllowFS: true})
		if err != nil {
			return nil, err
		}
		if src.job, err = json.Marshal(job); err != nil {
			return nil, fmt.Errorf("encoding job: %w", err)
		}
		src.id, src.namespace = deref(job.ID), deref(job.Namespace)
		src.submission = &api.JobSubmission{Source: string(data), Format: "hcl2", VariableFlags: varFlagMap(f.vars),
			Variables: jobfile.ConcatFiles(f.varFiles)}
	}
	return src, nil
}

// fromJSON takes a JSON job: {"Job": {...}} or the bare job object.
func (s *jobSource) fromJSON(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return jsonFileError(data, err)
	}
	if job, ok := top["Job"]; ok {
		delete(top, "Job")
		s.job, s.top = job, top
	} else {
		s.job = json.RawMessage(bytes.TrimSpace(data))
	}
	var head struct {
		ID        string
		Namespace string
	}
	if err := json.Unmarshal(s.job, &head); err != nil {
		return fmt.Errorf("the Job is not a JSON object: %w", err)
	}
	s.id, s.namespace = head.ID, head.Namespace
	return nil
}

// jsonFileError explains why a JSON job file does not parse: truncated
// (it ends inside a value), malformed at a line and column, or not an
// object.
func jsonFileError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "unexpected end of JSON input"):
		line := bytes.Count(data, []byte("\n")) + 1
		return fmt.Errorf("the JSON is truncated: it ends (line %d) before its objects and arrays are closed", line)
	case errors.As(err, &se):
		line, col := lineCol(data, se.Offset)
		return fmt.Errorf("malformed JSON at line %d, column %d: %v", line, col, err)
	case errors.As(err, &te):
		return fmt.Errorf("not a JSON object: the file holds a JSON %s (drover reads Nomad's JSON job format, {\"Job\": {...}}, or HCL)", te.Value)
	}
	return fmt.Errorf("reading JSON: %w", err)
}

func lineCol(data []byte, off int64) (int, int) {
	line, col := 1, 1
	for i := int64(0); i < off-1 && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// registerBody is body with the job's submission (its HCL source and
// variables), which only a registration carries.
func (s *jobSource) registerBody(extra map[string]any) ([]byte, error) {
	if s.submission != nil {
		extra["Submission"] = s.submission
	}
	return s.body(extra)
}

// body returns the JSON body of a request carrying the job: the file's
// other top-level fields, then extra, then "Job".
func (s *jobSource) body(extra map[string]any) ([]byte, error) {
	out := map[string]any{}
	for k, v := range s.top {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	out["Job"] = s.job
	return json.Marshal(out)
}

// apiJob decodes the job into Nomad's api type (for the client calls that
// take one).
func (s *jobSource) apiJob() (*api.Job, error) {
	var j api.Job
	if err := json.Unmarshal(s.job, &j); err != nil {
		return nil, fmt.Errorf("decoding job: %w", err)
	}
	return &j, nil
}

// varFlagMap turns -var k=v flags into a map, as Nomad keeps them in the
// submission.
func varFlagMap(vars []string) map[string]string {
	if len(vars) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, v := range vars {
		if k, val, ok := strings.Cut(v, "="); ok {
			out[k] = val
		}
	}
	return out
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// rawJSON is a request body already encoded.
func rawJSON(b []byte) json.RawMessage { return json.RawMessage(b) }
