package jobspec

import (
	"path"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/structs"
)

// convertPeriodic maps a canonicalized periodic block (Enabled defaults to
// true, SpecType to cron, TimeZone to UTC).
func convertPeriodic(p *api.PeriodicConfig) *structs.PeriodicConfig {
	if p == nil {
		return nil
	}
	return &structs.PeriodicConfig{Enabled: deref(p.Enabled), Spec: deref(p.Spec), Specs: cloneSlice(p.Specs),
		SpecType: deref(p.SpecType), ProhibitOverlap: deref(p.ProhibitOverlap), TimeZone: deref(p.TimeZone)}
}

// convertParameterized maps a canonicalized parameterized block (Payload
// defaults to optional).
func convertParameterized(p *api.ParameterizedJobConfig) *structs.ParameterizedJobConfig {
	if p == nil {
		return nil
	}
	payload := p.Payload
	if payload == "" {
		payload = structs.DispatchPayloadOptional // Nomad's server-side default
	}
	return &structs.ParameterizedJobConfig{Payload: payload, MetaRequired: cloneSlice(p.MetaRequired), MetaOptional: cloneSlice(p.MetaOptional)}
}

// validatePeriodic applies Nomad's rules on the periodic block: batch or
// sysbatch jobs only; exactly one of cron and crons; the cron spec type;
// every expression parsed by Nomad's cron parser; and a known time zone.
// A job may be both periodic and parameterized: each dispatched child then
// launches periodically, as in Nomad.
func validatePeriodic(j *structs.Job, errs *errorList) {
	p := j.Periodic
	if p == nil {
		return
	}
	pp := "Job.Periodic"
	if j.Type != structs.JobTypeBatch && j.Type != structs.JobTypeSysBatch {
		errs.add(pp, "periodic can only be used with %q or %q jobs (got %q)", structs.JobTypeBatch, structs.JobTypeSysBatch, j.Type)
	}
	if p.SpecType != structs.PeriodicSpecCron {
		errs.add(join(pp, "SpecType"), "unknown periodic spec type %q (only %q)", p.SpecType, structs.PeriodicSpecCron)
	}
	switch {
	case p.Spec != "" && len(p.Specs) > 0:
		errs.add(join(pp, "Spec"), "only one of cron and crons may be set")
	case p.Spec == "" && len(p.Specs) == 0:
		errs.add(join(pp, "Spec"), "must specify a cron expression (cron or crons)")
	case p.Spec != "":
		validateCron(p.Spec, join(pp, "Spec"), errs)
	default:
		for i, s := range p.Specs {
			validateCron(s, indexed(join(pp, "Specs"), i), errs)
		}
	}
	if _, err := time.LoadLocation(p.TimeZone); err != nil || p.TimeZone == "" {
		errs.add(join(pp, "TimeZone"), "unknown time zone %q (an IANA name such as \"Europe/Paris\")", p.TimeZone)
	}
}

func validateCron(spec, field string, errs *errorList) {
	if _, err := structs.ParseCron(spec); err != nil {
		errs.add(field, "%v (Nomad's cron syntax: minute hour day-of-month month day-of-week [year], or seconds first with 7 fields)", err)
	}
}

// validateParameterized applies Nomad's rules on the parameterized block:
// batch or sysbatch jobs only, a known payload mode, and no meta key both
// required and optional.
func validateParameterized(j *structs.Job, errs *errorList) {
	p := j.ParameterizedJob
	if p == nil {
		return
	}
	pp := "Job.ParameterizedJob"
	if j.Type != structs.JobTypeBatch && j.Type != structs.JobTypeSysBatch {
		errs.add(pp, "parameterized can only be used with %q or %q jobs (got %q)", structs.JobTypeBatch, structs.JobTypeSysBatch, j.Type)
	}
	switch p.Payload {
	case structs.DispatchPayloadOptional, structs.DispatchPayloadRequired, structs.DispatchPayloadForbidden:
	default:
		errs.add(join(pp, "Payload"), "unknown payload requirement %q (optional, required or forbidden)", p.Payload)
	}
	required := map[string]bool{}
	for _, k := range p.MetaRequired {
		required[k] = true
	}
	var both []string
	for _, k := range p.MetaOptional {
		if required[k] {
			both = append(both, k)
		}
	}
	if len(both) > 0 {
		errs.add(join(pp, "MetaOptional"), "meta keys marked as both required and optional: %s", strings.Join(both, ", "))
	}
}

// validateDispatchPayload checks a task's dispatch_payload block: a file
// that stays inside the task's local/ directory.
func validateDispatchPayload(t *structs.Task, tp string, errs *errorList) {
	d := t.DispatchPayload
	if d == nil {
		return
	}
	fp := join(join(tp, "DispatchPayload"), "File")
	switch {
	case d.File == "":
		errs.add(fp, "must name the file the payload is written to")
	case escapesAllocDir(path.Join("local", strings.TrimPrefix(d.File, "/"))):
		errs.add(fp, "dispatch_payload file %q escapes the allocation directory", d.File)
	}
}

// checkChildFieldsInput refuses, on a job as given, the fields the server
// sets on the children of periodic and parameterized jobs: a user submits
// the parent, and dispatches or launches children through the API.
func checkChildFieldsInput(j *api.Job, jp string, errs *errorList) {
	const rule = "is set by the server on the children of periodic and parameterized jobs; submit the parent job and dispatch or force-launch it"
	if j.Dispatched {
		errs.add(join(jp, "Dispatched"), rule)
	}
	if j.DispatchIdempotencyToken != nil && *j.DispatchIdempotencyToken != "" {
		errs.add(join(jp, "DispatchIdempotencyToken"), rule)
	}
	if len(j.Payload) > 0 {
		errs.add(join(jp, "Payload"), rule)
	}
	if j.ParentID != nil && *j.ParentID != "" {
		errs.add(join(jp, "ParentID"), rule)
	}
}
