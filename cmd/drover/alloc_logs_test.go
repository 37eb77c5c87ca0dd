package main

import (
	"strings"
	"testing"
	"time"
)

func TestAllocLogs(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	job := writeFile(t, "talk.json", `{"Job": {"ID": "talk", "Type": "batch", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "say", "Driver": "raw_exec",
		"Config": {"command": "/bin/sh", "args": ["-c", "for i in 1 2 3 4 5; do echo line$i; done; echo oops >&2"]},
		"Resources": {"CPU": 100, "MemoryMB": 32}}]}]}}`)
	mustCode(t, ta.run(t, "job", "run", job), 0)
	a := ta.allocsOf(t, "talk", 1)[0]
	waitFor(t, 20*time.Second, "the batch task to finish", func() bool {
		al, _, err := ta.client.Allocations().Info(a.ID, nil)
		return err == nil && al.ClientStatus == "complete"
	})
	r := ta.run(t, "alloc", "logs", a.ID[:8])
	mustCode(t, r, 0)
	if r.stdout != "line1\nline2\nline3\nline4\nline5\n" {
		t.Fatalf("stdout: %q", r.stdout)
	}
	r = ta.run(t, "alloc", "logs", "-stderr", a.ID, "say")
	mustCode(t, r, 0)
	if r.stdout != "oops\n" {
		t.Fatalf("stderr: %q", r.stdout)
	}
	r = ta.run(t, "alloc", "logs", "-tail", "-n", "2", a.ID)
	mustCode(t, r, 0)
	if r.stdout != "line4\nline5\n" {
		t.Fatalf("-tail -n 2: %q", r.stdout)
	}
	r = ta.run(t, "alloc", "logs", a.ID, "nope")
	if r.code == 0 || !strings.Contains(r.stderr, "Error reading logs: ") {
		t.Fatalf("unknown task: %s", r)
	}
	// Negative counts are refused naming the flag (they printed nothing,
	// or the default 10 lines).
	for _, bad := range [][]string{{"-n", "-5"}, {"-c", "-3"}} {
		r = ta.run(t, append(append([]string{"alloc", "logs", "-tail"}, bad...), a.ID)...)
		mustCode(t, r, 1)
		mustContain(t, r.stderr, bad[0]+" "+bad[1]+": must not be negative")
	}
	// -c 0, like -n 0, is nothing from the end (it was the default 10 lines).
	for _, zero := range []string{"-n", "-c"} {
		r = ta.run(t, "alloc", "logs", "-tail", zero, "0", a.ID)
		mustCode(t, r, 0)
		if r.stdout != "" {
			t.Fatalf("-tail %s 0: %q", zero, r.stdout)
		}
	}
	r = ta.run(t, "alloc", "logs", "-tail", "-c", "6", a.ID)
	if r.code != 0 || r.stdout != "line5\n" {
		t.Fatalf("-tail -c 6: %s", r)
	}
	r = ta.run(t, "alloc", "logs", "-tail", "-n", "2", "-c", "5", a.ID)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "-n and -c: give one of them")
	r = ta.run(t, "alloc", "logs", "-n", "2", a.ID)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "they need -tail")
}
