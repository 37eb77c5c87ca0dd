// Package docker is the docker driver: each task is a container on the
// node's Docker Engine, driven through Docker's own Go client
// (github.com/moby/moby/client). The task config is Nomad's docker driver's
// (image pulled when absent or with force_pull, command, args, entrypoint,
// labels, volumes and mounts, network_mode, privileged where the agent
// allows it, registry auth, ...); the alloc's directories are mounted at
// /alloc, /local and /secrets as Nomad mounts them; the task's resources
// become CPU shares, a memory limit (memory_max the hard limit) and a
// soft reservation. The container's log is copied to the task's rotated
// log files; a restarted agent re-attaches by container ID, re-running
// nothing. A group in bridge mode gets a pause container per alloc that
// holds its network namespace and publishes its ports; its tasks' containers
// join it (network.go). It decides how a task maps onto a container; the
// engine runs it.
package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/drivers"
)

// Name is the driver's name in job specs.
const Name = "docker"

// forceKillWait bounds how long a SIGKILLed container may take to stop.
const forceKillWait = 10 * time.Second

// Driver runs docker tasks. Create it with New.
type Driver struct {
	opts   drivers.Options
	logger *zap.Logger
	client *client.Client

	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	tasks map[string]*taskHandle
}

var (
	_ drivers.Driver       = (*Driver)(nil)
	_ drivers.AllocCleaner = (*Driver)(nil)
)

// taskState is the docker driver's state in a task handle.
type taskState struct {
	ContainerID string
	ImageID     string `json:",omitempty"`
	TTY         bool   `json:",omitempty"`
}

// New returns the driver; it talks to opts.DockerHost (or DOCKER_HOST, or
// the local socket), negotiating the API version. It does not connect:
// the fingerprint says whether the engine answers.
func New(opts drivers.Options) (*Driver, error) {
	copts := []client.Opt{client.FromEnv}
	if opts.DockerHost != "" {
		copts = append(copts, client.WithHost(opts.DockerHost))
	}
	cli, err := client.New(copts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Driver{opts: opts, logger: logger.With(zap.String("driver", Name)), client: cli, ctx: ctx, cancel: cancel,
		tasks: map[string]*taskHandle{}}, nil
}

// closeWait bounds how long Close waits for the log copiers to record
// where they stopped.
const closeWait = 2 * time.Second

// Close stops watching the containers (they keep running), after the log
// copiers have recorded where they stopped, and closes the client.
func (d *Driver) Close() error {
	d.cancel()
	d.mu.Lock()
	hs := make([]*taskHandle, 0, len(d.tasks))
	for _, h := range d.tasks {
		h.close()
		hs = append(hs, h)
	}
	d.mu.Unlock()
	deadline := time.After(closeWait)
	for _, h := range hs {
		select {
		case <-h.logs:
		case <-deadline:
		}
	}
	return d.client.Close()
}

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// Capabilities implements drivers.Driver: signals, exec, an image.
func (d *Driver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{SendSignals: true, Exec: true, FSIsolation: drivers.FSIsolationImage}
}

func zapError(err error) zap.Field { return zap.Error(err) }

func (d *Driver) put(h *taskHandle) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if old := d.tasks[h.cfg.ID]; old != nil {
		old.close()
	}
	d.tasks[h.cfg.ID] = h
}

func (d *Driver) get(taskID string) (*taskHandle, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.tasks[taskID]
	if h == nil {
		return nil, fmt.Errorf("docker task %s: %w", taskID, drivers.ErrTaskNotFound)
	}
	return h, nil
}

// Start implements drivers.Driver: the image (pulled if needed), a new
// container, started.
func (d *Driver) Start(ctx context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	tc, err := Spec.Decode(cfg.Config, cfg.ValidateContext())
	if err != nil {
		return nil, drivers.Unrecoverable(fmt.Errorf("docker config: %w", err))
	}
	opts, err := d.createOptions(cfg, tc)
	if err != nil {
		return nil, drivers.Unrecoverable(err)
	}
	imageID, err := d.ensureImage(ctx, cfg, tc)
	if err != nil {
		return nil, err
	}
	// A container left by an earlier launch of this task goes first.
	if _, err := d.client.ContainerRemove(ctx, opts.Name, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("remove old container %s: %w", opts.Name, err)
	}
	created, err := d.client.ContainerCreate(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("create container: %w", err)
	}
	for _, w := range created.Warnings {
		d.logger.Warn("container created with a warning", zap.String("alloc_id", cfg.AllocID), zap.String("task", cfg.Name), zap.String("warning", w))
	}
	if _, err := d.client.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		_, _ = d.client.ContainerRemove(context.Background(), created.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		return nil, fmt.Errorf("start container: %w", err)
	}
	h := newTaskHandle(d, cfg, created.ID, tc.TTY)
	d.put(h)
	h.start()
	st, _ := json.Marshal(taskState{ContainerID: created.ID, ImageID: imageID, TTY: tc.TTY})
	d.logger.Info("container started", zap.String("alloc_id", cfg.AllocID), zap.String("task", cfg.Name), zap.String("container_id", created.ID))
	return &drivers.TaskHandle{Version: drivers.TaskHandleVersion, Driver: Name, Config: cfg, StartedAt: time.Now(), DriverState: st}, nil
}

// Recover implements drivers.Driver: the container is found by its ID
// (or, for a launch whose handle was never completed, by its name and
// launch label) and watched again; nothing is re-run.
func (d *Driver) Recover(ctx context.Context, th *drivers.TaskHandle) error {
	if th == nil || th.Config == nil {
		return drivers.ErrTaskNotFound
	}
	cfg := th.Config
	var st taskState
	if len(th.DriverState) > 0 {
		if err := json.Unmarshal(th.DriverState, &st); err != nil {
			return fmt.Errorf("decode docker task state: %w", err)
		}
	}
	ref := st.ContainerID
	if ref == "" {
		ref = containerName(cfg)
	}
	ins, err := d.client.ContainerInspect(ctx, ref, client.ContainerInspectOptions{})
	switch {
	case cerrdefs.IsNotFound(err) && st.ContainerID == "":
		return drivers.ErrTaskNotFound // the launch never created it
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("container %s is gone", st.ContainerID)
	case err != nil:
		return fmt.Errorf("inspect container %s: %w", ref, err)
	}
	if st.ContainerID == "" && ins.Container.Config != nil && ins.Container.Config.Labels[labelTaskID] != cfg.ID {
		return drivers.ErrTaskNotFound // another launch's
	}
	tty := st.TTY
	if ins.Container.Config != nil {
		tty = ins.Container.Config.Tty
	}
	h := newTaskHandle(d, cfg, ins.Container.ID, tty)
	d.put(h)
	h.start()
	return nil
}

// Wait implements drivers.Driver.
func (d *Driver) Wait(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	h, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	ch := make(chan *drivers.ExitResult, 1)
	go func() {
		defer close(ch)
		select {
		case <-h.done:
			ch <- h.exit
		case <-ctx.Done():
		case <-h.ctx.Done():
		}
	}()
	return ch, nil
}

func (d *Driver) kill(ctx context.Context, h *taskHandle, signal string) error {
	_, err := d.client.ContainerKill(ctx, h.containerID, client.ContainerKillOptions{Signal: signal})
	if err != nil && h.exited() == nil && !cerrdefs.IsConflict(err) && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("signal container %s: %w", h.containerID, err)
	}
	return nil
}

// Stop implements drivers.Driver: the signal, then SIGKILL after the
// timeout.
func (d *Driver) Stop(ctx context.Context, taskID string, timeout time.Duration, signal string) error {
	h, err := d.get(taskID)
	if err != nil {
		return err
	}
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return err
	}
	wait := func(t time.Duration) bool {
		select {
		case <-h.done:
			return true
		case <-time.After(t):
			return false
		case <-ctx.Done():
			return false
		}
	}
	if h.exited() != nil {
		return nil
	}
	if err := d.kill(ctx, h, drivers.SignalName(sig)); err != nil {
		return err
	}
	if wait(timeout) {
		return nil
	}
	if err := d.kill(ctx, h, "SIGKILL"); err != nil {
		return err
	}
	if wait(forceKillWait) {
		return nil
	}
	return fmt.Errorf("container %s still running after SIGKILL", h.containerID)
}

// Destroy implements drivers.Driver: the container is removed.
func (d *Driver) Destroy(ctx context.Context, taskID string, force bool) error {
	h, err := d.get(taskID)
	if errors.Is(err, drivers.ErrTaskNotFound) {
		return nil
	}
	if h.exited() == nil && !force {
		return fmt.Errorf("destroy task %s: %w", taskID, drivers.ErrTaskRunning)
	}
	_, err = d.client.ContainerRemove(ctx, h.containerID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", h.containerID, err)
	}
	h.close()
	d.mu.Lock()
	delete(d.tasks, taskID)
	d.mu.Unlock()
	return nil
}

// Signal implements drivers.Driver.
func (d *Driver) Signal(taskID, signal string) error {
	h, err := d.get(taskID)
	if err != nil {
		return err
	}
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return err
	}
	return d.kill(context.Background(), h, drivers.SignalName(sig))
}

// Exec implements drivers.Driver: a docker exec in the container, as the
// task's user.
func (d *Driver) Exec(ctx context.Context, taskID string, cmd []string) (*drivers.ExecResult, error) {
	h, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	created, err := d.client.ExecCreate(ctx, h.containerID, client.ExecCreateOptions{
		Cmd: cmd, AttachStdout: true, AttachStderr: true, User: h.cfg.User,
	})
	if err != nil {
		return nil, fmt.Errorf("docker exec: %w", err)
	}
	att, err := d.client.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker exec attach: %w", err)
	}
	defer att.Close()
	var stdout, stderr bufWriter
	if _, err := stdcopy.StdCopy(&stdout, &stderr, att.Reader); err != nil {
		return nil, fmt.Errorf("docker exec output: %w", err)
	}
	ins, err := d.client.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker exec inspect: %w", err)
	}
	return &drivers.ExecResult{Stdout: stdout.b, Stderr: stderr.b, ExitCode: ins.ExitCode}, nil
}

type bufWriter struct{ b []byte }

func (w *bufWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// Stats implements drivers.Driver: one sample of the engine's stats.
func (d *Driver) Stats(ctx context.Context, taskID string) (*drivers.ResourceUsage, error) {
	h, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	res, err := d.client.ContainerStats(ctx, h.containerID, client.ContainerStatsOptions{})
	if err != nil {
		return nil, fmt.Errorf("container stats: %w", err)
	}
	defer res.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		return nil, fmt.Errorf("decode container stats: %w", err)
	}
	m := s.MemoryStats
	rss, ok := m.Stats["rss"] // cgroup v1
	if !ok {
		rss, ok = m.Stats["anon"] // v2
	}
	if !ok && m.Usage > m.Stats["cache"] {
		rss = m.Usage - m.Stats["cache"]
	}
	return &drivers.ResourceUsage{MemoryRSSBytes: rss, MemoryMaxBytes: m.MaxUsage,
		CPUTotalNanos: s.CPUStats.CPUUsage.TotalUsage, Timestamp: s.Read}, nil
}

// CleanupAlloc implements drivers.AllocCleaner: every container labelled
// with the alloc's ID is removed.
func (d *Driver) CleanupAlloc(ctx context.Context, allocID string, _ []string) int {
	list, err := d.client.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", labelAllocID+"="+allocID)})
	if err != nil {
		d.logger.Warn("list the containers of a lost alloc", zap.String("alloc_id", allocID), zap.Error(err))
		return 0
	}
	n := 0
	for _, c := range list.Items {
		if _, err := d.client.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err == nil {
			n++
		}
	}
	return n
}
