package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJobDispatchAndPeriodicForce: job run of a parameterized and of a
// periodic job prints Nomad's registration lines; job dispatch sends meta
// and the payload file (a refused dispatch names the field); job periodic
// force launches a child.
func TestJobDispatchAndPeriodicForce(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	r := ta.run(t, "job", "run", "testdata/proc.nomad.hcl")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Job registration successful")
	r = ta.run(t, "job", "run", "testdata/report.nomad.hcl")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Job registration successful", "Approximate next launch time: ")

	payload := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(payload, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = ta.run(t, "job", "dispatch", "-detach", "proc", payload)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Meta: dispatch did not provide required meta keys: input")
	r = ta.run(t, "job", "dispatch", "-detach", "-meta", "input=a", "proc")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Payload: payload is not provided")
	r = ta.run(t, "job", "dispatch", "-meta", "input=a", "proc", payload)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Dispatched Job ID = proc/dispatch-", "Evaluation ID     = ", `finished with status "complete"`)
	child := strings.TrimSpace(strings.SplitN(strings.SplitN(r.stdout, "= ", 2)[1], "\n", 2)[0])
	job, _, err := ta.client.Jobs().Info(child, nil)
	if err != nil || string(job.Payload) != "hello" || job.Meta["input"] != "a" || *job.ParentID != "proc" {
		t.Fatalf("child %q: %+v %v", child, job, err)
	}

	r = ta.run(t, "job", "periodic", "force", "-detach", "report")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Force periodic successful", "Evaluation ID: ")
	// The payload from standard input ("-").
	var out, errb bytes.Buffer
	code := runIO(withAddress([]string{"job", "dispatch", "-detach", "-meta", "input=b", "proc", "-"}, ta.addr), strings.NewReader("from stdin"), &out, &errb)
	if code != 0 {
		t.Fatalf("dispatch from stdin: %d %s %s", code, out.String(), errb.String())
	}
	stdinChild := strings.TrimSpace(strings.SplitN(strings.SplitN(out.String(), "= ", 2)[1], "\n", 2)[0])
	if job, _, err := ta.client.Jobs().Info(stdinChild, nil); err != nil || string(job.Payload) != "from stdin" {
		t.Fatalf("child %q from stdin: %v", stdinChild, err)
	}
	r = ta.run(t, "job", "status", "proc")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Parameterized", "Children Job Summary", "Dispatched Jobs", child)
	r = ta.run(t, "job", "status", "report")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Next Periodic Launch", "Previously Launched Jobs", "report/periodic-")
	r = ta.run(t, "job", "periodic", "force", "proc")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "is not periodic")
}
