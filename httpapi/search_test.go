package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestSearch: prefix search answers the IDs per context, "all" every
// context; fuzzy search finds names inside jobs with their scope.
func TestSearch(t *testing.T) {
	e := newEnv(t)
	e.registerJobs("web", "webapp", "api")
	_, body := e.do(http.MethodPut, "/v1/search", []byte(`{"Prefix": "we", "Context": "jobs"}`))
	var sr struct {
		Matches     map[string][]string
		Truncations map[string]bool
	}
	if err := json.Unmarshal([]byte(body), &sr); err != nil || strings.Join(sr.Matches["jobs"], ",") != "web,webapp" || sr.Truncations["jobs"] {
		t.Fatalf("prefix search: %s", body)
	}
	// Eval IDs are random UUIDs: the evals expected under "de" are the
	// listed ones whose ID begins with it (usually none).
	_, evalsBody := e.do(http.MethodGet, "/v1/evaluations", nil)
	var evals []struct{ ID string }
	if err := json.Unmarshal([]byte(evalsBody), &evals); err != nil || len(evals) == 0 {
		t.Fatalf("list evals: %v %s", err, evalsBody)
	}
	var wantEvals []string
	for _, ev := range evals {
		if strings.HasPrefix(ev.ID, "de") {
			wantEvals = append(wantEvals, ev.ID)
		}
	}
	_, body = e.do(http.MethodPut, "/v1/search", []byte(`{"Prefix": "de", "Context": "all"}`))
	_ = json.Unmarshal([]byte(body), &sr)
	if strings.Join(sr.Matches["namespaces"], ",") != "default" || len(sr.Matches["evals"]) != len(wantEvals) {
		t.Fatalf("search all: %s (want evals %v)", body, wantEvals)
	}
	_, body = e.do(http.MethodPut, "/v1/search/fuzzy", []byte(`{"Text": "serv", "Context": "all"}`))
	var fr struct {
		Matches map[string][]struct {
			ID    string
			Scope []string
		}
	}
	if err := json.Unmarshal([]byte(body), &fr); err != nil || len(fr.Matches["tasks"]) != 3 ||
		fr.Matches["tasks"][0].ID != "server" || len(fr.Matches["tasks"][0].Scope) != 3 {
		t.Fatalf("fuzzy search: %s", body)
	}
	_, body = e.do(http.MethodPut, "/v1/search/fuzzy", []byte(`{"Text": "app", "Context": "jobs"}`))
	if err := json.Unmarshal([]byte(body), &fr); err != nil || len(fr.Matches["jobs"]) != 1 || fr.Matches["jobs"][0].ID != "webapp" ||
		strings.Join(fr.Matches["jobs"][0].Scope, "/") != "default/webapp" {
		t.Fatalf("fuzzy jobs: %s", body)
	}
}

// TestSearchBadInput: an unknown context, a fuzzy text under two
// characters, an unknown field: 400 naming it.
func TestSearchBadInput(t *testing.T) {
	e := newEnv(t)
	cases := []struct{ path, body, want string }{
		{"/v1/search", `{"Prefix": "a", "Context": "volumes"}`, "Context"},
		{"/v1/search", `{"Prefx": "a"}`, "Prefx"},
		{"/v1/search/fuzzy", `{"Text": "a"}`, "Text"},
		{"/v1/search/fuzzy", `{"Text": "ab", "Context": "plugins"}`, "Context"},
	}
	for _, c := range cases {
		resp, body := e.do(http.MethodPut, c.path, []byte(c.body))
		if resp.StatusCode != 400 || !strings.Contains(body, c.want) {
			t.Errorf("PUT %s %s: %d %q, want 400 naming %s", c.path, c.body, resp.StatusCode, body, c.want)
		}
	}
}
