package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAllocFS: directories are listed, files printed (whole, -tail,
// -stat); a path out of the allocation's directory is refused.
func TestAllocFS(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	job := shellJobJSON(t, "files", `printf 'one\ntwo\nthree\n'; while true; do sleep 1; done`)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "f.json", job)), 0)
	a := ta.allocsOf(t, "files", 1)[0]
	id := a.ID[:8]
	waitFor(t, 10*time.Second, "the task's output", func() bool {
		r := ta.run(t, "alloc", "fs", id, "alloc/logs/server.stdout.0")
		return r.code == 0 && r.stdout == "one\ntwo\nthree\n"
	})
	r := ta.run(t, "alloc", "fs", id)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Mode", "Name", "alloc/", "server/")
	r = ta.run(t, "alloc", "fs", id, "alloc/logs")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "server.stdout.0", "14 B")
	r = ta.run(t, "alloc", "fs", "-tail", "-n", "2", id, "alloc/logs/server.stdout.0")
	mustCode(t, r, 0)
	if r.stdout != "two\nthree\n" {
		t.Fatalf("-tail -n 2:\n%s", r)
	}
	r = ta.run(t, "alloc", "fs", "-tail", "-c", "6", id, "alloc/logs/server.stdout.0")
	mustCode(t, r, 0)
	if r.stdout != "three\n" {
		t.Fatalf("-tail -c 6:\n%s", r)
	}
	r = ta.run(t, "alloc", "fs", "-stat", "-H", id, "alloc/logs/server.stdout.0")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "server.stdout.0", "14")

	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("no"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = ta.run(t, "alloc", "fs", id, "../../../..")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "403", "escapes the allocation directory")
}
