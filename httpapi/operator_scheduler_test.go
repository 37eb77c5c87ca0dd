package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestSchedulerConfiguration: the configuration reads back as written,
// ?cas= applies only at the stored index, bad input is a 400.
func TestSchedulerConfiguration(t *testing.T) {
	e := newEnv(t)
	_, body := e.do(http.MethodGet, "/v1/operator/scheduler/configuration", nil)
	if !strings.Contains(body, `"SchedulerAlgorithm":"binpack"`) || !strings.Contains(body, `"PauseEvalBroker":false`) {
		t.Fatalf("default: %s", body)
	}
	resp, body := e.do(http.MethodPut, "/v1/operator/scheduler/configuration", []byte(`{"SchedulerAlgorithm": "spread", "PauseEvalBroker": true}`))
	if resp.StatusCode != 200 || !strings.Contains(body, `"Updated":true`) {
		t.Fatalf("set: %d %s", resp.StatusCode, body)
	}
	_, body = e.do(http.MethodGet, "/v1/operator/scheduler/configuration", nil)
	if !strings.Contains(body, `"SchedulerAlgorithm":"spread"`) || !strings.Contains(body, `"PauseEvalBroker":true`) {
		t.Fatalf("read back: %s", body)
	}
	if _, body = e.do(http.MethodPut, "/v1/operator/scheduler/configuration?cas=1", []byte(`{"SchedulerAlgorithm": "binpack"}`)); !strings.Contains(body, `"Updated":false`) {
		t.Fatalf("stale cas: %s", body)
	}
	for _, c := range []struct{ path, body, want string }{
		{"/v1/operator/scheduler/configuration", `{"SchedulerAlgorithm": "random"}`, "SchedulerAlgorithm"},
		{"/v1/operator/scheduler/configuration", `{"PauseEvalBrokr": true}`, "PauseEvalBrokr"},
		{"/v1/operator/scheduler/configuration?cas=x", `{}`, "cas"},
	} {
		resp, body := e.do(http.MethodPut, c.path, []byte(c.body))
		if resp.StatusCode != 400 || !strings.Contains(body, c.want) {
			t.Errorf("PUT %s %s: %d %q, want 400 naming %s", c.path, c.body, resp.StatusCode, body, c.want)
		}
	}
	if _, body = e.do(http.MethodGet, "/v1/operator/scheduler/configuration", nil); !strings.Contains(body, `"SchedulerAlgorithm":"spread"`) {
		t.Fatalf("bad input changed the configuration: %s", body)
	}
}

// TestAllocationRoutesUnknownAlloc: stop and checks of an unknown alloc
// are 404s.
func TestAllocationRoutesUnknownAlloc(t *testing.T) {
	e := newEnv(t)
	if resp, _ := e.do(http.MethodPut, "/v1/allocation/nope/stop", nil); resp.StatusCode != 404 {
		t.Fatalf("stop: %d", resp.StatusCode)
	}
	if resp, _ := e.do(http.MethodGet, "/v1/client/allocation/nope/checks", nil); resp.StatusCode != 404 {
		t.Fatalf("checks: %d", resp.StatusCode)
	}
}
