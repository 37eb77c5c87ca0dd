package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/jobfile"
	"github.com/drover-sched/drover/jobspec"
)

// jobsParseRoutes serves the job-file routes that write nothing: PUT
// /v1/jobs/parse (HCL2 → the job's JSON, as Nomad's) and PUT
// /v1/validate/job (the checks of a registration, nothing stored).
func (s *Server) jobsParseRoutes() {
	s.mux.HandleFunc("PUT /v1/jobs/parse", s.parseJob)
	s.mux.HandleFunc("POST /v1/jobs/parse", s.parseJob)
	s.mux.HandleFunc("PUT /v1/validate/job", s.validateJob)
	s.mux.HandleFunc("POST /v1/validate/job", s.validateJob)
}

// parseJob is PUT /v1/jobs/parse: Nomad's JobsParseRequest (JobHCL,
// Variables as HCL text, Canonicalize) answered with the api.Job. The file
// functions are disabled, as on Nomad's servers; an HCL error is a 400
// naming line and column; HCLv1 is refused.
func (s *Server) parseJob(w http.ResponseWriter, r *http.Request) {
	var req jobsParseRequest
	if err := decodeStrictBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case req.HCLv1:
		s.fail(w, r, badRequestf("HCLv1: drover parses HCL2 job files only (HCL1 was removed from Nomad in 1.9)"))
		return
	case req.JobHCL == "":
		s.fail(w, r, badRequestf("JobHCL: is empty: give the job file's text"))
		return
	}
	job, err := jobfile.Parse(jobfile.Config{Path: "input.hcl", Source: []byte(req.JobHCL), VarContent: req.Variables})
	if err != nil {
		s.fail(w, r, badRequestf("JobHCL: %v", err))
		return
	}
	if req.Canonicalize {
		job.Canonicalize()
	}
	writeJSON(w, r, http.StatusOK, job)
}

// validateJob is PUT /v1/validate/job: the job is decoded, canonicalized
// and validated exactly as a registration would be, and the answer is
// Nomad's JobValidateResponse: the rules broken (200 either way, as
// Nomad), and the warnings a registration would carry.
func (s *Server) validateJob(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxJobBody))
	if err != nil {
		s.fail(w, r, badRequestf("request body: %v", err))
		return
	}
	resp := &api.JobValidateResponse{DriverConfigValidated: true}
	req, err := jobspec.DecodeRegisterRequestOpts(bytes.NewReader(body), jobspec.DecodeOptions{
		Namespace: r.URL.Query().Get("namespace"), Region: r.URL.Query().Get("region")})
	var ves jobspec.ValidationErrors
	switch {
	case errors.As(err, &ves):
		for _, ve := range ves {
			resp.ValidationErrors = append(resp.ValidationErrors, ve.Error())
		}
		resp.Error = ves.Error()
	case err != nil:
		s.fail(w, r, err)
		return
	default:
		resp.Warnings = strings.Join(req.Warnings, "\n")
	}
	writeJSON(w, r, http.StatusOK, resp)
}

// jobsParseRequest is Nomad's JobsParseRequest, with the HCLv1 flag older
// clients send (refused: drover has no HCL1 parser).
type jobsParseRequest struct {
	api.JobsParseRequest
	HCLv1 bool `json:",omitempty"`
}

// decodeStrictBody reads a JSON request body into v, refusing unknown
// fields.
func decodeStrictBody(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxJobBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequestf("request body: %v", err)
	}
	return nil
}
