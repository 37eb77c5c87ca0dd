package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestEvalList(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	r := ta.run(t, "eval", "list")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "No evals found")
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "a.json", serviceJobJSON("one", 1))), 0)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "b.json", serviceJobJSON("two", 1))), 0)
	mustCode(t, ta.run(t, "job", "stop", "-detach", "two"), 0)

	r = ta.run(t, "eval", "list")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Triggered By", "job-register", "job-deregister", "one", "two")
	r = ta.run(t, "eval", "list", "-job", "one")
	mustCode(t, r, 0)
	if strings.Contains(r.stdout, "two") {
		t.Fatalf("-job one lists two:\n%s", r.stdout)
	}
	r = ta.run(t, "eval", "list", "-filter", `TriggeredBy == "job-deregister"`, "-json")
	mustCode(t, r, 0)
	var evals []struct{ JobID, TriggeredBy string }
	if err := json.Unmarshal([]byte(r.stdout), &evals); err != nil || len(evals) != 1 || evals[0].JobID != "two" {
		t.Fatalf("-filter: %v\n%s", err, r.stdout)
	}
	r = ta.run(t, "eval", "list", "-per-page", "1")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Results have been paginated", "-page-token ")
	token := r.stdout[strings.LastIndex(r.stdout, "-page-token ")+len("-page-token "):]
	r = ta.run(t, "eval", "list", "-per-page", "1", "-page-token", strings.TrimSpace(token))
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Triggered By")
}
