package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestAllocExec: the command runs in the task's environment and
// directory with stdin passed on (-i), and its exit code is the
// command's; -i=false sends no input.
func TestAllocExec(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	mustCode(t, ta.run(t, "job", "run", writeFile(t, "e.json", serviceJobJSON("execd", 1))), 0)
	a := ta.allocsOf(t, "execd", 1)[0]
	run := func(stdin string, args ...string) result {
		var out, errb bytes.Buffer
		code := runIO(withAddress(append([]string{"alloc", "exec"}, args...), ta.addr), strings.NewReader(stdin), &out, &errb)
		return result{stdout: out.String(), stderr: errb.String(), code: code}
	}
	r := run("ping\n", a.ID[:8], "/bin/sh", "-c", `read l; echo "in:$l task:$NOMAD_TASK_NAME"; basename "$PWD"; echo oops >&2; exit 4`)
	mustCode(t, r, 4)
	if r.stdout != "in:ping task:server\nserver\n" || r.stderr != "oops\n" {
		t.Fatalf("exec output:\n%s", r)
	}
	r = run("ping\n", "-i=false", "-task", "server", a.ID[:8], "/bin/sh", "-c", `read l || echo no-input`)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "no-input")
	r = run("", "-job", "execd", "/bin/true")
	mustCode(t, r, 0)

	r = run("", "-task", "db", a.ID[:8], "/bin/true")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, `could not find task named "db"`)
	r = run("", a.ID[:8])
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "This command takes at least two arguments")
}
