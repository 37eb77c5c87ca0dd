package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/drover-sched/drover/agent"
	"github.com/drover-sched/drover/nodeagent"
	"github.com/drover-sched/drover/structs"
)

// AgentCommand is `drover agent`: a dev agent (server and node in one
// process), a server, or a client (node agent).
type AgentCommand struct{ Meta }

func (c *AgentCommand) Synopsis() string { return "Runs a drover agent (-dev: all in one)" }

func (c *AgentCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover agent -dev [-data-dir DIR] [-http-addr HOST:PORT]
       drover agent -server -data-dir DIR [-http-addr HOST:PORT]
       drover agent -client -servers HOST:PORT -data-dir DIR [-node-name NAME] [-enable-raw-exec]
       drover agent -client -aws-api URL -aws-table TABLE -data-dir DIR

  Runs a drover agent. -dev runs the API, the evaluator and a node with
  raw_exec in one process (state in -data-dir, or a temporary directory
  removed at exit; its tasks stop with it). -server runs the API, the
  evaluator and the timers; -client runs one node talking to -servers over
  HTTP, or to drover's AWS home with -aws-api.

Agent Options:

  -dev, -server, -client
    The agent's role(s); -server and -client may be combined.

  -servers=<host:port,...>
    HTTP addresses of the servers a client talks to.

  -aws-api=<url>, -aws-table=<table>
    drover's API on AWS (API Gateway) and its DynamoDB table, for a client
    of the AWS home (SigV4 node routes; polls its own DynamoDB items).

  -data-dir=<dir>
    Directory for state. Required outside -dev.

  -http-addr=<host:port>
    Where the HTTP API listens. Default = ` + agent.DefaultHTTPAddr + ` for servers;
    for a client-only agent 127.0.0.1 on a free port: there it serves the
    node's client routes (/v1/client/...: alloc exec, logs, files, stats,
    restart, signal), which servers forward to.

  -advertise-http=<host:port>
    The address the node advertises for its client routes (its HTTPAddr),
    where servers and users reach them. Default: the bound -http-addr.

  -node-name, -node-pool, -node-class, -dc
    The node's name (default: the hostname), pool, class and datacenter.

  -enable-raw-exec
    Enable the raw_exec driver on a client (always on in -dev). The exec
    and docker drivers are always enabled; their fingerprints say whether
    they can run on the node (exec: root and cgroups; docker: an engine
    that answers).

  -docker-allow-privileged
    Let docker tasks run privileged (Nomad's allow_privileged). Default off.

  -docker-volumes-enabled
    Let docker tasks mount host paths outside their task dir (Nomad's
    volumes.enabled). Default off.

  -network-interface=<name>, -network-address=<ip>
    The interface whose address a client's allocations' ports are on, or
    the address itself. Default: the loopback address in -dev, else the
    first IPv4 address of an interface that is up.

  -min-dynamic-port=<port>, -max-dynamic-port=<port>
    The range dynamic ports are picked from. Default = 20000-32000

  -reserved-ports=<ports>
    Host ports never given to allocations, as "22,80,8000-8010".

  -host-volume=<name>=<path>[:ro]
    A host volume the client's node offers to jobs' volume blocks (type
    "host", source = name); repeatable. ":ro" lets it be mounted read-only
    only. The path must exist.

  -gc-max-allocs=<n>
    Allocations a client keeps before destroying terminal ones. Default = 50

  -cpu-total-compute=<mhz>, -memory-total-mb=<mib>
    The CPU (MHz over all cores) and memory a client's node offers, instead
    of what fingerprinting finds (Nomad's cpu_total_compute and
    memory_total_mb). Default: the fingerprinted values

  -heartbeat-ttl=<duration>
    Heartbeat TTL servers hand to nodes. Default = 10s

  -workers=<n>
    Evaluation workers of a server. Default = four per CPU core

  -log-level=<level>, -log-json
    debug, info, warn or error; JSON logs.

Security Options:

  -acl-enabled
    Turn on Nomad's ACLs (servers; off unless asked, in -dev too): every
    request needs an X-Nomad-Token whose policies allow it (the policy
    named "anonymous" applies to requests without one). Create the first
    management token with "drover acl bootstrap". To bootstrap once more,
    write the index the refusal names into <data-dir>/server/acl-bootstrap-reset.

  -tls-cert-file=<path>, -tls-key-file=<path>
    Serve HTTPS with this certificate (servers: the API; clients: their
    client routes). The same certificate is the agent's client certificate
    when it calls other agents.

  -tls-ca-file=<path>
    The CA that signs the agents' certificates: clients verify servers with
    it, and servers require every HTTPS client (node agents, the CLI) to
    present a certificate it signed (Nomad's verify_https_client).

  -config=<path>
    A Nomad agent configuration file whose acl and tls blocks drover reads
    (acl { enabled = true }, tls { http = true, cert_file, key_file, ca_file,
    verify_https_client }); flags win over it.

  -insecure
    Let a server listen on an address other than loopback without ACLs or
    TLS. Without it such an agent refuses to start: anyone who reaches the
    address could run jobs as the agents' user, or register as a node and
    receive job specs.`)
}

func (c *AgentCommand) Run(args []string) int {
	stdout, stderr := c.Stdout, c.Stderr
	fs := c.FlagSet("agent", c.Help, flagSetNone)
	dev := fs.Bool("dev", false, "run all in one: server and a node with raw_exec; tasks stop with the agent")
	server := fs.Bool("server", false, "run a server: HTTP API, evaluator, timers (no node)")
	client := fs.Bool("client", false, "run a node agent talking to -servers")
	servers := fs.String("servers", "", "comma-separated HTTP addresses (host:port) of the servers a client talks to")
	awsAPI := fs.String("aws-api", "", "URL of drover's API on AWS (API Gateway): a client registers and reports there (SigV4) and polls its own DynamoDB items")
	awsTable := fs.String("aws-table", "drover", "DynamoDB table of drover's AWS home (with -aws-api)")
	dataDir := fs.String("data-dir", "", "directory for state (required for -server and -client; default in -dev: a new temporary directory, removed at exit)")
	httpAddr := fs.String("http-addr", agent.DefaultHTTPAddr, "HOST:PORT the HTTP API listens on (client-only agents: default 127.0.0.1:0, a free port)")
	advertiseHTTP := fs.String("advertise-http", "", "HOST:PORT the node advertises for its client routes (default: the bound -http-addr)")
	nodeName := fs.String("node-name", "", "name of this agent's node (default: the hostname)")
	nodePool := fs.String("node-pool", "", "node pool of this agent's node (default \"default\")")
	nodeClass := fs.String("node-class", "", "class of this agent's node")
	datacenter := fs.String("dc", "", "datacenter of this agent's node (default \"dc1\")")
	rawExec := fs.Bool("enable-raw-exec", false, "enable the raw_exec driver on a client (always on in -dev)")
	dockerPrivileged := fs.Bool("docker-allow-privileged", false, "let docker tasks run privileged (Nomad's allow_privileged)")
	dockerInfraImage := fs.String("docker-infra-image", "", "image of the pause containers of bridge-mode allocs (Nomad's infra_image; default: drover's own, built on the node without a registry)")
	dockerVolumes := fs.Bool("docker-volumes-enabled", false, "let docker tasks mount host paths outside their task dir (Nomad's volumes.enabled)")
	netIface := fs.String("network-interface", "", "interface whose address the node's allocation ports are on")
	netAddr := fs.String("network-address", "", "IP address the node's allocation ports are on")
	minPort := fs.Int("min-dynamic-port", 0, "lowest port dynamic ports are picked from (default 20000)")
	maxPort := fs.Int("max-dynamic-port", 0, "highest port dynamic ports are picked from (default 32000)")
	reservedPorts := fs.String("reserved-ports", "", `host ports never given to allocations ("22,80,8000-8010")`)
	var hostVolumes multiFlag
	fs.Var(&hostVolumes, "host-volume", "a host volume the node offers, name=path or name=path:ro (repeatable)")
	gcMaxAllocs := fs.Int("gc-max-allocs", 50, "allocs a client keeps before destroying terminal ones (Nomad's gc_max_allocs)")
	cpuTotal := fs.Int64("cpu-total-compute", 0, "CPU (MHz over all cores) a client's node offers (default: fingerprinted)")
	memTotal := fs.Int64("memory-total-mb", 0, "memory (MiB) a client's node offers (default: fingerprinted)")
	heartbeatTTL := fs.Duration("heartbeat-ttl", 0, "heartbeat TTL servers hand to nodes (default 10s); a node silent for TTL+grace is down")
	workers := fs.Int("workers", 0, "number of evaluation workers (servers; default four per CPU core)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	logJSON := fs.Bool("log-json", false, "write logs as JSON")
	aclEnabled := fs.Bool("acl-enabled", false, "turn on Nomad's ACLs (servers)")
	tlsCert := fs.String("tls-cert-file", "", "serve HTTPS with this certificate (PEM)")
	tlsKey := fs.String("tls-key-file", "", "the key of -tls-cert-file (PEM)")
	tlsCA := fs.String("tls-ca-file", "", "CA that verifies servers (clients) and is required of HTTPS clients (servers)")
	configFile := fs.String("config", "", "a Nomad agent configuration file: its acl and tls blocks")
	insecure := fs.Bool("insecure", false, "let a server listen beyond loopback without ACLs or TLS")
	if err := fs.Parse(args); err != nil {
		return 1
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "drover agent: unexpected arguments %q\n", fs.Args())
		return 1
	}
	httpAddrSet := false
	fs.Visit(func(f *flag.Flag) { httpAddrSet = httpAddrSet || f.Name == "http-addr" })
	if *client && !*server && !httpAddrSet {
		// Several clients share a machine with a server in tests and in
		// the README's cluster: each takes a free port and advertises it.
		*httpAddr = "127.0.0.1:0"
	}
	switch {
	case !*dev && !*server && !*client:
		fmt.Fprintln(stderr, "drover agent: choose a role: -dev, -server or -client")
		return 1
	case *dev && (*server || *client):
		fmt.Fprintln(stderr, "drover agent: -dev already runs server and client; drop -server/-client")
		return 1
	case *client && !*server && strings.TrimSpace(*servers) == "" && *awsAPI == "":
		fmt.Fprintln(stderr, "drover agent: -client needs -servers HOST:PORT")
		return 1
	case !*dev && *dataDir == "":
		fmt.Fprintln(stderr, "drover agent: -data-dir is required outside -dev")
		return 1
	case *workers < 0:
		fmt.Fprintln(stderr, "drover agent: -workers must not be negative (0: four per CPU core)")
		return 1
	case *gcMaxAllocs < 1:
		fmt.Fprintln(stderr, "drover agent: -gc-max-allocs must be at least 1")
		return 1
	case *cpuTotal < 0:
		fmt.Fprintf(stderr, "drover agent: -cpu-total-compute %d: must not be negative (0: the fingerprinted value)\n", *cpuTotal)
		return 1
	case *memTotal < 0:
		fmt.Fprintf(stderr, "drover agent: -memory-total-mb %d: must not be negative (0: the fingerprinted value)\n", *memTotal)
		return 1
	case *heartbeatTTL < 0:
		fmt.Fprintln(stderr, "drover agent: -heartbeat-ttl must not be negative")
		return 1
	case hostPortError(*httpAddr) != nil:
		fmt.Fprintf(stderr, "drover agent: -http-addr %s: %v\n", *httpAddr, hostPortError(*httpAddr))
		return 1
	}
	tlsCfg := agent.TLSConfig{CertFile: *tlsCert, KeyFile: *tlsKey, CAFile: *tlsCA, VerifyHTTPSClient: *tlsCA != ""}
	if *configFile != "" {
		f, err := loadAgentFile(*configFile)
		if err != nil {
			fmt.Fprintf(stderr, "drover agent: %v\n", err)
			return 1
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if f.ACL != nil && !set["acl-enabled"] {
			*aclEnabled = f.ACL.Enabled
		}
		if t := f.TLS; t != nil && t.HTTP {
			fromFile := agent.TLSConfig{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.CAFile, VerifyHTTPSClient: t.VerifyHTTPSClient}
			if !set["tls-cert-file"] && !set["tls-key-file"] && !set["tls-ca-file"] {
				tlsCfg = fromFile
			}
		}
	}
	if *server || *dev {
		if why := exposure(*httpAddr, *aclEnabled, tlsCfg.Enabled()); why != "" {
			if !*insecure {
				fmt.Fprintf(stderr, "drover agent: refusing to start: %s. Add -acl-enabled and -tls-cert-file/-tls-key-file, "+
					"listen on 127.0.0.1, or pass -insecure if the network is yours alone.\n", why)
				return 1
			}
			fmt.Fprintf(stderr, "drover agent: WARNING (-insecure): %s.\n", why)
		}
	}
	log, err := newLogger(*logLevel, *logJSON, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "drover agent: %v\n", err)
		return 1
	}
	defer log.Sync()

	dir := *dataDir
	if dir == "" {
		dir, err = os.MkdirTemp("", "drover-dev-")
		if err != nil {
			fmt.Fprintf(stderr, "drover agent: create temporary data dir: %v\n", err)
			return 1
		}
		defer os.RemoveAll(dir)
	}
	var serverList []string
	for _, s := range strings.Split(*servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			if err := serverAddrError(s); err != nil {
				fmt.Fprintf(stderr, "drover agent: -servers %s: %v\n", s, err)
				return 1
			}
			serverList = append(serverList, s)
		}
	}
	var awsCP nodeagent.ControlPlane
	var nodeID string
	if *awsAPI != "" {
		if !*client || *server || *dev {
			fmt.Fprintln(stderr, "drover agent: -aws-api is for a client-only agent (-client)")
			return 1
		}
		if awsCP, nodeID, err = awsControlPlane(context.Background(), *awsAPI, *awsTable); err != nil {
			fmt.Fprintf(stderr, "drover agent: %v\n", err)
			return 1
		}
		serverList = []string{*awsAPI}
	}
	vols := map[string]*structs.ClientHostVolumeConfig{}
	for _, v := range hostVolumes {
		hv, err := nodeagent.ParseHostVolume(v)
		if err != nil {
			fmt.Fprintf(stderr, "drover agent: -host-volume: %v\n", err)
			return 1
		}
		if vols[hv.Name] != nil {
			fmt.Fprintf(stderr, "drover agent: -host-volume: %q is given twice\n", hv.Name)
			return 1
		}
		vols[hv.Name] = hv
	}
	a, err := agent.New(agent.Config{HostVolumes: vols, DataDir: dir, HTTPAddr: *httpAddr, AdvertiseHTTP: *advertiseHTTP, Dev: *dev, Server: *server, Client: *client,
		ControlPlane: awsCP, NodeID: nodeID, Servers: serverList, Workers: *workers, NodeName: *nodeName, NodePool: *nodePool, NodeClass: *nodeClass,
		Datacenter: *datacenter, EnableRawExec: *rawExec,
		DockerAllowPrivileged: *dockerPrivileged, DockerVolumesEnabled: *dockerVolumes, DockerInfraImage: *dockerInfraImage, GCMaxAllocs: *gcMaxAllocs,
		CPUTotalCompute: *cpuTotal, MemoryTotalMB: *memTotal, HeartbeatTTL: *heartbeatTTL, Logger: log,
		NetworkInterface: *netIface, NetworkAddress: *netAddr, MinDynamicPort: *minPort, MaxDynamicPort: *maxPort, ReservedPorts: *reservedPorts,
		ACLEnabled: *aclEnabled, TLS: tlsCfg})
	if err != nil {
		fmt.Fprintf(stderr, "drover agent: %v\n", err)
		return 1
	}
	if err := a.Listen(); err != nil {
		fmt.Fprintf(stderr, "drover agent: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	mode := "dev (server + client, raw_exec enabled)"
	switch {
	case *server && *client:
		mode = "server + client"
	case *server:
		mode = "server"
	case *client:
		mode = "client of " + strings.Join(serverList, ",")
	}
	fmt.Fprintf(stdout, "==> drover agent configuration:\n\n")
	fmt.Fprintf(stdout, "       Mode: %s\n", mode)
	scheme := "http"
	if tlsCfg.Enabled() {
		scheme = "https"
	}
	if *dev || *server {
		fmt.Fprintf(stdout, "   HTTP API: %s://%s\n", scheme, a.ListenAddr())
		fmt.Fprintf(stdout, "       ACLs: %s\n", onOff(*aclEnabled))
	} else {
		fmt.Fprintf(stdout, " Client API: %s://%s\n", scheme, a.ListenAddr())
	}
	fmt.Fprintf(stdout, "   Data dir: %s\n", dir)
	if id := a.NodeID(); id != "" {
		fmt.Fprintf(stdout, "    Node ID: %s\n", id)
	}
	fmt.Fprintf(stdout, "    Version: %s\n\n", agent.Version)
	fmt.Fprintf(stdout, "==> drover agent started! Log data will stream in below:\n\n")
	if err := a.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "drover agent: %v\n", err)
		return 1
	}
	return 0
}

func onOff(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

// hostPortError says why addr is not a listen address HOST:PORT (HOST may
// be empty: every interface; PORT 0–65535, 0: a free one), nil when it is.
func hostPortError(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("not HOST:PORT (%v)", err)
	}
	if strings.ContainsAny(host, " \t") {
		return fmt.Errorf("not HOST:PORT (host %q has white space)", host)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q: must be a number from 0 to 65535", port)
	}
	return nil
}

// serverAddrError says why s is not a server's address for -servers:
// HOST:PORT (PORT 1–65535), or an http:// or https:// URL with one; nil
// when it is.
func serverAddrError(s string) error {
	hostPort := s
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("not HOST:PORT or an http(s)://HOST:PORT URL")
		}
		hostPort = u.Host
	}
	if err := hostPortError(hostPort); err != nil {
		if _, port, perr := net.SplitHostPort(hostPort); perr == nil && strings.HasPrefix(err.Error(), "port ") {
			return fmt.Errorf("port %q: must be a number from 1 to 65535", port)
		}
		return err
	}
	if _, port, _ := net.SplitHostPort(hostPort); port == "0" {
		return fmt.Errorf("port \"0\": must be a number from 1 to 65535 (a server's port)")
	}
	return nil
}

// exposure says why a server at addr is open to whoever reaches it: an
// address beyond loopback without ACLs (anyone may register jobs, whose
// tasks run as the agents' user, or register as a node) or without TLS
// (tokens and job specs cross the network in the clear). "" when neither.
func exposure(addr string, aclOn, tlsOn bool) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return ""
	}
	var missing []string
	if !aclOn {
		missing = append(missing, "without ACLs anyone who reaches it may register jobs, whose tasks run as the agents' user, or read job specs")
	}
	if !tlsOn {
		missing = append(missing, "without TLS tokens and job specs cross the network in the clear")
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("-http-addr %s is not a loopback address: %s", addr, strings.Join(missing, "; "))
}

// newLogger builds zap's console (or JSON) logger at level, on w.
func newLogger(level string, json bool, w io.Writer) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: %w", level, err)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = func(t time.Time, e zapcore.PrimitiveArrayEncoder) {
		e.AppendString(t.Format("2006-01-02T15:04:05.000Z07:00"))
	}
	var encoder zapcore.Encoder
	if json {
		encoder = zapcore.NewJSONEncoder(enc)
	} else {
		enc.EncodeLevel = zapcore.CapitalLevelEncoder
		encoder = zapcore.NewConsoleEncoder(enc)
	}
	return zap.New(zapcore.NewCore(encoder, zapcore.AddSync(w), lvl)), nil
}
