package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// tailBytesPerLine is the guess of line length used to fetch enough of a
// log's end for -tail -n.
const tailBytesPerLine = 256

// AllocLogsCommand is `drover alloc logs`: a task's stdout or stderr
// through the agent's /v1/client/fs/logs route, read with Nomad's Go
// client as Nomad's CLI does.
type AllocLogsCommand struct{ Meta }

func (c *AllocLogsCommand) Synopsis() string {
	return "Shows a task's stdout or stderr (-stderr, -f, -tail)"
}

func (c *AllocLogsCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover alloc logs [options] <allocation> [<task>]

  Prints the task's stdout (or stderr). The task may be left out when the
  allocation's group has one task.
` + clientOptionsUsage() + `

Logs Options:

  -stderr
    Show the task's stderr instead of its stdout.

  -f
    Follow the output until the task is dead (or Ctrl-C).

  -tail
    Show the end of the output: -n lines (default 10) or -c bytes.

  -n=<lines>, -c=<bytes>
    With -tail (only): how many lines, or bytes, from the end; one of
    them, at least 0.`)
}

func (c *AllocLogsCommand) Run(args []string) int {
	fs := c.FlagSet("alloc logs", c.Help, flagSetClient)
	useStderr := fs.Bool("stderr", false, "")
	follow := fs.Bool("f", false, "")
	tail := fs.Bool("tail", false, "")
	lines := fs.Int("n", 10, "")
	nbytes := fs.Int64("c", 0, "")
	verbose := fs.Bool("verbose", false, "")
	cl, rest, ok := c.setup(fs, args, 1, 2, "<allocation> [<task>]")
	if !ok {
		return 1
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch {
	case *lines < 0:
		return c.errorf("", fmt.Errorf("-n %d: must not be negative (lines from the end, with -tail)", *lines))
	case *nbytes < 0:
		return c.errorf("", fmt.Errorf("-c %d: must not be negative (bytes from the end, with -tail)", *nbytes))
	case given["n"] && given["c"]:
		return c.errorf("", fmt.Errorf("-n and -c: give one of them (lines or bytes from the end)"))
	case (given["n"] || given["c"]) && !*tail:
		return c.errorf("", fmt.Errorf("-n and -c count from the end: they need -tail"))
	}
	alloc, err := c.allocByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("", err)
	}
	task := ""
	if len(rest) == 2 {
		task = rest[1]
	} else {
		names := allocTaskNames(alloc)
		if len(names) != 1 {
			return c.errorf("", fmt.Errorf("allocation %s has %d tasks; name one of: %s", limit(alloc.ID, *verbose), len(names), strings.Join(names, ", ")))
		}
		task = names[0]
	}
	logType := "stdout"
	if *useStderr {
		logType = "stderr"
	}

	cancel := make(chan struct{})
	sigCh := make(chan os.Signal, 1)
	signal.Notify(sigCh, os.Interrupt)
	defer signal.Stop(sigCh)
	go func() {
		if _, ok := <-sigCh; ok {
			close(cancel)
		}
	}()

	origin, offset := "start", int64(0)
	if *tail {
		origin = "end"
		switch {
		case given["c"]:
			offset = *nbytes
		case *lines > 0:
			// Read a generous end of the log, keep its last lines, and
			// (when following) go on from there.
			var buf bytes.Buffer
			if err := streamLogs(cl, alloc, false, task, logType, "end", int64(*lines)*tailBytesPerLine, cancel, &buf); err != nil {
				return c.errorf("reading logs", err)
			}
			if _, err := c.Stdout.Write(lastLines(buf.Bytes(), *lines)); err != nil {
				return 1
			}
			if !*follow {
				return 0
			}
			origin, offset = "end", 0
		default:
			origin, offset = "end", 0
		}
	}
	if err := streamLogs(cl, alloc, *follow, task, logType, origin, offset, cancel, c.Stdout); err != nil {
		return c.errorf("reading logs", err)
	}
	return 0
}

// streamLogs copies a task's log stream to w until it ends or cancel.
func streamLogs(c *api.Client, alloc *api.Allocation, follow bool, task, logType, origin string, offset int64,
	cancel chan struct{}, w io.Writer) error {
	frames, errCh := c.AllocFS().Logs(alloc, follow, task, logType, origin, offset, cancel, nil)
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return nil
			}
			if _, err := w.Write(f.Data); err != nil {
				return err
			}
		case err := <-errCh:
			return err
		case <-cancel:
			return nil
		}
	}
}

// lastLines returns the last n lines of b.
func lastLines(b []byte, n int) []byte {
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	i := end
	for count := 0; i > 0; i-- {
		if b[i-1] == '\n' {
			count++
			if count == n {
				break
			}
		}
	}
	return b[i:]
}

// allocTaskNames lists the tasks of an alloc's group, sorted.
func allocTaskNames(a *api.Allocation) []string {
	var names []string
	if a.Job != nil {
		for _, tg := range a.Job.TaskGroups {
			if tg.Name != nil && *tg.Name == a.TaskGroup {
				for _, t := range tg.Tasks {
					names = append(names, t.Name)
				}
			}
		}
	}
	if len(names) == 0 {
		for n := range a.TaskStates {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}
