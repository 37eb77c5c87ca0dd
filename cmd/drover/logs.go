package main

import (
	"bytes"
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

// runAllocLogs is `drover alloc logs [-stderr] [-f] [-tail [-n N | -c N]]
// ALLOC [TASK]`: a task's output through the agent's
// /v1/client/fs/logs endpoint, read with Nomad's Go client as Nomad's
// CLI does.
func runAllocLogs(args []string, stdout, stderr io.Writer) int {
	fs, cf := newCommandFlags("alloc logs", "Usage: drover alloc logs [-stderr] [-f] [-tail [-n N | -c N]] ALLOC [TASK]", stderr)
	useStderr := fs.Bool("stderr", false, "show the task's stderr instead of its stdout")
	follow := fs.Bool("f", false, "follow the output until the task is dead (or Ctrl-C)")
	tail := fs.Bool("tail", false, "show the end of the output: -n lines (default 10), or -c bytes")
	lines := fs.Int("n", 10, "with -tail: number of lines")
	nbytes := fs.Int64("c", 0, "with -tail: number of bytes (instead of lines)")
	if err := fs.Parse(args); err != nil {
		return 1
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fmt.Fprintln(stderr, "This command takes one or two arguments: <alloc> [<task>]")
		fs.Usage()
		return 1
	}
	c, err := cf.client()
	if err != nil {
		return errorf(stderr, "initializing client: %v", err)
	}
	full, err := resolvePrefix(fs.Arg(0), "allocation", func(p string) ([]string, error) {
		stubs, _, err := c.Allocations().PrefixList(p)
		ids := make([]string, 0, len(stubs))
		for _, s := range stubs {
			ids = append(ids, s.ID)
		}
		return ids, err
	})
	if err != nil {
		return errorf(stderr, "%v", err)
	}
	alloc, _, err := c.Allocations().Info(full, nil)
	if err != nil {
		return errorf(stderr, "querying allocation: %v", err)
	}
	task := fs.Arg(1)
	if task == "" {
		names := allocTaskNames(alloc)
		if len(names) != 1 {
			return errorf(stderr, "allocation %s has %d tasks; name one of: %s", cf.short(alloc.ID), len(names), strings.Join(names, ", "))
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
		case *nbytes > 0:
			offset = *nbytes
		case *lines > 0:
			// Read a generous end of the log, keep its last lines, and
			// (when following) go on from there.
			guess := int64(*lines) * tailBytesPerLine
			var buf bytes.Buffer
			if err := streamLogs(c, alloc, false, task, logType, "end", guess, cancel, &buf); err != nil {
				return errorf(stderr, "reading logs: %v", err)
			}
			last := lastLines(buf.Bytes(), *lines)
			if _, err := stdout.Write(last); err != nil {
				return 1
			}
			if !*follow {
				return 0
			}
			// Go on where the tail read ended: what came after it.
			origin, offset = "end", 0
		default:
			origin, offset = "end", 0
		}
	}
	if err := streamLogs(c, alloc, *follow, task, logType, origin, offset, cancel, stdout); err != nil {
		return errorf(stderr, "reading logs: %v", err)
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
