// Package nodeagent is drover's node agent: the long-lived process on each
// machine that registers the node with the control plane, heartbeats, polls
// the node's assignment index, and runs the allocations assigned to it.
//
// # Shape
//
// The Agent owns one allocRunner per allocation. An alloc runner runs a
// fixed list of alloc hooks at fixed points (prerun, update, task state
// change, postrun, destroy, shutdown) and one taskRunner per task; a task
// runner likewise runs task hooks (prestart, poststart, exited, stop)
// around the task's process. The alloc hooks are, in order: the alloc dir
// (build, remove); the previous alloc (wait for the alloc this one
// replaces to stop, then move its alloc/data and task local/ dirs, for
// sticky or migrating ephemeral disks; a previous alloc on another node is
// asked about through the control plane, backing off on transient errors
// and giving up, with a task event, on permanent ones); service checks
// (check_hook.go, running package checks' http, tcp and script checks
// every interval while their task runs, keeping the latest results, and
// restarting a task through its restart policy on check_restart);
// deployment health (healthy after min_healthy_time of running tasks and,
// with health_check = "checks", passing checks; unhealthy on a failure or
// at healthy_deadline; each report names the deployment its health is
// for). Lifecycle tasks (prestart, poststart, poststop,
// sidecars) wait at gates the alloc runner opens from the task states.
// The agent garbage-collects terminal allocs (see gc.go) and answers
// Nomad's client routes for its allocs: task logs (StreamLogs), restart
// and signal (alloc_ops.go: a user's restart stops the task and starts it
// again at once, counted in Restarts without using a policy attempt),
// exec through the driver (drivers.ExecStreamer for live streams and a
// terminal), task and host stats (alloc_stats.go, host_stats.go) and the
// alloc dir's files, confined to it (allocfs.go).
//
// Every task runs through its driver (package drivers: one interface that
// owns a task's whole life — start, wait, stop, destroy, recover, signal,
// exec, stats — with the built-in drivers registered in drivers/catalog).
// The task runner keeps the driver's TaskHandle, persisted with the task's
// state, and never learns pids or container IDs. The process drivers
// (raw_exec, exec) run each task under a small supervisor process of
// drover's own (drivers/shared/supervisor): it starts the task in its own
// process group, records its pid and how it ended in the task's state dir,
// and copies its stdout and stderr to alloc/logs/<task>.stdout.N and
// .stderr.N (rotated by the task's logs block); the docker driver needs no
// supervisor: its containers run under the Docker Engine, and it copies
// their logs to the same files. Tasks therefore outlive an agent restart,
// and nothing that happens while the agent is down is lost. Drivers are
// fingerprinted again every DriverFingerprintInterval; a change
// re-registers the node.
//
// # Ports
//
// The node fingerprints its host network (network.go): the address its
// allocs' ports are on (Config.NetworkAddress or NetworkInterface; the
// loopback in dev mode), the dynamic port range (Nomad's 20000–32000 by
// default) and its reserved ports, which the scheduler honours. A task of
// a group with a network block gets the alloc's ports in two forms: in its
// environment as Nomad sets them (NOMAD_PORT_<label>, NOMAD_HOST_PORT_,
// NOMAD_ALLOC_PORT_, NOMAD_IP_, NOMAD_HOST_IP_, NOMAD_ADDR_,
// NOMAD_HOST_ADDR_; see setPorts in taskenv.go), and, for its driver, as
// drivers.TaskConfig.Ports: the alloc's AllocatedResources.Shared.Ports
// (label, host port Value, HostIP, and To, the port inside the task a
// mapping driver such as docker publishes it on; To <= 0 means Value).
// A group in bridge mode gets a network namespace of its own before its
// tasks start (network_hook.go, from its tasks' driver, a
// drivers.NetworkManager): the tasks join it (TaskConfig.Network), share
// its localhost, and also get NOMAD_ALLOC_IP_ and NOMAD_ALLOC_ADDR_; it is
// removed once the tasks are dead.
//
// Local state lives in a bbolt file, <data dir>/client/state.db: per
// allocation the allocation itself (rewritten only when the control plane
// changes it), an immutable record written once, the mutable client status,
// and per task its TaskState and the TaskHandle of its current launch. On
// start the agent restores from it: each handle goes back to its driver
// (Recover), so running tasks are re-attached, tasks that ended while the
// agent was down get their recorded exit status, and allocations whose
// state cannot be read are reported failed.
//
// Units: CPU in MHz, memory and disk in MiB, unless a name says bytes.
package nodeagent
