package structs

// Check modes, as Nomad's: a healthiness check counts for deployment
// health; a readiness check (on_update = "ignore") is run and reported
// but never holds a deployment back.
const (
	CheckModeHealthiness = "healthiness"
	CheckModeReadiness   = "readiness"
)

// Check statuses, as Nomad's (GET /v1/client/allocation/:id/checks).
// drover adds "warning" for the soft failures Consul calls warning (a
// script check's exit code 1, an HTTP 429), which on_update =
// "ignore_warnings" and check_restart's ignore_warnings count as passing.
const (
	CheckStatusSuccess = "success"
	CheckStatusWarning = "warning"
	CheckStatusFailure = "failure"
	CheckStatusPending = "pending"
)

// CheckQueryResult is the latest result of one service check of an
// alloc, in the shape of Nomad's CheckQueryResult: the node agent keeps
// one per check and serves them at GET /v1/client/allocation/:id/checks
// as a map of ID to result.
type CheckQueryResult struct {
	// ID is stable for the check of this alloc (a hash of the alloc ID,
	// group, task, service and check names).
	ID string
	// Mode is CheckModeHealthiness or CheckModeReadiness.
	Mode string
	// Status is one of the CheckStatus values.
	Status string
	// StatusCode is the HTTP status of an http check, the exit code of
	// a script check.
	StatusCode int `json:",omitempty"`
	// Output is the response body, the script's output, or why the
	// check failed (at most 4 KiB).
	Output string
	// Timestamp is when the result was taken, in Unix seconds.
	Timestamp int64
	// Group is the alloc's name ("<job>.<group>[<index>]"), as Nomad
	// fills it; Task (empty for group services), Service and Check name
	// where the check is declared; JobID is the alloc's job.
	Group   string
	Task    string `json:",omitempty"`
	Service string
	Check   string
	JobID   string `json:",omitempty"`
}
