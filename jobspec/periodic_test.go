package jobspec

import "testing"

// TestPeriodicDecodes: a periodic block is kept with Nomad's defaults
// (enabled, cron spec type, UTC).
func TestPeriodicDecodes(t *testing.T) {
	req := decode(t, `{"Job": {"ID": "report", "Type": "batch", "Periodic": {"Specs": ["0 9 * * *", "@hourly"], "ProhibitOverlap": true},
		"TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}}`)
	p := req.Job.Periodic
	if p == nil || !p.Enabled || p.SpecType != "cron" || p.TimeZone != "UTC" || !p.ProhibitOverlap || len(p.Specs) != 2 || p.Spec != "" {
		t.Fatalf("periodic %+v", p)
	}
	if !req.Job.IsPeriodicActive() {
		t.Fatal("job not periodic")
	}
	req = decode(t, `{"Job": {"ID": "report", "Type": "batch", "Periodic": {"Spec": "*/5 * * * * * *", "TimeZone": "Europe/Paris", "Enabled": false},
		"TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"}}]}]}}`)
	if p := req.Job.Periodic; p.Enabled || p.Spec != "*/5 * * * * * *" || p.TimeZone != "Europe/Paris" || req.Job.IsPeriodicActive() {
		t.Fatalf("periodic %+v", p)
	}
}

// TestParameterizedDecodes: a parameterized block with Nomad's default
// payload mode, and a task's dispatch_payload block.
func TestParameterizedDecodes(t *testing.T) {
	req := decode(t, `{"Job": {"ID": "proc", "Type": "batch", "ParameterizedJob": {"MetaRequired": ["input"], "MetaOptional": ["mode"]},
		"TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/true"},
		"DispatchPayload": {"File": "input.txt"}}]}]}}`)
	p := req.Job.ParameterizedJob
	if p == nil || p.Payload != "optional" || len(p.MetaRequired) != 1 || len(p.MetaOptional) != 1 || !req.Job.IsParameterized() {
		t.Fatalf("parameterized %+v", p)
	}
	if d := req.Job.TaskGroups[0].Tasks[0].DispatchPayload; d == nil || d.File != "input.txt" {
		t.Fatalf("dispatch payload %+v", d)
	}
}
