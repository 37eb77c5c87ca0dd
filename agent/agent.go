// Package agent assembles drover's embedded home in one process. A server
// holds the state store (a bbolt file under the data dir), the in-process
// eval broker and its workers, the control-plane services and their timers
// (node liveness, deployment watcher, drainer, garbage collection) and the
// HTTP API. A client is one node agent, talking to the control plane
// in-process (dev mode: server and client in one) or to servers over HTTP.
package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/acl"
	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/controlplane/cpclient"
	evqueue "github.com/drover-sched/drover/events/embedded"
	"github.com/drover-sched/drover/httpapi"
	"github.com/drover-sched/drover/nodeagent"
	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

// Version is drover's version.
const Version = "0.1.0"

// DefaultHTTPAddr is where the agent serves the API by default (Nomad's
// port).
const DefaultHTTPAddr = "127.0.0.1:4646"

// Config configures an Agent.
type Config struct {
	// DataDir holds server/state.db (the state store) and client/ (the
	// node agent's ID, local state and alloc dirs). Required.
	DataDir string
	// Dev runs server and client in one process, with raw_exec enabled
	// and the tasks stopped when the agent stops.
	Dev bool
	// Server runs the control plane (API, evaluator, timers).
	Server bool
	// Client runs a node agent. Without Server it needs Servers.
	Client bool
	// Servers are the HTTP addresses of servers a client-only agent talks
	// to ("host:port").
	Servers []string
	// ControlPlane, when set, is what a client-only agent talks to instead
	// of Servers (the AWS home: controlplane/awscp), and NodeID its node's
	// ID (there: bound to the caller's IAM identity).
	ControlPlane nodeagent.ControlPlane
	NodeID       string
	// HTTPAddr is the API's listen address (default 127.0.0.1:4646; port
	// 0 picks a free one). A client-only agent serves its node's client
	// routes (/v1/client/...) there.
	HTTPAddr string
	// AdvertiseHTTP is the "host:port" the node advertises as its
	// HTTPAddr, where servers and users reach its client routes (default:
	// the bound HTTPAddr).
	AdvertiseHTTP string
	// Workers is the number of evaluation workers (default
	// scheduler.DefaultWorkers: four per CPU core). Evaluations of
	// different jobs compute in parallel; the store serializes commits.
	Workers int
	// NodeName names the node of a client (default: the hostname).
	NodeName string
	// Region and Datacenter (defaults "global" and "dc1").
	Region     string
	Datacenter string
	// NodePool and NodeClass of a client's node.
	NodePool  string
	NodeClass string
	// EnableRawExec turns on the raw_exec driver outside dev mode.
	EnableRawExec bool
	// DockerAllowPrivileged and DockerVolumesEnabled are the docker
	// driver's allow_privileged and volumes.enabled (both off by
	// default, as in Nomad).
	DockerAllowPrivileged bool
	DockerVolumesEnabled  bool
	// DockerInfraImage is the pause image of bridge-mode allocs
	// (nodeagent.Config.DockerInfraImage).
	DockerInfraImage string
	// Network settings of a client's node (nodeagent.Config): the address
	// its allocs' ports are on, or the interface to take it from; the
	// dynamic port range; the reserved host ports.
	NetworkAddress, NetworkInterface string
	MinDynamicPort, MaxDynamicPort   int
	ReservedPorts                    string
	// HostVolumes are the host volumes a client's node offers, by name
	// (-host-volume).
	HostVolumes map[string]*structs.ClientHostVolumeConfig
	// GCMaxAllocs is how many allocs a client keeps before it destroys
	// terminal ones (Nomad's gc_max_allocs; default 50).
	GCMaxAllocs int
	// CPUTotalCompute (MHz over all cores) and MemoryTotalMB (MiB), when
	// > 0, are what a client's node offers instead of the fingerprinted
	// values (nodeagent.Config).
	CPUTotalCompute, MemoryTotalMB int64
	// HeartbeatTTL is handed to node agents (default 10 s).
	HeartbeatTTL time.Duration
	// Timers tunes the control plane's timers (zero: defaults).
	Timers controlplane.TimerConfig
	// PollInterval is the node agent's assignment poll interval (default
	// 1 s).
	PollInterval time.Duration
	// BeforeCommit is a test hook run between computing and committing
	// each plan.
	BeforeCommit func(ctx context.Context, eval *structs.Evaluation, attempt int)
	// SupervisorCommand overrides how task supervisors start (tests).
	SupervisorCommand []string
	// ACLEnabled turns Nomad's ACLs on in a server (Nomad's acl.enabled,
	// -acl-enabled; off unless asked, in -dev too): every request needs a
	// token whose policies allow it (the anonymous policy applies without
	// one); POST /v1/acl/bootstrap makes the first management token. The
	// one-time bootstrap reset is Nomad's: write the reset index the
	// refusal names into <data-dir>/server/acl-bootstrap-reset.
	ACLEnabled bool
	// TLS is the agent's HTTPS (see TLSConfig).
	TLS    TLSConfig
	Logger *zap.Logger
}

// ACLBootstrapResetFile is the file, under <data-dir>/server, whose
// content (a number) allows one more ACL bootstrap when it equals the
// last bootstrap's index, as Nomad's acl-bootstrap-reset.
const ACLBootstrapResetFile = "acl-bootstrap-reset"

var _ httpapi.ClientNode = (*nodeagent.Agent)(nil)

// Agent is a running server, client, or both.
type Agent struct {
	cfg       Config
	log       *zap.Logger
	store     *embedded.Store
	broker    *evqueue.Broker
	service   *controlplane.Service
	evaluator *scheduler.Evaluator
	timers    *controlplane.Timers
	api       *httpapi.Server
	node      *nodeagent.Agent
	forward   *httpapi.ForwardSigner
	listener  net.Listener
	ready     chan struct{}
}

// New builds every part of the configured roles. It starts nothing.
func New(cfg Config) (*Agent, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("agent: a data dir is required")
	}
	if cfg.Dev {
		cfg.Server, cfg.Client = true, true
	}
	if !cfg.Server && !cfg.Client {
		return nil, errors.New("agent: choose -dev, -server or -client")
	}
	if cfg.Client && !cfg.Server && len(cfg.Servers) == 0 && cfg.ControlPlane == nil {
		return nil, errors.New("agent: a client needs -servers (the HTTP address of a server)")
	}
	if err := cfg.TLS.check(); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if cfg.Server && cfg.TLS.CAFile != "" && !cfg.TLS.Enabled() {
		return nil, errors.New("agent: TLS: a server given -tls-ca-file needs -tls-cert-file and -tls-key-file (its own certificate)")
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = DefaultHTTPAddr
	}
	if cfg.Workers <= 0 {
		cfg.Workers = scheduler.DefaultWorkers()
	}
	if cfg.Region == "" {
		cfg.Region = "global"
	}
	if cfg.Datacenter == "" {
		cfg.Datacenter = structs.DefaultDatacenter
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	a := &Agent{cfg: cfg, log: log, ready: make(chan struct{})}
	if cfg.Server {
		if err := a.newServer(); err != nil {
			return nil, err
		}
	}
	if cfg.Client {
		if err := a.newClient(); err != nil {
			if a.store != nil {
				a.store.Close()
			}
			return nil, err
		}
	}
	return a, nil
}

func (a *Agent) newServer() error {
	serverDir := filepath.Join(a.cfg.DataDir, "server")
	if err := os.MkdirAll(serverDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	store, err := embedded.Open(filepath.Join(serverDir, "state.db"))
	if err != nil {
		return err
	}
	a.store = store
	a.broker = evqueue.New(evqueue.Config{OnDeliveryLimit: a.evalDeliveryLimit})
	a.evaluator = NewEvaluator(store, a.broker, a.log.Named("scheduler"))
	a.evaluator.BeforeCommit = a.cfg.BeforeCommit
	a.service = controlplane.New(controlplane.Config{Store: store, Queue: a.broker, Logger: a.log.Named("control"),
		HeartbeatTTL: a.cfg.HeartbeatTTL, Planner: a.evaluator, SchedulerConfigChanged: a.evaluator.Config.Invalidate})
	a.timers = controlplane.NewTimers(a.service, a.cfg.Timers)
	if a.forward, err = loadForwardSigner(serverDir); err != nil {
		store.Close()
		return err
	}
	return nil
}

func (a *Agent) newClient() error {
	var cp nodeagent.ControlPlane = localControlPlane{a.service}
	if a.cfg.ControlPlane != nil {
		cp = a.cfg.ControlPlane
	} else if !a.cfg.Server {
		secret, err := nodeagent.LoadOrCreateNodeSecret(filepath.Join(a.cfg.DataDir, "client"))
		if err != nil {
			return fmt.Errorf("node secret: %w", err)
		}
		opts := []cpclient.Option{cpclient.WithNodeSecret(secret)}
		tc, err := a.cfg.TLS.ClientConfig()
		if err != nil {
			return err
		}
		if tc != nil {
			opts = append(opts, cpclient.WithTLS(tc))
		}
		c, err := cpclient.New(a.cfg.Servers, opts...)
		if err != nil {
			return err
		}
		cp = c
	}
	var drivers []string // the node agent's defaults in dev mode
	if !a.cfg.Dev {
		drivers = nodeagent.DefaultDrivers(false)
		if a.cfg.EnableRawExec {
			drivers = append(drivers, nodeagent.DriverRawExec)
		}
	}
	node, err := nodeagent.New(cp, nodeagent.Config{
		DataDir: filepath.Join(a.cfg.DataDir, "client"), NodeName: a.cfg.NodeName, Datacenter: a.cfg.Datacenter,
		NodePool: a.cfg.NodePool, NodeClass: a.cfg.NodeClass, HTTPAddr: a.cfg.HTTPAddr, HTTPTLS: a.cfg.TLS.Enabled(), DevMode: a.cfg.Dev,
		EnabledDrivers: drivers, PollInterval: a.cfg.PollInterval, SupervisorCommand: a.cfg.SupervisorCommand,
		GCMaxAllocs: a.cfg.GCMaxAllocs, DockerAllowPrivileged: a.cfg.DockerAllowPrivileged, DockerVolumesEnabled: a.cfg.DockerVolumesEnabled, DockerInfraImage: a.cfg.DockerInfraImage,
		NetworkAddress: a.cfg.NetworkAddress, NetworkInterface: a.cfg.NetworkInterface,
		MinDynamicPort: a.cfg.MinDynamicPort, MaxDynamicPort: a.cfg.MaxDynamicPort, ReservedPorts: a.cfg.ReservedPorts,
		HostVolumes: a.cfg.HostVolumes, CPUTotalCompute: a.cfg.CPUTotalCompute, MemoryTotalMB: a.cfg.MemoryTotalMB,
		Version: Version, NodeID: a.cfg.NodeID, Logger: a.log.Named("client"),
	})
	if err != nil {
		return fmt.Errorf("create node agent: %w", err)
	}
	a.node = node
	return nil
}

// evalDeliveryLimit marks an eval that failed every delivery failed and
// creates its delayed follow-up (design §4.8).
func (a *Agent) evalDeliveryLimit(ev *structs.Evaluation, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	follow, err := scheduler.FailEval(ctx, a.store, a.broker, ev, reason, time.Now())
	if err != nil {
		a.log.Error("mark evaluation failed", zap.String("eval_id", ev.ID), zap.Error(err))
		return
	}
	a.log.Warn("evaluation failed its delivery limit; follow-up created", zap.String("eval_id", ev.ID),
		zap.String("job_id", ev.JobID), zap.String("followup_eval_id", follow.ID), zap.String("reason", reason))
}

// Listen binds the API's address (servers; a client has none). Run calls
// it if the caller did not; calling it first lets the caller report a bind
// failure before announcing the agent, and learn the address of port 0.
func (a *Agent) Listen() error {
	if a.listener != nil {
		return nil
	}
	if !a.cfg.Server {
		return a.listenClient()
	}
	ln, err := a.listen()
	if err != nil {
		a.store.Close()
		return err
	}
	a.listener = ln
	if a.node != nil {
		// The node's client routes are the server's, in-process.
		adv := a.cfg.AdvertiseHTTP
		if adv == "" {
			adv = ln.Addr().String()
		}
		a.node.SetHTTPAddr(adv)
	}
	return nil
}

// listen binds HTTPAddr, serving TLS when configured.
func (a *Agent) listen() (net.Listener, error) {
	tc, err := a.cfg.TLS.ServerConfig()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", a.cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", a.cfg.HTTPAddr, err)
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	return ln, nil
}

// ListenAddr returns the bound API address after Listen, or "".
func (a *Agent) ListenAddr() string {
	if a.listener == nil {
		return ""
	}
	return a.listener.Addr().String()
}

// Ready is closed once Run serves (servers: listens and has restored
// pending evaluations).
func (a *Agent) Ready() <-chan struct{} { return a.ready }

// Addr returns the address the API listens on; call it after Ready.
func (a *Agent) Addr() string {
	select {
	case <-a.ready:
		if a.listener != nil {
			return a.listener.Addr().String()
		}
	default:
	}
	return a.cfg.HTTPAddr
}

// Store returns a server's state store (nil for a client-only agent), for
// harnesses that read state or register nodes directly while the agent
// runs (the file is held open by the agent).
func (a *Agent) Store() *embedded.Store { return a.store }

// QueueStats returns what a server's eval broker holds (zero for a
// client-only agent): evaluations ready, waiting behind their job's
// in-flight one, delayed, and in flight.
func (a *Agent) QueueStats() evqueue.Stats {
	if a.broker == nil {
		return evqueue.Stats{}
	}
	return a.broker.Stats()
}

// NodeID returns the client's node ID, or "".
func (a *Agent) NodeID() string {
	if a.node == nil {
		return ""
	}
	return a.node.NodeID()
}

// Run serves until ctx ends, then shuts down: the API stops accepting, the
// node agent stops (in dev mode its tasks are stopped), timers and workers
// finish, and the state file is closed.
func (a *Agent) Run(ctx context.Context) error {
	var srv *http.Server
	httpErr := make(chan error, 1)
	workCtx, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	var wg sync.WaitGroup
	if a.cfg.Server {
		if err := a.Listen(); err != nil {
			return err
		}
		ln := a.listener
		addr := ln.Addr().String()
		forwardTLS, err := a.cfg.TLS.ClientConfig()
		if err != nil {
			ln.Close()
			a.store.Close()
			return err
		}
		var acls httpapi.ACLs
		if a.cfg.ACLEnabled {
			acls = &acl.Service{Store: a.store, ResetIndex: a.aclResetIndex}
		}
		a.api = httpapi.New(httpapi.Config{
			State: a.store, Jobs: a.service, Watcher: a.store, NodeAgents: a.service, Services: a.store, Operator: a.service,
			Plans: a.service, Scaler: a.service, Launcher: a.service, Allocs: a.service, Namespaces: a.service, Scheduler: a.service,
			ForwardSigner: a.forward, ForwardTLS: forwardTLS, ACL: acls, NodeSecrets: a.store, Logger: a.log.Named("http"),
			Agent: httpapi.AgentInfo{Name: a.nodeName(), Region: a.cfg.Region, Datacenter: a.cfg.Datacenter,
				Version: Version, HTTPAddr: addr, Server: true, Client: a.node != nil, NodeID: a.NodeID()},
		})
		if a.node != nil {
			a.api.HandleClient(a.node) // the node's client routes, served in-process
		}
		srv = &http.Server{Handler: a.api, ReadHeaderTimeout: 10 * time.Second, ErrorLog: zap.NewStdLog(a.log.Named("http"))}
		n, err := a.service.RestorePending(ctx)
		if err != nil {
			ln.Close()
			a.store.Close()
			return err
		}
		a.log.Info("drover server started", zap.String("http_addr", addr), zap.String("data_dir", a.cfg.DataDir),
			zap.Int("workers", a.cfg.Workers), zap.Int("restored_pending_evals", n))
		wg.Add(2)
		go func() {
			defer wg.Done()
			scheduler.RunWorkers(workCtx, a.cfg.Workers, a.broker, a.evaluator, a.log.Named("worker"))
		}()
		go func() {
			defer wg.Done()
			a.timers.Run(workCtx)
		}()
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				httpErr <- err
			}
			close(httpErr)
		}()
	}
	if !a.cfg.Server {
		if err := a.Listen(); err != nil {
			return err
		}
		h, err := a.clientAPI()
		if err != nil {
			return err
		}
		srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: zap.NewStdLog(a.log.Named("client-http"))}
		ln := a.listener
		a.log.Info("client HTTP API listening", zap.String("http_addr", ln.Addr().String()), zap.String("advertised", a.node.Node().HTTPAddr))
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				httpErr <- err
			}
			close(httpErr)
		}()
	}
	nodeCtx, stopNode := context.WithCancel(context.Background())
	defer stopNode()
	var nodeDone chan error // stays nil (never ready) without a node agent
	if a.node != nil {
		nodeDone = make(chan error, 1)
		a.log.Info("drover client started", zap.String("node_id", a.node.NodeID()), zap.Strings("servers", a.cfg.Servers))
		go func() { nodeDone <- a.node.Run(nodeCtx) }()
	}
	close(a.ready)

	var runErr error
	select {
	case <-ctx.Done():
	case err, ok := <-httpErr:
		if ok && err != nil {
			runErr = fmt.Errorf("serve http: %w", err)
		}
	case err := <-nodeDone:
		if err != nil && !errors.Is(err, context.Canceled) {
			runErr = fmt.Errorf("node agent: %w", err)
		}
		nodeDone = nil
	}
	a.log.Info("drover agent shutting down")
	if srv != nil {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(shutdownCtx)
		cancel()
	}
	stopNode()
	if nodeDone != nil {
		if err := <-nodeDone; err != nil && !errors.Is(err, context.Canceled) {
			a.log.Warn("node agent stopped with an error", zap.Error(err))
		}
	}
	stopWork()
	if a.broker != nil {
		a.broker.Close()
	}
	wg.Wait()
	if a.store != nil {
		if err := a.store.Close(); err != nil && runErr == nil {
			runErr = fmt.Errorf("close state file: %w", err)
		}
	}
	a.log.Info("drover agent stopped")
	return runErr
}

// aclResetIndex reads <data-dir>/server/acl-bootstrap-reset (0 when
// absent or not a number, which is logged).
func (a *Agent) aclResetIndex() uint64 {
	path := filepath.Join(a.cfg.DataDir, "server", ACLBootstrapResetFile)
	b, err := os.ReadFile(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			a.log.Error("read the ACL bootstrap reset file", zap.String("path", path), zap.Error(err))
		}
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		a.log.Error("the ACL bootstrap reset file holds no index", zap.String("path", path), zap.Error(err))
		return 0
	}
	a.log.Warn("ACL bootstrap reset file found", zap.String("path", path), zap.Uint64("reset_index", n))
	return n
}

func (a *Agent) nodeName() string {
	if a.cfg.NodeName != "" {
		return a.cfg.NodeName
	}
	h, _ := os.Hostname()
	return h
}
