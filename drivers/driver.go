// Package drivers is the shape every task driver of drover's node agent
// has: the Driver interface that owns a task's whole life, the TaskConfig
// a driver is started from, the TaskHandle the agent persists to recover a
// task after it restarts, and the declaration of a driver's task config
// (ConfigSpec) that both checks a job at submission and decodes the config
// on the node.
//
// It decides what a driver is asked and what it answers; it never runs a
// task itself, keeps no state, and knows no driver by name (the built-in
// drivers are registered in drivers/catalog). Nomad's plugins/drivers
// (DriverPlugin, TaskHandle, Capabilities, Fingerprint) is the model, made
// smaller: drover's drivers are compiled in, so there is no plugin RPC,
// and the task config is a typed Go struct rather than an HCL spec.
package drivers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
)

// Driver runs one kind of task on a node and owns each task's whole life:
// start, wait, stop, destroy, recover after an agent restart, signal, exec
// and stats. Tasks are named by TaskConfig.ID, which is unique per launch
// (a restarted task gets a new one). A driver keeps its own store of the
// tasks it runs; every method is safe for concurrent use.
//
// The lifecycle the task runner drives:
//
//	Start ──▶ Wait ──▶ (exit) ──▶ Destroy
//	  │         │
//	  │         └──▶ Stop (signal, kill after the timeout) ──▶ Destroy
//	  └ agent restarts ──▶ Recover(handle) ──▶ Wait ...
type Driver interface {
	// Name is the driver's name in job specs ("raw_exec", "exec",
	// "docker").
	Name() string
	// Capabilities says what the driver's tasks can do.
	Capabilities() Capabilities
	// Fingerprint describes the driver on this node now: detected,
	// healthy (and why not), and its node attributes ("driver.<name>",
	// "driver.<name>.version", ...).
	Fingerprint(ctx context.Context) *structs.DriverInfo
	// Start launches the task and returns once it runs (or failed to
	// start: an error wrapping *UnrecoverableError when a retry cannot
	// help). The returned handle is what the agent persists.
	Start(ctx context.Context, cfg *TaskConfig) (*TaskHandle, error)
	// Recover re-attaches to the task of a handle persisted by an
	// earlier agent, without re-running anything. A task that ended
	// while no agent watched is recovered too: Wait then returns how it
	// ended. ErrTaskNotFound means the launch never got as far as
	// starting the task (the agent stopped in between); nothing of it
	// runs then.
	Recover(ctx context.Context, h *TaskHandle) error
	// Wait returns a channel that receives the task's exit once. When
	// ctx ends first the channel is closed without a value; the task
	// keeps running.
	Wait(ctx context.Context, taskID string) (<-chan *ExitResult, error)
	// Stop sends signal (a name such as "SIGINT"; empty means the
	// driver's default), waits up to timeout for the task to exit, then
	// kills it. It returns once the task has exited, or with an error
	// when even the kill did not end it.
	Stop(ctx context.Context, taskID string, timeout time.Duration, signal string) error
	// Destroy releases what the task holds (records, cgroups, the
	// container) and forgets it. A task still running is killed first
	// when force is set; otherwise that is an error.
	Destroy(ctx context.Context, taskID string, force bool) error
	// Signal sends a signal to the running task.
	Signal(taskID string, signal string) error
	// Exec runs cmd in the task's context (its environment, and for
	// isolating drivers its filesystem, user and cgroups) and returns its
	// output and exit code. ErrNotSupported when Capabilities().Exec is
	// false.
	Exec(ctx context.Context, taskID string, cmd []string) (*ExecResult, error)
	// Stats samples the task's CPU and memory use.
	Stats(ctx context.Context, taskID string) (*ResourceUsage, error)
}

// AllocCleaner is implemented by drivers that can find and remove what
// tasks of an alloc left behind without their handles: the agent calls it
// for allocs whose local state was lost, so that nothing of theirs keeps
// running unwatched. stateDirs are the alloc's task state dirs on disk.
// It returns how many processes or containers it removed.
type AllocCleaner interface {
	CleanupAlloc(ctx context.Context, allocID string, stateDirs []string) int
}

// FSIsolation is how a driver isolates a task's filesystem, which decides
// the paths of the task's directories in its environment (Nomad's
// fsisolation.Mode).
type FSIsolation string

const (
	// FSIsolationNone: the task sees the host's filesystem; its
	// directories are given as host paths.
	FSIsolationNone FSIsolation = "none"
	// FSIsolationChroot: the task is chrooted into its task dir; its
	// directories are /alloc, /local, /secrets.
	FSIsolationChroot FSIsolation = "chroot"
	// FSIsolationImage: the task runs in an image with the alloc's
	// directories mounted at /alloc, /local, /secrets; the host's
	// environment is not passed on.
	FSIsolationImage FSIsolation = "image"
)

// Paths of the task's directories inside a task with filesystem isolation
// (Nomad's allocdir container paths).
const (
	TaskAllocPath   = "/alloc"
	TaskLocalPath   = "/local"
	TaskSecretsPath = "/secrets"
)

// Capabilities says what a driver's tasks can do (Nomad's Capabilities).
type Capabilities struct {
	// SendSignals: Signal works.
	SendSignals bool
	// Exec: Exec works.
	Exec bool
	// FSIsolation is the filesystem isolation of the driver's tasks.
	FSIsolation FSIsolation
}

// Resources are what a task asked for: CPU in MHz, memory in MiB.
type Resources struct {
	CPU int
	// MemoryMB is the memory a task is given, the soft limit when
	// MemoryMaxMB is set.
	MemoryMB int
	// MemoryMaxMB, when > 0, is the hard limit (Nomad's memory_max).
	MemoryMaxMB int
}

// LimitMB is the memory a task may not exceed: MemoryMaxMB when set,
// else MemoryMB.
func (r Resources) LimitMB() int {
	if r.MemoryMaxMB > r.MemoryMB {
		return r.MemoryMaxMB
	}
	return r.MemoryMB
}

// LogConfig is a task's log rotation: files kept per stream and the size
// of each, in bytes.
type LogConfig struct {
	MaxFiles     int
	MaxFileBytes int64
	// Disabled discards the task's output.
	Disabled bool `json:",omitempty"`
}

// TaskConfig is everything a driver is told about one launch of a task.
// The task runner builds it (environment interpolated, directories
// created) and persists it in the task's handle.
type TaskConfig struct {
	// ID names this launch: unique per start, so records of an earlier
	// launch are never mistaken for this one's.
	ID string
	// AllocID, Namespace, JobID, TaskGroup and AllocName place the task.
	AllocID   string
	Namespace string
	JobID     string
	TaskGroup string
	AllocName string
	// Name is the task's name.
	Name string
	// Config is the task's driver config as submitted, with ${...}
	// interpolated; the driver decodes it with its ConfigSpec.
	Config map[string]any
	// Env is the task's environment.
	Env map[string]string
	// User is the task's user ("" means the driver's default).
	User      string `json:",omitempty"`
	Resources Resources
	// Logs is the rotation of alloc/logs/<Name>.stdout.N and .stderr.N.
	Logs LogConfig
	// Ports are the host ports of the task's group network, as the alloc
	// holds them (AllocatedResources.Shared.Ports): Label, the host port
	// Value on HostIP, and To, the port inside the task a driver that maps
	// ports publishes it on (docker's `ports = ["http"]`; To <= 0 means the
	// same number as Value). Tasks also see them in their environment
	// (NOMAD_PORT_<label>, NOMAD_HOST_PORT_<label>, ...). Empty when the
	// group has no network block.
	Ports []structs.AllocatedPortMapping `json:",omitempty"`
	// AllocDir is the alloc dir's root, SharedDir its alloc/ directory
	// (NOMAD_ALLOC_DIR on the host), LogDir alloc/logs.
	AllocDir  string
	SharedDir string
	LogDir    string
	// TaskDir is the task's root (its working directory, and the chroot
	// of isolating drivers); LocalDir, SecretsDir and TmpDir are inside
	// it.
	TaskDir    string
	LocalDir   string
	SecretsDir string
	TmpDir     string
	// StateDir is the driver's private directory for this task, inside
	// TaskDir, kept across restarts of the agent.
	StateDir string
	// Mounts are the host volumes the task mounts (volume_mount blocks).
	Mounts []MountConfig `json:",omitempty"`
	// Network, when set, is the alloc's network namespace the task joins
	// (its group's network is in bridge mode); its driver made it. The
	// task then publishes no ports of its own: the namespace forwards the
	// alloc's host ports.
	Network *NetworkIsolation `json:",omitempty"`

	// Events, when set, receives driver messages worth a task event
	// ("Downloading image ..."); not persisted.
	Events func(message string) `json:"-"`
}

// ValidateContext is what the task config's rules know of the task's
// group on the node: the labels of the ports the alloc holds.
func (c *TaskConfig) ValidateContext() ValidateContext {
	var vc ValidateContext
	for _, p := range c.Ports {
		vc.GroupPorts = append(vc.GroupPorts, p.Label)
	}
	if c.Network != nil {
		vc.GroupNetworkMode = structs.NetworkModeBridge
	}
	return vc
}

// MountConfig is one host path mounted into a task (Nomad's
// drivers.MountConfig): TaskPath is where the task sees it — inside its
// chroot or container, or, for drivers without filesystem isolation,
// inside its task dir.
type MountConfig struct {
	TaskPath string
	HostPath string
	ReadOnly bool `json:",omitempty"`
}

// EnvList returns Env as sorted KEY=value entries.
func (c *TaskConfig) EnvList() []string {
	return sortedEnv(c.Env)
}

// Emit sends a driver message to the task's events, if anyone listens.
func (c *TaskConfig) Emit(format string, a ...any) {
	if c.Events != nil {
		c.Events(fmt.Sprintf(format, a...))
	}
}

// TaskHandleVersion is the version of TaskHandle written today.
const TaskHandleVersion = 1

// TaskHandle is the agent's hold on one launched task, persisted in the
// node's local state so that a restarted agent can hand it back to
// Recover. DriverState is the driver's own and opaque to the agent: the
// task runner never learns pids or container IDs (Nomad's TaskHandle).
type TaskHandle struct {
	Version int
	// Driver is the name of the driver that launched the task.
	Driver string
	// Config is the launch's config (its ID names the task).
	Config *TaskConfig
	// StartedAt is when the task started.
	StartedAt time.Time `json:",omitempty"`
	// DriverState is what the driver needs to recover the task; nil
	// while the launch is under way.
	DriverState []byte `json:",omitempty"`
}

// ID is the launch's task ID.
func (h *TaskHandle) ID() string {
	if h == nil || h.Config == nil {
		return ""
	}
	return h.Config.ID
}

// Copy returns a deep enough copy to persist while the original changes.
func (h *TaskHandle) Copy() *TaskHandle {
	if h == nil {
		return nil
	}
	c := *h
	c.DriverState = append([]byte(nil), h.DriverState...)
	return &c
}

// ExitResult is how a task ended.
type ExitResult struct {
	ExitCode int
	// Signal is the signal that ended the task, 0 if none.
	Signal int
	// OOMKilled: the kernel killed the task for exceeding its memory
	// limit.
	OOMKilled bool `json:",omitempty"`
	// Err is set when the driver could not tell how the task ended, or
	// has more to say than the code ("OOM Killed").
	Err string `json:",omitempty"`
	// ExitedAt is when the task ended, if known.
	ExitedAt time.Time `json:",omitempty"`
}

// Successful reports a clean exit (code 0, no signal, no error, not
// OOM-killed).
func (e *ExitResult) Successful() bool {
	return e.ExitCode == 0 && e.Signal == 0 && e.Err == "" && !e.OOMKilled
}

// ExecResult is the outcome of a command run in a task's context.
type ExecResult struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
}

// ResourceUsage is one sample of a task's resource use.
type ResourceUsage struct {
	// MemoryRSSBytes is the task's resident memory (for cgroup-limited
	// tasks, the cgroup's usage without page cache).
	MemoryRSSBytes uint64
	// MemoryMaxBytes is the peak usage when the driver knows it.
	MemoryMaxBytes uint64 `json:",omitempty"`
	// CPUTotalNanos is the CPU time (user + system) the task has used.
	CPUTotalNanos uint64
	// Timestamp is when the sample was taken.
	Timestamp time.Time
}

// Errors every driver answers with, distinguishable with errors.Is.
var (
	// ErrTaskNotFound: the driver has no such task (never started,
	// destroyed, or, from Recover, a launch that never started it).
	ErrTaskNotFound = errors.New("task not found")
	// ErrNotSupported: the driver cannot do this (Capabilities).
	ErrNotSupported = errors.New("not supported by this driver")
	// ErrTaskRunning: Destroy without force of a running task.
	ErrTaskRunning = errors.New("task is still running")
)

// UnrecoverableError is a start failure that retrying cannot fix (a
// missing command, a config the node cannot honour): the task fails
// without using its restart attempts.
type UnrecoverableError struct{ Err error }

func (e *UnrecoverableError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *UnrecoverableError) Unwrap() error { return e.Err }

// Unrecoverable wraps err as an UnrecoverableError (nil stays nil).
func Unrecoverable(err error) error {
	if err == nil {
		return nil
	}
	return &UnrecoverableError{Err: err}
}

// IsUnrecoverable reports whether err is, or wraps, an UnrecoverableError.
func IsUnrecoverable(err error) bool {
	var ue *UnrecoverableError
	return errors.As(err, &ue)
}

// Options configure a driver when the agent creates it.
type Options struct {
	// Logger receives the driver's logs; nil discards them.
	Logger *zap.Logger
	// SupervisorCommand is the command line that starts drover's task
	// supervisor (the spec path is appended): process drivers run each
	// task under one.
	SupervisorCommand []string
	// SupervisorEnv is added to the agent's environment for supervisor
	// processes only.
	SupervisorEnv []string
	// DockerHost is the Docker Engine's address; empty means the
	// environment's DOCKER_HOST or the default socket.
	DockerHost string
	// DockerAllowPrivileged lets docker tasks set privileged = true
	// (Nomad's docker plugin option allow_privileged; off by default).
	DockerAllowPrivileged bool
	// DockerVolumesEnabled lets docker tasks mount host paths outside
	// their task dir (Nomad's volumes.enabled; off by default).
	DockerVolumesEnabled bool
	// DockerInfraImage is the image of the pause containers that hold the
	// network namespaces of bridge-mode allocs (Nomad's infra_image);
	// empty means drover's own, built on the node without a registry.
	DockerInfraImage string
}

func sortedEnv(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
