package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
	"github.com/drover-sched/drover/tasktemplate"
)

// Defaults of Config.
const (
	// DefaultPollInterval is how often the agent polls its assignment
	// index.
	DefaultPollInterval = time.Second
	// DefaultVersion is the version the node advertises when
	// Config.Version is empty.
	DefaultVersion = "0.1.0-dev"
	// DefaultGCMaxAllocs is Config.GCMaxAllocs's default (Nomad's).
	DefaultGCMaxAllocs = 50
	// DefaultDriverFingerprintInterval is how often drivers are
	// fingerprinted again (Nomad's docker driver's interval).
	DefaultDriverFingerprintInterval = 30 * time.Second
	// defaultHeartbeatTTL is assumed when the control plane returns none.
	defaultHeartbeatTTL = 10 * time.Second
	// shutdownReportTimeout bounds the final report at shutdown.
	shutdownReportTimeout = 3 * time.Second
)

// Config configures an Agent. The zero value of every field but DataDir
// has a default.
type Config struct {
	// DataDir holds the node ID, the local state file (client/state.db)
	// and the alloc dirs (alloc/<alloc id>). Required.
	DataDir string
	// NodeName is the node's name; the hostname when empty.
	NodeName string
	// Datacenter defaults to "dc1".
	Datacenter string
	// NodePool defaults to "default".
	NodePool string
	// NodeClass is the node's class (optional).
	NodeClass string
	// Meta is the node's metadata.
	Meta map[string]string
	// HTTPAddr is the address ("host:port") where the node serves its
	// client routes, advertised in the node's HTTPAddr (optional; see
	// SetHTTPAddr).
	HTTPAddr string
	// HTTPTLS says HTTPAddr serves HTTPS (the node's TLSEnabled).
	HTTPTLS bool
	// NetworkAddress is the IP address the node's allocs' ports are on
	// (NOMAD_IP_<label>); when empty it is the first address of
	// NetworkInterface, else the loopback address in dev mode, else the
	// first IPv4 address of an interface that is up (Nomad's
	// network_interface fingerprint).
	NetworkAddress   string
	NetworkInterface string
	// MinDynamicPort and MaxDynamicPort bound the ports dynamic ports are
	// picked from, inclusive (Nomad's defaults 20000 and 32000 when 0).
	MinDynamicPort, MaxDynamicPort int
	// ReservedPorts are host ports never given to allocs, as "22,80,
	// 8000-8010" (Nomad's client reserved.reserved_ports).
	ReservedPorts string
	// HostVolumes are the host volumes the node offers, by name (the
	// -host-volume flags; Nomad's client host_volume blocks).
	HostVolumes map[string]*structs.ClientHostVolumeConfig
	// DevMode is the dev agent: raw_exec is enabled by default, and a
	// graceful shutdown stops every task (otherwise tasks keep running
	// under their supervisors for the next agent to re-attach).
	DevMode bool
	// EnabledDrivers names the drivers to enable (built-ins of
	// drivers/catalog, or ExtraDrivers). nil means DefaultDrivers.
	EnabledDrivers []string
	// ExtraDrivers are drivers that are not built in, by name (tests: the
	// mock driver); they are enabled when EnabledDrivers names them.
	ExtraDrivers map[string]drivers.Driver
	// DockerHost is the Docker Engine's address for the docker driver
	// (default: DOCKER_HOST or the local socket).
	DockerHost string
	// DockerAllowPrivileged lets docker tasks run privileged (Nomad's
	// docker plugin option allow_privileged; off by default).
	DockerAllowPrivileged bool
	// DockerVolumesEnabled lets docker tasks mount host paths outside
	// their task dir (Nomad's docker volumes.enabled; off by default).
	DockerVolumesEnabled bool
	// DockerInfraImage is the image of the pause containers holding
	// bridge-mode allocs' network namespaces (Nomad's infra_image;
	// default: drover's own, built on the node).
	DockerInfraImage string
	// DriverFingerprintInterval is how often the drivers are
	// fingerprinted again; a change of health or attributes
	// re-registers the node (default 30 s, Nomad's docker interval).
	DriverFingerprintInterval time.Duration
	// PollInterval is how often the assignment index is polled (default
	// 1s).
	PollInterval time.Duration
	// CPUTotalCompute, when > 0, overrides the fingerprinted total CPU
	// (MHz over all cores).
	CPUTotalCompute int64
	// MemoryTotalMB, when > 0, overrides the fingerprinted memory (MiB).
	MemoryTotalMB int64
	// Logger receives the agent's logs; nil discards them.
	Logger *zap.Logger
	// SupervisorCommand is the command line that starts a task supervisor
	// (the spec path is appended). Default: this executable with the
	// "task-supervisor" subcommand, which cmd/drover routes to
	// SupervisorMain.
	SupervisorCommand []string
	// SupervisorEnv is added to the agent's environment for supervisor
	// processes only (tasks get their own environment).
	SupervisorEnv []string
	// Clock drives restart-policy timing; the wall clock when nil.
	Clock Clock
	// Version is the drover version the node advertises (attributes
	// drover.version and nomad.version); DefaultVersion when empty.
	Version string
	// NodeID, when set, is the node's ID instead of the one kept in the
	// data dir: the AWS home binds a node to its caller identity
	// (aws:userid), which its IAM policy and the API check (design §8).
	NodeID string
	// GCMaxAllocs is how many allocs the node keeps (running or not)
	// before it destroys terminal ones, oldest first: Nomad's client
	// gc_max_allocs (default 50). Running allocs are never collected.
	GCMaxAllocs int
}

// Agent is a node agent. Create it with New, then call Run.
type Agent struct {
	cfg     Config
	cp      ControlPlane
	logger  *zap.Logger
	clock   Clock
	paths   hostPaths
	drivers map[string]drivers.Driver

	nodeID string
	nodeMu sync.Mutex
	node   *structs.Node
	// advertised is the HTTPAddr set by SetHTTPAddr.
	advertised string

	// Set by Run.
	state     *stateDB
	stateLost string
	reporter  *reporter

	// heartbeatTTL is the TTL (ns) the last registration answered.
	heartbeatTTL atomic.Int64

	mu      sync.Mutex
	runners map[string]*allocRunner
	running bool
	// listed is the control plane's view of the node's allocs at the last
	// sync; reported names the allocs whose terminal status the control
	// plane has acknowledged. Both guard garbage collection.
	listed   map[string]*structs.Allocation
	reported map[string]bool
	// destroying names the runners being destroyed.
	destroying map[string]bool

	// cpu and host keep the last CPU samples of tasks and of the host,
	// for the stats routes.
	cpu  cpuSamples
	host hostSampler

	// services answers templates' nomadService and nomadServices from
	// the control plane's registry; nil when the control plane has none.
	services tasktemplate.ServiceLookup
}

// New validates cfg, fills its defaults, loads (or creates) the node ID in
// the data dir and fingerprints the machine. It starts nothing.
func New(cp ControlPlane, cfg Config) (*Agent, error) {
	if cp == nil {
		return nil, errors.New("nodeagent: no control plane")
	}
	if cfg.DataDir == "" {
		return nil, errors.New("nodeagent: DataDir is required")
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("nodeagent: data dir: %w", err)
	}
	cfg.DataDir = dir
	if cfg.Datacenter == "" {
		cfg.Datacenter = structs.DefaultDatacenter
	}
	if cfg.NodePool == "" {
		cfg.NodePool = structs.DefaultNodePool
	}
	if p, ok := cp.(Pacer); ok && cfg.PollInterval <= 0 {
		cfg.PollInterval = p.PollInterval()
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if cfg.GCMaxAllocs <= 0 {
		cfg.GCMaxAllocs = DefaultGCMaxAllocs
	}
	if cfg.DriverFingerprintInterval <= 0 {
		cfg.DriverFingerprintInterval = DefaultDriverFingerprintInterval
	}
	if len(cfg.SupervisorCommand) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("nodeagent: find own executable for the task supervisor: %w", err)
		}
		cfg.SupervisorCommand = []string{exe, SupervisorSubcommand}
	}
	if cfg.EnabledDrivers == nil {
		cfg.EnabledDrivers = DefaultDrivers(cfg.DevMode)
	}
	if err := checkNetworkConfig(&cfg); err != nil {
		return nil, fmt.Errorf("nodeagent: %w", err)
	}
	if err := checkHostVolumes(cfg.HostVolumes); err != nil {
		return nil, fmt.Errorf("nodeagent: %w", err)
	}
	ds, err := newDrivers(&cfg)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{cfg.DataDir, filepath.Join(cfg.DataDir, "client"), filepath.Join(cfg.DataDir, "alloc")} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("nodeagent: create %s: %w", d, err)
		}
	}
	a := &Agent{
		cfg:        cfg,
		cp:         cp,
		clock:      cfg.Clock,
		paths:      defaultHostPaths,
		drivers:    ds,
		runners:    map[string]*allocRunner{},
		listed:     map[string]*structs.Allocation{},
		reported:   map[string]bool{},
		destroying: map[string]bool{},
	}
	if cfg.NodeID != "" {
		a.nodeID = cfg.NodeID
	} else {
		a.nodeID, err = loadOrCreateNodeID(filepath.Join(cfg.DataDir, "client", "node-id"))
	}
	if err != nil {
		return nil, fmt.Errorf("nodeagent: %w", err)
	}
	a.logger = cfg.Logger.With(zap.String("node_id", a.nodeID))
	if reg, ok := cp.(ServiceRegistry); ok {
		var pollEvery time.Duration
		if _, paced := cp.(Pacer); paced {
			pollEvery = servicePollPaced
		}
		a.services = newServiceLookup(a.logger, reg, a.NodeID, pollEvery)
	}
	if err := a.refreshNode(); err != nil {
		return nil, fmt.Errorf("nodeagent: fingerprint: %w", err)
	}
	return a, nil
}

// NodeID returns the node's ID, stable across restarts on the same data
// dir.
func (a *Agent) NodeID() string { return a.nodeID }

// Node returns a copy of the node as fingerprinted.
func (a *Agent) Node() *structs.Node {
	a.nodeMu.Lock()
	defer a.nodeMu.Unlock()
	return a.node.Copy()
}

// SetHTTPAddr sets the address the node advertises for its client routes
// (once its listener is bound); the next registration carries it. Call it
// before Run.
func (a *Agent) SetHTTPAddr(addr string) {
	a.nodeMu.Lock()
	defer a.nodeMu.Unlock()
	a.advertised = addr
	if a.node != nil {
		a.node.HTTPAddr = addr
	}
}

func (a *Agent) httpAddr() string {
	a.nodeMu.Lock()
	defer a.nodeMu.Unlock()
	if a.advertised != "" {
		return a.advertised
	}
	return a.cfg.HTTPAddr
}

func (a *Agent) allocsDir() string { return filepath.Join(a.cfg.DataDir, "alloc") }

func (a *Agent) stateDBPath() string { return filepath.Join(a.cfg.DataDir, "client", "state.db") }

// refreshNode fingerprints the machine into a.node.
func (a *Agent) refreshNode() error {
	driverInfo := fingerprintDrivers(a.drivers)
	attrs, res, err := fingerprint(&a.cfg, a.paths, driverInfo)
	if err != nil {
		return err
	}
	reserved, err := fingerprintNetwork(&a.cfg, attrs, res)
	if err != nil {
		return err
	}
	name := a.cfg.NodeName
	if name == "" {
		name = attrs["unique.hostname"]
	}
	meta := map[string]string{}
	for k, v := range a.cfg.Meta {
		meta[k] = v
	}
	n := &structs.Node{
		ID:                    a.nodeID,
		Datacenter:            a.cfg.Datacenter,
		Name:                  name,
		HTTPAddr:              a.httpAddr(),
		TLSEnabled:            a.cfg.HTTPTLS,
		Attributes:            attrs,
		NodeResources:         res,
		ReservedResources:     reserved,
		Meta:                  meta,
		NodeClass:             a.cfg.NodeClass,
		NodePool:              a.cfg.NodePool,
		SchedulingEligibility: structs.NodeSchedulingEligible,
		Status:                structs.NodeStatusInit,
		Drivers:               driverInfo,
		HostVolumes:           copyHostVolumes(a.cfg.HostVolumes),
	}
	a.nodeMu.Lock()
	a.node = n
	a.nodeMu.Unlock()
	return nil
}

// Run runs the agent until ctx ends, then shuts it down: in dev mode it
// stops every task first; otherwise it leaves them running under their
// supervisors. It restores allocs from local state, registers the node,
// heartbeats, and polls for assignments. It returns an error only when
// the agent cannot start (state file locked by another agent, data dir
// unusable).
func (a *Agent) Run(ctx context.Context) error {
	a.mu.Lock()
	if a.running {
		a.mu.Unlock()
		return errors.New("nodeagent: agent already running")
	}
	a.running = true
	a.mu.Unlock()

	state, lost, err := openStateDB(a.stateDBPath())
	if err != nil {
		return fmt.Errorf("nodeagent: %w", err)
	}
	a.state, a.stateLost = state, lost
	if lost != "" {
		a.logger.Error("local state lost; allocs that ran here before will be reported failed", zap.String("reason", lost))
	}
	defer func() {
		if err := a.state.Close(); err != nil {
			a.logger.Error("close state", zap.Error(err))
		}
	}()

	repCtx, repCancel := context.WithCancel(context.Background())
	a.reporter = newReporter(a.cp, a.NodeID, a.logger)
	a.reporter.onSent = a.noteReported
	repDone := make(chan struct{})
	go func() {
		defer close(repDone)
		a.reporter.run(repCtx)
	}()

	runCtx, runCancel := context.WithCancel(context.Background())
	a.restore(runCtx)

	var wg sync.WaitGroup
	if a.register(ctx) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.heartbeatLoop(ctx)
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.driverFingerprintLoop(ctx)
		}()
		a.pollLoop(ctx, runCtx)
	}
	wg.Wait()

	// Shutdown.
	a.logger.Info("node agent shutting down", zap.Bool("dev_mode", a.cfg.DevMode))
	if a.cfg.DevMode {
		// Report what happened so far, then stop everything without
		// reporting it: in the dev agent the allocs run again at the next
		// start.
		a.stopReporter(repCancel, repDone)
		a.reporter.freeze()
		for _, ar := range a.allRunners() {
			ar.destroyForced()
		}
		for _, ar := range a.allRunners() {
			<-ar.WaitCh()
		}
		runCancel()
	} else {
		runCancel()
		for _, ar := range a.allRunners() {
			<-ar.WaitCh()
		}
		a.stopReporter(repCancel, repDone)
	}
	a.closeDrivers()
	a.logger.Info("node agent stopped")
	return nil
}

// stopReporter stops the reporter loop and sends what is pending.
func (a *Agent) stopReporter(cancel context.CancelFunc, done <-chan struct{}) {
	cancel()
	<-done
	fctx, fcancel := context.WithTimeout(context.Background(), shutdownReportTimeout)
	a.reporter.flush(fctx)
	fcancel()
}

func (a *Agent) allRunners() []*allocRunner {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*allocRunner, 0, len(a.runners))
	for _, ar := range a.runners {
		out = append(out, ar)
	}
	return out
}

// restore starts a runner for every alloc in the local state.
func (a *Agent) restore(runCtx context.Context) {
	allocs, err := a.state.LoadAllocs()
	if err != nil {
		// The file opened but cannot be read: start over on a fresh
		// one; allocs found on disk are then reported failed.
		a.logger.Error("local state unreadable", zap.Error(err))
		a.stateLost = "local state file unreadable (" + err.Error() + ")"
		_ = a.state.Close()
		aside := a.stateDBPath() + ".corrupt." + fmt.Sprint(time.Now().UnixNano())
		if rerr := os.Rename(a.stateDBPath(), aside); rerr != nil {
			a.logger.Error("move unreadable state file aside", zap.Error(rerr))
		}
		state, _, oerr := openStateDB(a.stateDBPath())
		if oerr != nil {
			// Nothing sane is left to do but run without restoring; the
			// next open error will surface on writes.
			a.logger.Error("reopen state file", zap.Error(oerr))
			return
		}
		a.state = state
		a.sweepOrphans(nil)
		return
	}
	known := make(map[string]bool, len(allocs))
	for _, ra := range allocs {
		known[ra.ID] = true
		ar := a.restoreAllocRunner(ra)
		a.logger.Info("restored allocation", zap.String("alloc_id", ra.ID), zap.Bool("failed", ar.failed()))
		a.startRunner(runCtx, ar)
	}
	a.sweepOrphans(known)
}

// sweepOrphans kills whatever runs from an alloc dir that has no local
// state (its state was lost, or it was being destroyed): nothing may run
// unwatched. The dirs stay; an assigned alloc among them is reported
// failed when the assignments arrive.
func (a *Agent) sweepOrphans(known map[string]bool) {
	entries, err := os.ReadDir(a.allocsDir())
	if err != nil {
		a.logger.Warn("list alloc dirs", zap.Error(err))
		return
	}
	for _, e := range entries {
		if !e.IsDir() || known[e.Name()] {
			continue
		}
		if n := a.cleanupAlloc(NewAllocDir(a.allocsDir(), e.Name()), e.Name()); n > 0 {
			a.logger.Warn("killed processes of an alloc dir without state", zap.String("alloc_id", e.Name()), zap.Int("processes", n))
		}
	}
}

func (a *Agent) startRunner(runCtx context.Context, ar *allocRunner) {
	a.mu.Lock()
	a.runners[ar.id] = ar
	a.mu.Unlock()
	go ar.run(runCtx)
}

// register registers the node, retrying until it succeeds or ctx ends. It
// reports whether it succeeded.
func (a *Agent) register(ctx context.Context) bool {
	backoff := 250 * time.Millisecond
	for {
		if err := a.refreshNode(); err != nil {
			a.logger.Warn("fingerprint", zap.Error(err))
		}
		ttl, err := a.cp.RegisterNode(ctx, a.Node())
		if err == nil {
			a.logger.Info("node registered", zap.Duration("ttl", ttl))
			a.heartbeatTTL.Store(int64(ttl))
			return true
		}
		a.logger.Warn("node registration failed, retrying", zap.Error(err), zap.Duration("backoff", backoff))
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// Pacer is an optional interface of a ControlPlane that sets the agent's
// pace where each request is paid for (the AWS home, controlplane/awscp):
// the assignment poll interval when Config.PollInterval is not set, and
// how many heartbeats the agent sends per heartbeat TTL (default 3; 0
// keeps the default).
type Pacer interface {
	PollInterval() time.Duration
	HeartbeatsPerTTL() int
}

// heartbeatsPerTTL is how many heartbeats the agent sends per TTL.
func (a *Agent) heartbeatsPerTTL() time.Duration {
	if p, ok := a.cp.(Pacer); ok && p.HeartbeatsPerTTL() > 0 {
		return time.Duration(p.HeartbeatsPerTTL())
	}
	return 3
}

// heartbeatLoop heartbeats at a third of the TTL (or as the control
// plane's Pacer says); after failures it retries quickly and re-registers.
func (a *Agent) heartbeatLoop(ctx context.Context) {
	// Start from the TTL the registration answered: a short TTL must be
	// honoured from the first heartbeat on.
	ttl := time.Duration(a.heartbeatTTL.Load())
	if ttl <= 0 {
		ttl = defaultHeartbeatTTL
	}
	failures := 0
	per := a.heartbeatsPerTTL()
	for {
		wait := ttl / per
		if failures > 0 {
			wait = min(time.Second, ttl/per)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		var next time.Duration
		var err error
		if failures >= 3 {
			next, err = a.cp.RegisterNode(ctx, a.Node())
		} else {
			next, err = a.cp.Heartbeat(ctx, a.nodeID)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			a.logger.Warn("heartbeat failed", zap.Error(err), zap.Int("failures", failures))
			continue
		}
		failures = 0
		if next > 0 {
			ttl = next
		} else {
			ttl = defaultHeartbeatTTL
		}
	}
}

// pollLoop polls the assignment index and syncs allocs when it moves.
func (a *Agent) pollLoop(ctx, runCtx context.Context) {
	t := time.NewTicker(a.cfg.PollInterval)
	defer t.Stop()
	var last uint64
	fetched := false
	for {
		idx, err := a.cp.AssignmentIndex(ctx, a.nodeID)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				a.logger.Warn("poll assignment index", zap.Error(err))
			}
		case !fetched || idx != last:
			allocs, at, err := a.cp.Assignments(ctx, a.nodeID)
			if err != nil {
				if ctx.Err() == nil {
					a.logger.Warn("fetch assignments", zap.Error(err))
				}
				break
			}
			a.syncAssignments(runCtx, allocs)
			if !fetched {
				a.removeStaleAllocDirs()
			}
			last, fetched = at, true
		}
		a.collectGarbage()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// syncAssignments diffs the assigned allocs against the runners: new
// allocs get a runner, changed ones are updated, removed ones destroyed.
func (a *Agent) syncAssignments(runCtx context.Context, allocs []*structs.Allocation) {
	sort.Slice(allocs, func(i, j int) bool { return allocs[i].ID < allocs[j].ID })
	listed := make(map[string]*structs.Allocation, len(allocs))
	for _, in := range allocs {
		listed[in.ID] = &structs.Allocation{ID: in.ID, DesiredStatus: in.DesiredStatus, ClientStatus: in.ClientStatus}
	}
	a.mu.Lock()
	a.listed = listed
	a.mu.Unlock()
	seen := make(map[string]bool, len(allocs))
	for _, in := range allocs {
		alloc := in.Copy()
		seen[alloc.ID] = true
		a.mu.Lock()
		ar := a.runners[alloc.ID]
		a.mu.Unlock()
		if ar != nil {
			if alloc.AllocModifyIndex > ar.AllocModifyIndex() {
				ar.Update(alloc)
			}
			continue
		}
		if alloc.TerminalStatus() {
			// Finished or stopped before this agent ran it (or its
			// state was destroyed): nothing to run. One the server
			// stopped before this node ever started it is reported
			// complete, so it does not stay "pending" for ever.
			if alloc.ServerTerminalStatus() && alloc.ClientStatus == structs.AllocClientStatusPending &&
				!NewAllocDir(a.allocsDir(), alloc.ID).Exists() {
				a.reporter.enqueue(&structs.Allocation{ID: alloc.ID, ClientStatus: structs.AllocClientStatusComplete,
					ClientDescription: "stopped before it started on this node", TaskStates: map[string]*structs.TaskState{}})
			}
			continue
		}
		lost := ""
		if NewAllocDir(a.allocsDir(), alloc.ID).Exists() {
			// It ran here, yet no state is left of it: never start a
			// second copy; report it failed.
			lost = "local state for this allocation was lost"
			if a.stateLost != "" {
				lost += ": " + a.stateLost
			}
		}
		a.logger.Info("new allocation", zap.String("alloc_id", alloc.ID), zap.String("name", alloc.Name))
		a.startRunner(runCtx, a.newAllocRunner(alloc, lost))
	}
	for _, ar := range a.allRunners() {
		if seen[ar.id] {
			continue
		}
		a.destroyRunner(ar, "allocation removed from the node (garbage collected by the control plane), destroying it")
	}
}

// runner returns the runner of allocID, or nil.
func (a *Agent) runner(allocID string) *allocRunner {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runners[allocID]
}

// AllocDir returns the directory tree of allocID on this node (whether or
// not it exists): where its logs are, for the log API.
func (a *Agent) AllocDir(allocID string) AllocDir { return NewAllocDir(a.allocsDir(), allocID) }
