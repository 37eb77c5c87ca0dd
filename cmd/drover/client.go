package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/nomad/api"
)

// defaultAddr is where commands find the agent when neither -address nor
// DROVER_ADDR says otherwise.
const defaultAddr = "http://127.0.0.1:4646"

// clientFlags registers the flags every API command takes.
type clientFlags struct {
	address   *string
	namespace *string
	verbose   *bool
}

// newCommandFlags returns the flag set of an API command, with the common
// client flags and a usage line printed above the flags' defaults.
func newCommandFlags(name, usage string, stderr io.Writer) (*flag.FlagSet, *clientFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	return fs, cf
}

func addClientFlags(fs *flag.FlagSet) *clientFlags {
	return &clientFlags{
		address:   fs.String("address", "", "address of the drover agent (default $DROVER_ADDR or "+defaultAddr+")"),
		namespace: fs.String("namespace", "", "target namespace (default \"default\")"),
		verbose:   fs.Bool("verbose", false, "show full IDs"),
	}
}

// client returns Nomad's Go API client pointed at drover: drover speaks
// Nomad's HTTP API, so the official client is its client too.
func (c *clientFlags) client() (*api.Client, error) {
	cfg := api.DefaultConfig()
	cfg.Address = addressFrom(*c.address)
	if *c.namespace != "" {
		cfg.Namespace = *c.namespace
	}
	return api.NewClient(cfg)
}

func addressFrom(flagValue string) string {
	addr := flagValue
	if addr == "" {
		addr = os.Getenv("DROVER_ADDR")
	}
	if addr == "" {
		addr = defaultAddr
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return addr
}

// short shortens an ID to 8 characters unless verbose, as Nomad's CLI.
func (c *clientFlags) short(id string) string {
	if *c.verbose || len(id) <= 8 {
		return id
	}
	return id[:8]
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
}

// printList prints n rows under a tab-separated header as an aligned
// table, or the empty message when there are none.
func printList(w io.Writer, empty, header string, n int, row func(i int) string) {
	if n == 0 {
		fmt.Fprintln(w, empty)
		return
	}
	tw := newTable(w)
	fmt.Fprintln(tw, header)
	for i := 0; i < n; i++ {
		fmt.Fprintln(tw, row(i))
	}
	tw.Flush()
}

// formatTime renders a time as Nomad's CLI does.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "N/A"
	}
	return t.Local().Format("2006-01-02T15:04:05Z07:00")
}

func formatUnixNano(n int64) string {
	if n == 0 {
		return "N/A"
	}
	return formatTime(time.Unix(0, n))
}

// ago renders how long ago t was ("3s ago", "2m10s ago").
func ago(t time.Time) string {
	if t.IsZero() {
		return "N/A"
	}
	d := time.Since(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String() + " ago"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// errorf prints an error the way Nomad's CLI does and returns exit code 1.
func errorf(w io.Writer, format string, args ...any) int {
	fmt.Fprintf(w, "Error "+format+"\n", args...)
	return 1
}

// oneArg parses fs and requires exactly one positional argument.
func oneArg(fs *flag.FlagSet, args []string, what string) (string, bool) {
	if err := fs.Parse(args); err != nil {
		return "", false
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(fs.Output(), "This command takes one argument: <%s>\n", what)
		fs.Usage()
		return "", false
	}
	return fs.Arg(0), true
}
