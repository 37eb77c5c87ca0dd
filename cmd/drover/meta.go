package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// defaultAddr is where commands find the agent when neither -address nor
// DROVER_ADDR says otherwise.
const defaultAddr = "http://127.0.0.1:4646"

// Meta is what every command shares, as Nomad's command.Meta: where it
// writes, and the client flags (-address, -namespace, -region, -token) that
// FlagSet adds. One Meta value is copied into each command.
type Meta struct {
	// Stdin is the command's input (alloc exec); Stdout and Stderr are
	// its output and error streams.
	Stdin          io.Reader
	Stdout, Stderr io.Writer

	address   string
	namespace string
	region    string
	token     string
	tls       tlsFlags
}

// tlsFlags are the TLS flags of Nomad's CLI.
type tlsFlags struct {
	caCert, caPath, clientCert, clientKey, serverName string
	skipVerify                                        bool
}

// flagSetFlags says which shared flags a FlagSet gets.
type flagSetFlags int

const (
	// flagSetNone: only the command's own flags (agent, version).
	flagSetNone flagSetFlags = 0
	// flagSetClient: the flags of a command that talks to an agent.
	flagSetClient flagSetFlags = 1 << iota
)

// FlagSet returns the flag set of a command: Go's flag semantics
// (-flag and --flag alike, as Nomad's), errors to Stderr, usage printing
// the command's help, and with flagSetClient the client flags.
func (m *Meta) FlagSet(name string, help func() string, fs flagSetFlags) *flag.FlagSet {
	f := flag.NewFlagSet(name, flag.ContinueOnError)
	f.SetOutput(m.Stderr)
	f.Usage = func() { fmt.Fprintln(m.Stderr, help()) }
	if fs&flagSetClient != 0 {
		f.StringVar(&m.address, "address", "", "")
		f.StringVar(&m.namespace, "namespace", "", "")
		f.StringVar(&m.region, "region", "", "")
		f.StringVar(&m.token, "token", "", "")
		f.StringVar(&m.tls.caCert, "ca-cert", "", "")
		f.StringVar(&m.tls.caPath, "ca-path", "", "")
		f.StringVar(&m.tls.clientCert, "client-cert", "", "")
		f.StringVar(&m.tls.clientKey, "client-key", "", "")
		f.StringVar(&m.tls.serverName, "tls-server-name", "", "")
		f.BoolVar(&m.tls.skipVerify, "tls-skip-verify", false, "")
	}
	return f
}

// clientOptionsUsage is the help text of the client flags, appended to the
// help of every command that talks to an agent.
func clientOptionsUsage() string {
	return `
General Options:

  -address=<addr>
    The address of the drover agent. Overrides DROVER_ADDR and
    NOMAD_ADDR.
    Default = ` + defaultAddr + `

  -namespace=<namespace>
    The target namespace for queries and actions bound to a namespace
    ("*" for all, where a command lists or looks an object up).
    Overrides DROVER_NAMESPACE and NOMAD_NAMESPACE. Default = default

  -region=<region>
    The region of the agent (drover runs one: global).

  -token=<secret-id>
    The SecretID of an ACL token (X-Nomad-Token). Overrides DROVER_TOKEN
    and NOMAD_TOKEN.

  -ca-cert=<path>, -ca-path=<dir>
    The CA certificate (or a directory of them) that verifies the agent's
    HTTPS certificate. Overrides DROVER_CACERT / NOMAD_CACERT and
    DROVER_CAPATH / NOMAD_CAPATH.

  -client-cert=<path>, -client-key=<path>
    The client certificate and key, for agents that require one (their
    -tls-ca-file). Overrides DROVER_CLIENT_CERT / NOMAD_CLIENT_CERT and
    DROVER_CLIENT_KEY / NOMAD_CLIENT_KEY.

  -tls-server-name=<name>
    The name to verify the agent's certificate against, when it differs
    from the address's host. Overrides DROVER_TLS_SERVER_NAME and
    NOMAD_TLS_SERVER_NAME.

  -tls-skip-verify
    Do not verify the agent's certificate (not recommended). Overrides
    DROVER_SKIP_VERIFY and NOMAD_SKIP_VERIFY.`
}

// Client returns Nomad's Go API client pointed at drover: drover speaks
// Nomad's HTTP API, so the official client is its client too.
func (m *Meta) Client() (*api.Client, error) {
	cfg := api.DefaultConfig()
	cfg.Address = addressFrom(m.address)
	switch {
	case m.namespace != "":
		cfg.Namespace = m.namespace
	case os.Getenv("DROVER_NAMESPACE") != "":
		cfg.Namespace = os.Getenv("DROVER_NAMESPACE")
	}
	if m.region != "" {
		cfg.Region = m.region
	}
	switch {
	case m.token != "":
		cfg.SecretID = m.token
	case os.Getenv("DROVER_TOKEN") != "":
		cfg.SecretID = os.Getenv("DROVER_TOKEN")
	}
	m.tls.apply(cfg.TLSConfig)
	return api.NewClient(cfg)
}

// apply sets the TLS configuration Nomad's client read from NOMAD_*
// (api.DefaultConfig) from DROVER_* and then the flags, each winning over
// the one before.
func (f tlsFlags) apply(t *api.TLSConfig) {
	pick := func(dst *string, env, flag string) {
		if v := os.Getenv(env); v != "" {
			*dst = v
		}
		if flag != "" {
			*dst = flag
		}
	}
	pick(&t.CACert, "DROVER_CACERT", f.caCert)
	pick(&t.CAPath, "DROVER_CAPATH", f.caPath)
	pick(&t.ClientCert, "DROVER_CLIENT_CERT", f.clientCert)
	pick(&t.ClientKey, "DROVER_CLIENT_KEY", f.clientKey)
	pick(&t.TLSServerName, "DROVER_TLS_SERVER_NAME", f.serverName)
	if v, err := strconv.ParseBool(os.Getenv("DROVER_SKIP_VERIFY")); err == nil {
		t.Insecure = v
	}
	if f.skipVerify {
		t.Insecure = true
	}
}

// Namespace is the namespace the command acts in: the -namespace flag,
// else the environment, else "default".
func (m *Meta) Namespace() string {
	for _, ns := range []string{m.namespace, os.Getenv("DROVER_NAMESPACE"), os.Getenv("NOMAD_NAMESPACE")} {
		if ns != "" {
			return ns
		}
	}
	return api.DefaultNamespace
}

func addressFrom(flagValue string) string {
	addr := flagValue
	for _, env := range []string{"DROVER_ADDR", "NOMAD_ADDR"} {
		if addr == "" {
			addr = os.Getenv(env)
		}
	}
	if addr == "" {
		addr = defaultAddr
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return addr
}

// setup is the preamble every client command shares: it parses args,
// checks that between min and max positional arguments remain (max < 0:
// no limit), and builds the client. On failure it has printed why and
// returns ok false; the command returns 1.
func (m *Meta) setup(fs *flag.FlagSet, args []string, min, max int, what string) (c *api.Client, rest []string, ok bool) {
	if err := fs.Parse(args); err != nil {
		return nil, nil, false
	}
	if n := fs.NArg(); n < min || (max >= 0 && n > max) {
		switch {
		case min == max && min == 0:
			fmt.Fprintln(m.Stderr, "This command takes no arguments")
		case min == max:
			fmt.Fprintf(m.Stderr, "This command takes %s: %s\n", countWord(min), what)
		case max < 0:
			fmt.Fprintf(m.Stderr, "This command takes at least %s: %s\n", countWord(min), what)
		default:
			fmt.Fprintf(m.Stderr, "This command takes %s or %s: %s\n", countWord(min), countWord(max), what)
		}
		fs.Usage()
		return nil, nil, false
	}
	c, err := m.Client()
	if err != nil {
		m.errorf("initializing client", err)
		return nil, nil, false
	}
	return c, fs.Args(), true
}

// listOrShow is the preamble of a status command that lists its objects
// without an argument and shows one object given its ID or prefix: the
// client and the argument ("" to list).
func (m *Meta) listOrShow(fs *flag.FlagSet, args []string, what string) (*api.Client, string, bool) {
	c, rest, ok := m.setup(fs, args, 0, 1, what)
	if !ok {
		return nil, "", false
	}
	if len(rest) == 0 {
		return c, "", true
	}
	return c, rest[0], true
}

func countWord(n int) string {
	switch n {
	case 0:
		return "no arguments"
	case 1:
		return "one argument"
	case 2:
		return "two arguments"
	}
	return fmt.Sprintf("%d arguments", n)
}

// errorf prints an error the way Nomad's CLI does, "Error <doing what>:
// <error>" ("Error: <error>" when what is empty), and returns exit code 1.
func (m *Meta) errorf(what string, err error) int {
	if what == "" {
		fmt.Fprintf(m.Stderr, "Error: %v\n", err)
	} else {
		fmt.Fprintf(m.Stderr, "Error %s: %v\n", what, err)
	}
	return 1
}

// usageError prints a usage problem and the command's help, returning 1.
func (m *Meta) usageError(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(m.Stderr, format+"\n", args...)
	fs.Usage()
	return 1
}
