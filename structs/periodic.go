package structs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/cronexpr"
)

// PeriodicSpecCron is the only periodic spec type, as in Nomad.
const PeriodicSpecCron = "cron"

// PeriodicLaunchSuffix separates a periodic child's ID from its parent's:
// the child of job "report" launched at unix second 1700000000 is
// "report/periodic-1700000000", as Nomad names it.
const PeriodicLaunchSuffix = "/periodic-"

// DispatchLaunchSuffix separates a dispatched child's ID from its
// parent's: "<parent>/dispatch-<unix seconds>-<8 hex>", as Nomad.
const DispatchLaunchSuffix = "/dispatch-"

// DispatchPayloadSizeLimit is the largest dispatch payload, in bytes
// (16 KiB, Nomad's limit).
const DispatchPayloadSizeLimit = 16 * 1024

// Parameterized job payload modes, as Nomad's.
const (
	DispatchPayloadOptional  = "optional"
	DispatchPayloadRequired  = "required"
	DispatchPayloadForbidden = "forbidden"
)

// PeriodicConfig is Nomad's periodic block: the job launches a child at
// each time its cron expressions match, in TimeZone.
type PeriodicConfig struct {
	// Enabled: a disabled periodic job launches nothing, and cannot be
	// force-launched either (Nomad's rule).
	Enabled bool
	// Spec is the single cron expression (the `cron` argument); Specs the
	// list (`crons`). Nomad's cron syntax: 5 fields (minute first), 6
	// (with a year), or 7 (seconds first, then a year), plus the
	// @hourly-style shorthands.
	Spec     string   `json:",omitempty"`
	Specs    []string `json:",omitempty"`
	SpecType string
	// ProhibitOverlap skips a launch while an earlier child still runs.
	ProhibitOverlap bool
	// TimeZone is an IANA zone name the expressions are read in (default
	// "UTC").
	TimeZone string `json:",omitempty"`
}

// Expressions returns the configured cron expressions: Spec when set, else
// Specs (Nomad reads them that way).
func (p *PeriodicConfig) Expressions() []string {
	if p == nil {
		return nil
	}
	if p.Spec != "" {
		return []string{p.Spec}
	}
	return p.Specs
}

// Location returns the time zone the expressions are read in.
func (p *PeriodicConfig) Location() (*time.Location, error) {
	if p == nil || p.TimeZone == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(p.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", p.TimeZone, err)
	}
	return loc, nil
}

// ParseCron parses one cron expression with Nomad's parser
// (github.com/hashicorp/cronexpr), turning the parser's panics on some
// malformed input into errors.
func ParseCron(spec string) (expr *cronexpr.Expression, err error) {
	defer func() {
		if recover() != nil {
			expr, err = nil, fmt.Errorf("invalid cron expression %q", spec)
		}
	}()
	expr, err = cronexpr.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("invalid cron expression %q: %w", spec, err)
	}
	return expr, nil
}

// Next returns the earliest time strictly after from at which one of the
// expressions matches, read in the block's time zone; the zero time when
// none ever matches again. It fails on an expression or zone that does
// not parse (validation refuses those at registration).
func (p *PeriodicConfig) Next(from time.Time) (time.Time, error) {
	loc, err := p.Location()
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	for _, spec := range p.Expressions() {
		expr, err := ParseCron(spec)
		if err != nil {
			return time.Time{}, err
		}
		t := expr.Next(from.In(loc))
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next, nil
}

// ParameterizedJobConfig is Nomad's parameterized block: what a dispatch
// of the job must and may carry.
type ParameterizedJobConfig struct {
	// Payload is DispatchPayloadOptional (default), Required or Forbidden.
	Payload      string
	MetaRequired []string `json:",omitempty"`
	MetaOptional []string `json:",omitempty"`
}

// DispatchPayloadConfig is a task's dispatch_payload block: File is where,
// relative to the task's local/ directory, the payload is written.
type DispatchPayloadConfig struct {
	File string
}

// IsPeriodic reports whether the job is a periodic parent.
func (j *Job) IsPeriodic() bool {
	return j != nil && j.Periodic != nil
}

// IsPeriodicActive reports whether the job launches children on its own:
// periodic, enabled, not stopped and not a parameterized parent (Nomad's
// IsPeriodicActive: a periodic parameterized job is dispatched, and each
// dispatched child is a periodic job of its own).
func (j *Job) IsPeriodicActive() bool {
	return j.IsPeriodic() && j.Periodic.Enabled && !j.Stop && !j.IsParameterized()
}

// IsParameterized reports whether the job is a parameterized parent (not
// a dispatched child), as Nomad's IsParameterized.
func (j *Job) IsParameterized() bool {
	return j != nil && j.ParameterizedJob != nil && !j.Dispatched
}

// IsParent reports whether the job runs nothing itself: a periodic or a
// parameterized parent. Its evaluations place no allocations.
func (j *Job) IsParent() bool {
	return j.IsPeriodic() || j.IsParameterized()
}

// PeriodicChildID is the ID of the child of parentID launched at launch
// (unix seconds), as Nomad derives it.
func PeriodicChildID(parentID string, launch time.Time) string {
	return parentID + PeriodicLaunchSuffix + strconv.FormatInt(launch.Unix(), 10)
}

// PeriodicLaunchTime reads the launch time back from a periodic child's ID
// (ok false when childID is not a periodic child of parentID).
func PeriodicLaunchTime(parentID, childID string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(childID, parentID+PeriodicLaunchSuffix)
	if !ok {
		return time.Time{}, false
	}
	sec, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, 0), true
}

// NewPeriodicChild returns the child job parent launches at launch, as
// Nomad derives it: a copy with the child's ID and name, ParentID set, the
// periodic block removed and the server-side fields cleared.
func NewPeriodicChild(parent *Job, launch time.Time) *Job {
	c := parent.Copy()
	c.ID = PeriodicChildID(parent.ID, launch)
	c.Name = c.ID
	c.ParentID = parent.ID
	c.Periodic = nil
	clearServerFields(c)
	return c
}

// NewDispatchChild returns the child job a dispatch of parent creates: ID
// "<parent>/dispatch-<unix seconds>-<suffix>" (suffix: the ID prefix
// template, if any, and 8 hex characters), Dispatched and ParentID set,
// the payload, and the dispatch meta merged over the job's.
func NewDispatchChild(parent *Job, now time.Time, suffix string, meta map[string]string, payload []byte, token string) *Job {
	c := parent.Copy()
	c.ID = parent.ID + DispatchLaunchSuffix + strconv.FormatInt(now.Unix(), 10) + "-" + suffix
	c.Name = c.ID
	c.ParentID = parent.ID
	c.Dispatched = true
	c.DispatchIdempotencyToken = token
	if len(payload) > 0 {
		c.Payload = append([]byte(nil), payload...)
	}
	if len(meta) > 0 && c.Meta == nil {
		c.Meta = make(map[string]string, len(meta))
	}
	for k, v := range meta {
		c.Meta[k] = v
	}
	clearServerFields(c)
	return c
}

func clearServerFields(j *Job) {
	j.Stop, j.Status, j.StatusDescription, j.Stable = false, "", "", false
	j.Version, j.SubmitTime, j.CreateIndex, j.ModifyIndex, j.JobModifyIndex = 0, 0, 0, 0, 0
}

// DispatchError is a dispatch request that breaks one of the parameterized
// block's rules; Field names what is wrong ("Payload" or "Meta").
type DispatchError struct {
	Field string
	Rule  string
}

func (e *DispatchError) Error() string { return e.Field + ": " + e.Rule }

// ValidateDispatch checks a dispatch's payload and meta against the
// parameterized block, with Nomad's rules: the payload at most
// DispatchPayloadSizeLimit bytes, present when required, absent when
// forbidden; every required meta key given, and no key that is neither
// required nor optional.
func (p *ParameterizedJobConfig) ValidateDispatch(payload []byte, meta map[string]string) error {
	if len(payload) > DispatchPayloadSizeLimit {
		return &DispatchError{"Payload", fmt.Sprintf("payload exceeds maximum size; %d > %d bytes", len(payload), DispatchPayloadSizeLimit)}
	}
	switch p.Payload {
	case DispatchPayloadRequired:
		if len(payload) == 0 {
			return &DispatchError{"Payload", "payload is not provided but the job requires one (payload = \"required\")"}
		}
	case DispatchPayloadForbidden:
		if len(payload) > 0 {
			return &DispatchError{"Payload", "payload is not allowed by the job (payload = \"forbidden\")"}
		}
	}
	allowed := map[string]bool{}
	for _, k := range p.MetaRequired {
		allowed[k] = true
	}
	for _, k := range p.MetaOptional {
		allowed[k] = true
	}
	var unknown, missing []string
	for k := range meta {
		if !allowed[k] {
			unknown = append(unknown, k)
		}
	}
	for _, k := range p.MetaRequired {
		if _, ok := meta[k]; !ok {
			missing = append(missing, k)
		}
	}
	sort.Strings(unknown)
	sort.Strings(missing)
	if len(unknown) > 0 {
		return &DispatchError{"Meta", fmt.Sprintf("dispatch request included unpermitted metadata keys: %s", strings.Join(unknown, ", "))}
	}
	if len(missing) > 0 {
		return &DispatchError{"Meta", fmt.Sprintf("dispatch did not provide required meta keys: %s", strings.Join(missing, ", "))}
	}
	return nil
}
