package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// JobDispatchCommand is `drover job dispatch`: dispatch a parameterized
// job with a payload and meta.
type JobDispatchCommand struct{ Meta }

func (c *JobDispatchCommand) Synopsis() string { return "Dispatch an instance of a parameterized job" }

func (c *JobDispatchCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job dispatch [options] <parameterized job> [input source]

  Dispatches a child of the parameterized job, as Nomad's "job dispatch".
  The input source is a file whose content is the payload, or "-" to read
  it from standard input (at most 16 KiB). The child's evaluation is
  monitored unless -detach.
` + clientOptionsUsage() + `

Dispatch Options:

  -meta <key>=<value>
    A meta value for the child; may be given more than once. The job's
    parameterized block says which keys are required and allowed.

  -id-prefix-template <prefix>
    Put this prefix into the child's ID, before its random suffix.

  -idempotency-token <token>
    While a child dispatched with this token is not dead, return it
    instead of dispatching another.

  -priority <priority>
    The child's priority (default: the job's).

  -detach
    Return after dispatching, printing the child's ID and evaluation ID.

  -verbose
    Show full IDs.`)
}

func (c *JobDispatchCommand) Run(args []string) int {
	fs := c.FlagSet("job dispatch", c.Help, flagSetClient)
	detach := fs.Bool("detach", false, "")
	verbose := fs.Bool("verbose", false, "")
	prefix := fs.String("id-prefix-template", "", "")
	token := fs.String("idempotency-token", "", "")
	priority := fs.Int("priority", 0, "")
	var metas stringList
	fs.Var(&metas, "meta", "")
	cl, rest, ok := c.setup(fs, args, 1, 2, "<parameterized job> [input source]")
	if !ok {
		return 1
	}
	meta := map[string]string{}
	for _, kv := range metas {
		k, v, found := strings.Cut(kv, "=")
		if !found || k == "" {
			return c.usageError(fs, "-meta %q is not of the form key=value", kv)
		}
		meta[k] = v
	}
	var payload []byte
	if len(rest) == 2 {
		var err error
		if rest[1] == "-" {
			payload, err = io.ReadAll(io.LimitReader(c.stdin(), 1<<20))
		} else {
			payload, err = os.ReadFile(rest[1])
		}
		if err != nil {
			return c.errorf("reading the payload", err)
		}
	}
	id, ns, err := c.jobByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("querying job", err)
	}
	w := nsWrite(ns)
	w.IdempotencyToken = *token
	resp, _, err := cl.Jobs().DispatchOpts(&api.DispatchOptions{JobID: id, Meta: meta, Payload: payload,
		IdPrefixTemplate: *prefix, Priority: *priority}, w)
	if err != nil {
		return c.errorf("dispatching job", err)
	}
	fmt.Fprintf(c.Stdout, "Dispatched Job ID = %s\n", resp.DispatchedJobID)
	if resp.EvalID == "" {
		return 0 // an earlier dispatch with the same idempotency token
	}
	fmt.Fprintf(c.Stdout, "Evaluation ID     = %s\n", limit(resp.EvalID, *verbose))
	if *detach {
		return 0
	}
	fmt.Fprintln(c.Stdout)
	return newMonitor(&c.Meta, cl, ns, *verbose).run(resp.EvalID)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
