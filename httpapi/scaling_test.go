package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const scaledJob = `{"Job": {"ID": "api", "TaskGroups": [
	{"Name": "web", "Count": 2, "Scaling": {"Min": 1, "Max": 4, "Policy": {"cooldown": "1m"}},
	 "Tasks": [{"Name": "s", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["60"]}}]},
	{"Name": "worker", "Tasks": [{"Name": "w", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["60"]}}]}]}}`

// TestScalingPolicies: a group's scaling block is served at
// /v1/scaling/policies (Nomad's list stubs, filtered by job and type) and
// /v1/scaling/policy/:id (Nomad's policy, its ID stable across versions);
// job scale is refused outside min..max with Nomad's messages, and
// changes nothing.
func TestScalingPolicies(t *testing.T) {
	e := newEnv(t)
	if resp, body := e.do(http.MethodPut, "/v1/jobs", []byte(scaledJob)); resp.StatusCode != 200 {
		t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	var stubs []struct {
		ID      string
		Enabled bool
		Type    string
		Target  map[string]string
	}
	resp, body := e.do(http.MethodGet, "/v1/scaling/policies?job=api", nil)
	if err := json.Unmarshal([]byte(body), &stubs); err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Nomad-Index") == "" {
		t.Fatalf("list: %d %s %v", resp.StatusCode, body, err)
	}
	if len(stubs) != 1 || !stubs[0].Enabled || stubs[0].Type != "horizontal" ||
		stubs[0].Target["Job"] != "api" || stubs[0].Target["Group"] != "web" || stubs[0].Target["Namespace"] != "default" {
		t.Fatalf("stubs %s", body)
	}
	for _, q := range []string{"?job=other", "?type=vertical"} {
		if _, body := e.do(http.MethodGet, "/v1/scaling/policies"+q, nil); strings.TrimSpace(body) != "[]" {
			t.Errorf("filter %s: %s", q, body)
		}
	}
	var p struct {
		ID       string
		Min, Max int64
		Policy   map[string]any
		Target   map[string]string
	}
	_, body = e.do(http.MethodGet, "/v1/scaling/policy/"+stubs[0].ID, nil)
	if err := json.Unmarshal([]byte(body), &p); err != nil || p.ID != stubs[0].ID || p.Min != 1 || p.Max != 4 || p.Policy["cooldown"] != "1m" {
		t.Fatalf("policy: %s %v", body, err)
	}
	if resp, _ := e.do(http.MethodGet, "/v1/scaling/policy/00000000-0000-0000-0000-000000000000", nil); resp.StatusCode != 404 {
		t.Errorf("unknown policy: %d", resp.StatusCode)
	}

	for count, msg := range map[int]string{5: "greater than scaling policy maximum: 5 > 4", 0: "less than scaling policy minimum: 0 < 1"} {
		body := `{"Count": ` + string(rune('0'+count)) + `, "Target": {"Group": "web"}}`
		resp, out := e.do(http.MethodPost, "/v1/job/api/scale", []byte(body))
		if resp.StatusCode != 400 || !strings.Contains(out, msg) {
			t.Errorf("scale to %d: %d %s", count, resp.StatusCode, out)
		}
	}
	if resp, out := e.do(http.MethodPost, "/v1/job/api/scale", []byte(`{"Count": 3, "Target": {"Group": "web"}}`)); resp.StatusCode != 200 {
		t.Fatalf("scale within bounds: %d %s", resp.StatusCode, out)
	}
	// The new version keeps the policy's ID.
	_, body = e.do(http.MethodGet, "/v1/scaling/policies", nil)
	if !strings.Contains(body, stubs[0].ID) {
		t.Fatalf("policy ID changed with the version: %s", body)
	}
	// A stopped job's policies are disabled.
	e.do(http.MethodDelete, "/v1/job/api", nil)
	_, body = e.do(http.MethodGet, "/v1/scaling/policy/"+stubs[0].ID, nil)
	if !strings.Contains(body, `"Enabled":false`) {
		t.Fatalf("stopped job's policy: %s", body)
	}
}
