package jobspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/hashicorp/nomad/api"
)

// PlanRequest is a decoded job plan request (the body of Nomad's PUT
// /v1/job/:id/plan): the job, validated as a registration would be, and
// whether to answer the diff.
type PlanRequest struct {
	*RegisterRequest
	// Diff asks for the job diff against the current version.
	Diff bool
}

// DecodePlanRequest decodes Nomad's JobPlanRequest ({"Job": {...},
// "Diff": true}) with the same strictness and validation as a
// registration: bad input gives ValidationErrors naming each field.
func DecodePlanRequest(r io.Reader, opts DecodeOptions) (*PlanRequest, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read job plan request: %w", err)
	}
	var req api.JobPlanRequest
	if err := decodeStrict(data, &req); err != nil {
		return nil, err
	}
	// The job goes through the registration's decoding, unchanged.
	var raw struct {
		Job json.RawMessage
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	body, err := json.Marshal(map[string]any{"Job": raw.Job, "Namespace": req.Namespace, "Region": req.Region,
		"PolicyOverride": req.PolicyOverride})
	if err != nil {
		return nil, fmt.Errorf("re-encode job plan request: %w", err)
	}
	reg, err := DecodeRegisterRequestOpts(bytes.NewReader(body), opts)
	if err != nil {
		return nil, err
	}
	return &PlanRequest{RegisterRequest: reg, Diff: req.Diff}, nil
}
