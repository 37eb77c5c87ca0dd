package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/drover-sched/drover/httpapi"
)

// TestPurgedJobHasNoHistory: after a purge, the job's versions are gone
// from the API (404), and a job registered again under the same ID lists
// only its own versions and cannot be reverted to the purged job's, as
// in Nomad, although the store keeps the old versions for their allocs.
func TestPurgedJobHasNoHistory(t *testing.T) {
	e := newEnv(t)
	for _, body := range []string{goodJob, strings.Replace(goodJob, `"Count": 2`, `"Count": 3`, 1)} {
		if resp, msg := e.do(http.MethodPut, "/v1/jobs", []byte(body)); resp.StatusCode != http.StatusOK {
			t.Fatalf("register: %d %s", resp.StatusCode, msg)
		}
	}
	versions := func() (int, []uint64) {
		t.Helper()
		resp, body := e.do(http.MethodGet, "/v1/job/web/versions", nil)
		var out httpapi.JobVersionsResponse
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal([]byte(body), &out); err != nil {
				t.Fatal(err)
			}
		}
		var vs []uint64
		for _, v := range out.Versions {
			vs = append(vs, v.Version)
		}
		return resp.StatusCode, vs
	}
	if code, vs := versions(); code != http.StatusOK || len(vs) != 2 {
		t.Fatalf("versions before the purge: %d %v", code, vs)
	}
	if resp, msg := e.do(http.MethodDelete, "/v1/job/web?purge=true", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("purge: %d %s", resp.StatusCode, msg)
	}
	if code, vs := versions(); code != http.StatusNotFound {
		t.Fatalf("versions of a purged job: %d %v, want 404", code, vs)
	}
	if resp, msg := e.do(http.MethodPut, "/v1/jobs", []byte(goodJob)); resp.StatusCode != http.StatusOK {
		t.Fatalf("register again: %d %s", resp.StatusCode, msg)
	}
	code, vs := versions()
	if code != http.StatusOK || len(vs) != 1 {
		t.Fatalf("versions of the job registered again: %d %v, want only its own", code, vs)
	}
	for _, old := range []uint64{0, 1} {
		if old == vs[0] {
			continue
		}
		body := fmt.Sprintf(`{"JobID": "web", "JobVersion": %d}`, old)
		if resp, msg := e.do(http.MethodPut, "/v1/job/web/revert", []byte(body)); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("revert to the purged job's version %d: %d %s, want 404", old, resp.StatusCode, msg)
		}
	}
}
