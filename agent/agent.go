// Package agent assembles drover's embedded home in one process: the state
// store (a bbolt file under the data dir), the in-process eval broker and
// its workers, the control-plane services, the HTTP API and, in dev mode,
// a node agent talking to the control plane in-process.
package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/controlplane"
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
	// HTTPAddr is the API's listen address (default 127.0.0.1:4646; port 0
	// picks a free one).
	HTTPAddr string
	// Dev runs the all-in-one dev agent: server and a node with raw_exec
	// enabled; its tasks stop when the agent stops.
	Dev bool
	// Workers is the number of evaluation workers (default 2).
	Workers int
	// NodeName names the dev node (default: the hostname).
	NodeName string
	// Region and Datacenter (defaults "global" and "dc1").
	Region     string
	Datacenter string
	// HeartbeatTTL is handed to node agents (default 10 s).
	HeartbeatTTL time.Duration
	// PollInterval is the node agent's assignment poll interval (default
	// 1 s).
	PollInterval time.Duration
	// BeforeCommit is a test hook run between computing and committing
	// each plan.
	BeforeCommit func(ctx context.Context, eval *structs.Evaluation, attempt int)
	// SupervisorCommand overrides how task supervisors start (tests).
	SupervisorCommand []string
	Logger            *zap.Logger
}

// Agent is a running embedded home.
type Agent struct {
	cfg       Config
	log       *zap.Logger
	store     *embedded.Store
	broker    *evqueue.Broker
	service   *controlplane.Service
	evaluator *scheduler.Evaluator
	api       *httpapi.Server
	node      *nodeagent.Agent
	listener  net.Listener
	ready     chan struct{}
}

// New opens the state store and builds every part. It starts nothing.
func New(cfg Config) (*Agent, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("agent: a data dir is required")
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = DefaultHTTPAddr
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
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
	serverDir := filepath.Join(cfg.DataDir, "server")
	if err := os.MkdirAll(serverDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	store, err := embedded.Open(filepath.Join(serverDir, "state.db"))
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, log: log, store: store, ready: make(chan struct{})}
	a.broker = evqueue.New(evqueue.Config{OnDeliveryLimit: a.evalDeliveryLimit})
	a.service = controlplane.New(controlplane.Config{Store: store, Queue: a.broker, Logger: log.Named("control"), HeartbeatTTL: cfg.HeartbeatTTL})
	a.evaluator = newEvaluator(store, a.broker, log.Named("scheduler"))
	a.evaluator.BeforeCommit = cfg.BeforeCommit

	if cfg.Dev {
		a.node, err = nodeagent.New(a.service, nodeagent.Config{
			DataDir: filepath.Join(cfg.DataDir, "client"), NodeName: cfg.NodeName, Datacenter: cfg.Datacenter,
			HTTPAddr: cfg.HTTPAddr, DevMode: true, PollInterval: cfg.PollInterval,
			SupervisorCommand: cfg.SupervisorCommand, Version: Version, Logger: log.Named("client"),
		})
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("create node agent: %w", err)
		}
	}
	return a, nil
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

// Ready is closed once Run listens and has restored pending evaluations.
func (a *Agent) Ready() <-chan struct{} { return a.ready }

// Addr returns the address the API listens on; call it after Ready.
func (a *Agent) Addr() string {
	select {
	case <-a.ready:
		return a.listener.Addr().String()
	default:
		return a.cfg.HTTPAddr
	}
}

// NodeID returns the dev node's ID, or "".
func (a *Agent) NodeID() string {
	if a.node == nil {
		return ""
	}
	return a.node.NodeID()
}

// Run serves until ctx ends, then shuts down: the API stops accepting, the
// node agent stops (in dev mode its tasks are stopped), workers finish
// their evaluation, and the state file is closed.
func (a *Agent) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.HTTPAddr)
	if err != nil {
		a.store.Close()
		return fmt.Errorf("listen on %s: %w", a.cfg.HTTPAddr, err)
	}
	a.listener = ln
	addr := ln.Addr().String()
	a.api = httpapi.New(httpapi.Config{
		State: a.store, Jobs: a.service, Watcher: a.store, Logger: a.log.Named("http"),
		Agent: httpapi.AgentInfo{Name: a.nodeName(), Region: a.cfg.Region, Datacenter: a.cfg.Datacenter,
			Version: Version, HTTPAddr: addr, Server: true, Client: a.node != nil, NodeID: a.NodeID()},
	})
	srv := &http.Server{Handler: a.api, ReadHeaderTimeout: 10 * time.Second}

	n, err := a.service.RestorePending(ctx)
	if err != nil {
		ln.Close()
		a.store.Close()
		return err
	}
	a.log.Info("drover agent started", zap.String("http_addr", addr), zap.String("data_dir", a.cfg.DataDir),
		zap.Bool("dev", a.cfg.Dev), zap.Int("workers", a.cfg.Workers), zap.Int("restored_pending_evals", n))
	close(a.ready)

	workCtx, stopWork := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		scheduler.RunWorkers(workCtx, a.cfg.Workers, a.broker, a.evaluator, a.log.Named("worker"))
	}()
	httpErr := make(chan error, 1)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			httpErr <- err
		}
		close(httpErr)
	}()
	nodeCtx, stopNode := context.WithCancel(context.Background())
	nodeDone := make(chan error, 1)
	if a.node != nil {
		go func() { nodeDone <- a.node.Run(nodeCtx) }()
	} else {
		close(nodeDone)
	}

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-httpErr:
		runErr = fmt.Errorf("serve http: %w", err)
	}
	a.log.Info("drover agent shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = srv.Shutdown(shutdownCtx)
	cancel()
	stopNode()
	if err := <-nodeDone; err != nil && !errors.Is(err, context.Canceled) {
		a.log.Warn("node agent stopped with an error", zap.Error(err))
	}
	stopWork()
	a.broker.Close()
	wg.Wait()
	if err := a.store.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("close state file: %w", err)
	}
	a.log.Info("drover agent stopped")
	return runErr
}

func (a *Agent) nodeName() string {
	if a.cfg.NodeName != "" {
		return a.cfg.NodeName
	}
	h, _ := os.Hostname()
	return h
}
