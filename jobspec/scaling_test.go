package jobspec

import "testing"

// TestScalingDecodes: a group scaling block is kept with Nomad's defaults
// (enabled, type horizontal; count from min when unset) and its policy
// stored as given.
func TestScalingDecodes(t *testing.T) {
	req := decode(t, `{"Job": {"ID": "web", "TaskGroups": [{"Name": "web",
		"Scaling": {"Min": 2, "Max": 5, "Policy": {"cooldown": "1m", "check": {"cpu": {"source": "prometheus"}}}},
		"Tasks": [{"Name": "server", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["1"]}}]}]}}`)
	tg := req.Job.TaskGroups[0]
	p := tg.Scaling
	if p == nil || p.Min != 2 || p.Max != 5 || !p.Enabled || p.Type != "horizontal" || tg.Count != 2 {
		t.Fatalf("scaling %+v, count %d", p, tg.Count)
	}
	if check, _ := p.Policy["check"].(map[string]any); check == nil || p.Policy["cooldown"] != "1m" {
		t.Fatalf("policy %v", p.Policy)
	}
	ps := req.Job.ScalingPolicies()
	if len(ps) != 1 || ps[0].Target["Group"] != "web" || ps[0].Target["Job"] != "web" || ps[0].Target["Namespace"] != "default" || len(ps[0].ID) != 36 {
		t.Fatalf("policies %+v", ps[0])
	}
}
