package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/drover-sched/drover/httpapi"
	"github.com/drover-sched/drover/structs"
)

// TestJobScale: a scale request sets the group's count in a new version
// with an evaluation triggered by job-scaling; the scale status shows the
// desired count and the event with its message; an index that is no
// longer the job's is a 409 and changes nothing.
func TestJobScale(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, body := e.do(http.MethodPut, "/v1/jobs", []byte(goodJob))
	var reg httpapi.JobRegisterResponse
	_ = json.Unmarshal([]byte(body), &reg)
	resp, body := e.do(http.MethodPost, "/v1/job/web/scale",
		[]byte(fmt.Sprintf(`{"Count": 4, "Target": {"Group": "web"}, "Message": "more", "JobModifyIndex": %d}`, reg.JobModifyIndex)))
	if resp.StatusCode != 200 {
		t.Fatalf("scale: %d %s", resp.StatusCode, body)
	}
	var sr httpapi.JobRegisterResponse
	_ = json.Unmarshal([]byte(body), &sr)
	ev, err := e.store.Eval(ctx, sr.EvalID)
	if err != nil || ev.TriggeredBy != structs.EvalTriggerScaling {
		t.Fatalf("scale eval: %+v %v", ev, err)
	}
	if j, _ := e.store.Job(ctx, "default", "web"); j.TaskGroups[0].Count != 4 || j.Version != 1 {
		t.Fatalf("scaled job: count %d version %d", j.TaskGroups[0].Count, j.Version)
	}
	_, body = e.do(http.MethodGet, "/v1/job/web/scale", nil)
	var st struct {
		JobID      string
		TaskGroups map[string]struct {
			Desired int
			Events  []struct {
				Message       string
				Count         *int64
				PreviousCount int64
				EvalID        *string
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	g := st.TaskGroups["web"]
	if st.JobID != "web" || g.Desired != 4 || len(g.Events) != 1 || g.Events[0].Message != "more" || *g.Events[0].Count != 4 ||
		g.Events[0].PreviousCount != 2 || *g.Events[0].EvalID != sr.EvalID {
		t.Fatalf("scale status: %s", body)
	}
	// The index the request names is no longer the job's.
	resp, body = e.do(http.MethodPost, "/v1/job/web/scale",
		[]byte(fmt.Sprintf(`{"Count": 1, "Target": {"Group": "web"}, "JobModifyIndex": %d}`, reg.JobModifyIndex)))
	if resp.StatusCode != 409 {
		t.Fatalf("stale index: %d %s", resp.StatusCode, body)
	}
	if j, _ := e.store.Job(ctx, "default", "web"); j.TaskGroups[0].Count != 4 {
		t.Fatal("a refused scale changed the job")
	}
}

// TestJobScaleBadInput: 400 naming the field, nothing written.
func TestJobScaleBadInput(t *testing.T) {
	e := newEnv(t)
	e.do(http.MethodPut, "/v1/jobs", []byte(goodJob))
	cases := []struct{ body, want string }{
		{`{"Count": 3}`, "Target.Group"},
		{`{"Count": 3, "Target": {"Group": "nope"}}`, "Target.Group"},
		{`{"Count": -1, "Target": {"Group": "web"}}`, "Count"},
		{`{"Count": 3, "Target": {"Group": "web", "Tsk": "x"}}`, "Target"},
		{`{"Cont": 3, "Target": {"Group": "web"}}`, "Cont"},
		{`{"Count": 3, "Target": {"Group": "web", "Job": "other"}}`, "Target.Job"},
	}
	for _, c := range cases {
		resp, body := e.do(http.MethodPost, "/v1/job/web/scale", []byte(c.body))
		if resp.StatusCode != 400 || !strings.Contains(body, c.want) {
			t.Errorf("scale %s: %d %q, want 400 naming %s", c.body, resp.StatusCode, body, c.want)
		}
	}
	if j, _ := e.store.Job(context.Background(), "default", "web"); j.Version != 0 {
		t.Fatalf("bad input wrote version %d", j.Version)
	}
	if resp, _ := e.do(http.MethodPost, "/v1/job/nope/scale", []byte(`{"Count": 1, "Target": {"Group": "web"}}`)); resp.StatusCode != 404 {
		t.Fatalf("unknown job: %d", resp.StatusCode)
	}
}
