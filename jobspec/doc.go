// Package jobspec turns jobs in Nomad's JSON job format into validated
// drover jobs (structs.Job).
//
// DecodeRegisterRequest reads the body of PUT /v1/jobs: Nomad's
// JobRegisterRequest, {"Job": {...}, "EnforceIndex": ..., ...}, which is
// also the shape `nomad job run -output` prints. FromAPI converts an
// api.Job; Validate checks a structs.Job. Every problem with the input comes
// back as ValidationErrors, each naming the field by its JSON path (with group
// and task names) and the rule it breaks:
//
//	Job.TaskGroups[0] "web".Tasks[0] "server".Resources.MemoryMB: must be at least 10 MiB (got 4)
//
// # Why github.com/hashicorp/nomad/api
//
// The job types and defaults come from HashiCorp's own Go API module rather
// than from hand-written copies: its types carry exactly the JSON field names
// Nomad prints and accepts (so a job from `nomad job run -output`, `nomad job
// inspect` or Nomad's Go client decodes as is, and any other field is a
// typo), and its Canonicalize fills in Nomad's defaults (priority, region,
// namespace, restart and reschedule policies per job type, update and
// migrate strategies merged from job to group, resources, kill timeout,
// logs, ephemeral disk, disconnect) the way Nomad's CLI and server do. It is
// maintained by HashiCorp alongside Nomad, licensed MPL-2.0 (unlike Nomad's
// server code, BUSL), and small: it pulls in only go-cleanhttp,
// go-rootcerts, cronexpr, go-homedir, mapstructure and gorilla/websocket,
// not Nomad's server. The module does not validate, so the validation here
// is drover's own code, written from the rules of Nomad's job validation
// (Job.Validate, TaskGroup.Validate, Task.Validate and friends).
//
// # Decoding
//
// The body must be one JSON object, with no trailing data. Before decoding,
// the JSON is walked alongside the api types, so that a wrong JSON type
// (Job.TaskGroups[0].Count: expected number, got string) and an unknown
// field (Job.TaskGroups[0].Cuont: unknown field) name their full path; a
// syntax error names its line, column and path. A body without "Job" is an
// error. Durations are integer nanoseconds, as Nomad's JSON has them.
//
// The job's namespace is the ?namespace= query parameter if given
// (DecodeOptions), else the body's "Namespace", else the job's, else
// "default", as in Nomad. A job without a node pool lands in "default".
// Datacenters are kept as given: empty means any datacenter (as Nomad ≥ 1.5
// treats it), and "*" is allowed.
//
// Unsupported blocks and fields are checked on the job as submitted, before
// Canonicalize fills some of them with defaults, and are rejected naming the
// block and where it is (Job.TaskGroups[0] "web": service block is not
// supported by drover yet): never ignored. When any is found, or a list holds
// a null element, the job is rejected without further checks.
//
// # Field by field
//
// api.Job:
//   - supported: Region, Namespace, ID, Name, Type (service, batch, system,
//     sysbatch), Priority,
//     AllAtOnce, Datacenters, NodePool, Constraints, TaskGroups, Update (merged
//     into the groups and kept as Job.Update), Reschedule and Migrate (merged
//     into the groups), Meta, Stop, Affinities and Spreads (affinity.go; not
//     in system and sysbatch jobs), Periodic and ParameterizedJob (periodic.go;
//     batch and sysbatch jobs).
//   - rejected: Multiregion, UI, ConsulNamespace, VaultNamespace, VersionTag;
//     Dispatched, DispatchIdempotencyToken, Payload and ParentID, which the
//     server sets on the children of periodic and parameterized jobs.
//   - ignored, because the server sets them (as Nomad's does): Status,
//     StatusDescription, Stable, Version, SubmitTime, CreateIndex,
//     ModifyIndex, JobModifyIndex, NomadTokenID.
//
// api.TaskGroup:
//   - supported: Name, Count, Constraints, Tasks, RestartPolicy (the
//     default for the group's tasks, merged into each task's), Disconnect
//     (LostAfter → MaxClientDisconnect, StopOnClientAfter →
//     StopAfterClientDisconnect, Replace = false → PreventRescheduleOnLost;
//     Reconcile only "best_score", drover's behaviour), the deprecated
//     MaxClientDisconnect, StopAfterClientDisconnect and
//     PreventRescheduleOnLost, ReschedulePolicy, EphemeralDisk, Update,
//     Migrate, Meta, ShutdownDelay, Networks (one block, mode host: Mode,
//     ReservedPorts and DynamicPorts with Label, Value, To, HostNetwork
//     "default"; MBits kept as given), MaxRunDuration (batch and sysbatch
//     jobs only, > 0, as Nomad's).
//   - Volumes: type host with source and read_only (volumes.go); CSI
//     volumes, per_alloc, sticky, access and attachment modes and mount
//     options are refused.
//   - Scaling: min (default the count), max (required), enabled, policy
//     (opaque), type horizontal; the count within min..max (scaling.go).
//   - Services (and a task's Services): provider "nomad" (the default;
//     "consul" and Consul-only settings are refused), name (${JOB},
//     ${TASKGROUP}, ${TASK}, ${BASE} replaced; default <job>-<group>[-<task>]),
//     port (label or number), tags, canary_tags, meta, address_mode,
//     address, on_update, check_restart, and http, tcp and script checks
//     with Nomad's rules; see services.go.
//   - Affinities and Spreads, as the job's (affinity.go).
//   - rejected: Consul;
//     in a network block: modes none and cni/*, bridge for a group
//     with a task on a driver other than docker, the dns and cni
//     blocks, Hostname outside bridge mode, Device, CIDR and IP (the
//     node's), another host network, ignore_collision.
//
// api.Task:
//   - supported: Name, Driver, User (for drivers that honour it),
//     Lifecycle, Config (checked by the driver), Constraints, Env, Resources, RestartPolicy, Meta, KillTimeout,
//     LogConfig (with the deprecated Enabled = false read as Disabled),
//     Leader, ShutdownDelay, KillSignal (empty means SIGINT, as in Nomad).
//   - Templates: source or data, destination, change_mode (noop, restart,
//     signal with change_signal), splay, perms, uid/gid, delimiters, env,
//     error_on_missing_key, once, wait; see templates.go for the rules
//     (Nomad's Template.Validate, plus the functions a template may call:
//     tasktemplate.Check).
//   - Artifacts: source (http or https; go-getter's other getters are
//     refused), options (checksum checked for form and length), headers,
//     mode, insecure, destination (inside the allocation directory);
//     chown is refused. See artifacts.go.
//   - VolumeMounts: volume (one of the group's), destination, read_only;
//     propagation modes other than private and selinux_label are refused.
//   - Affinities, as the job's (affinity.go).
//   - DispatchPayload: file, inside the task's local/ directory.
//   - rejected: Vault, Consul, CSIPluginConfig, Kind (Consul Connect),
//     ScalingPolicies, Secrets, Identity, Identities, Actions, Schedule.
//
// api.Resources:
//   - supported: CPU (MHz), MemoryMB, MemoryMaxMB (MiB).
//   - rejected: Networks, Devices, NUMA, Cores (non-zero), SecretsMB
//     (non-zero), IOPS (non-zero); DiskMB above 0 breaks Nomad's rule that
//     disk is asked for by the group's ephemeral_disk.
//
// api.JobRegisterRequest: Job, EnforceIndex, JobModifyIndex, PolicyOverride,
// PreserveCounts, PreserveResources, EvalPriority (1..100 when set),
// Submission, Region, Namespace and SecretID are all returned in
// RegisterRequest for the HTTP layer to act on.
//
// # Drivers
//
// drover's drivers are built in (drivers/catalog). A task must name a
// registered driver (RegisterDriver; Drivers lists them), whose validator
// checks the task's config with the same declaration (drivers.Spec) the
// node decodes it with: a key the driver does not declare is refused
// naming it, and every type and rule names the key (Config.args[1]: must
// be a string). raw_exec: "command" (required), "args". exec: "command"
// (required), "args", "pid_mode" and "ipc_mode" ("private" or "host"),
// "work_dir" (absolute), "cap_add"/"cap_drop" (refused while drover does
// not change capabilities). docker: Nomad's docker options that drover
// supports (drivers/docker.TaskConfig: image (required), force_pull,
// image_pull_timeout, auth, command, args, entrypoint, work_dir, labels,
// volumes, mount, network_mode, privileged, ...), each with its rules;
// "ports" names group network port labels. A task's User is accepted for drivers that
// run tasks as their user (exec, docker), refused for raw_exec.
//
// # Validation rules
//
// Nomad's, on the fields drover supports, plus a few of drover's own
// (marked *):
//   - job: region, namespace (1-128 letters, digits, dashes), type, name
//     and ID set; ID without spaces or null characters; name without null
//     characters; ID and name at most 128 bytes*; priority 1..100;
//     datacenters non-empty strings; node pool name; at least one group;
//     constraints.
//   - group: name set, without null characters, unique; count ≥ 0; at least
//     one task; shutdown_delay ≥ 0; restart, reschedule (none for system
//     and sysbatch jobs), ephemeral disk present; ephemeral disk ≥ 10 MiB;
//     update only for service and system jobs (no canaries for system
//     jobs*); migrate only for service jobs; count at most 1 in system
//     jobs; at most one leader task; task names unique; constraints.
//   - network: at most one block*; mode host (or empty) or bridge (every
//     task on docker; no task network_mode, hostname, dns_* or
//     extra_hosts then); Hostname a host name; port labels set,
//     letters, digits, underscores and dashes*, unique in the group; static
//     ports 1..65535 and unique; dynamic ports without a value*; to
//     -1..65535.
//   - disconnect: lost_after, stop_on_client_after, max_client_disconnect,
//     stop_after_client_disconnect ≥ 0; not lost_after with
//     stop_on_client_after, nor max_client_disconnect with
//     stop_after_client_disconnect; the new and deprecated spelling of a
//     setting not both; max_client_disconnect with prevent_reschedule_on_lost
//     only when the reschedule policy allows no attempts (applied to
//     lost_after with replace = false too*, so that a job read back from
//     drover, where they are stored as the deprecated fields, validates as
//     it did when submitted); reconcile a known option.
//   - task: name set, without slashes or null characters; driver set and
//     known; driver config; kill_timeout ≥ 0 and, in service jobs, not
//     longer than the group's progress_deadline; kill_signal a known signal*;
//     shutdown_delay ≥ 0; resources present, cpu ≥ 1 MHz, memory ≥ 10 MiB,
//     memory_max 0 or ≥ memory (not negative*); no task disk; logs present,
//     max_files ≥ 1, max_file_size ≥ 1 MiB, log storage below the
//     ephemeral disk size; lifecycle hook prestart, poststart or poststop;
//     constraints, without distinct_hosts or distinct_property.
//   - restart (the group's, and a task's when it differs): mode fail or
//     delay; attempts ≥ 0*; 0 attempts only with mode fail; delay ≥ 0*;
//     interval ≥ 5s; attempts × delay ≤ interval.
//   - reschedule (when it allows any attempt): attempts ≥ 0*; interval set
//     with attempts; not both attempts and unlimited; delay ≥ 5s; delay
//     function constant, exponential or fibonacci; for the last two
//     max_delay ≥ 5s and ≥ delay; when limited, interval ≥ 15s and long
//     enough for the attempts given the delay progression ("can only make N
//     of M attempts in ...").
//   - update (the job's, and a group's when it differs): health_check
//     checks, task_states or manual; max_parallel ≥ 0; canary ≥ 0;
//     auto_promote needs canaries; min_healthy_time ≥ 0 and <
//     healthy_deadline; healthy_deadline > 0; progress_deadline ≥ 0 and,
//     when set, > healthy_deadline; stagger > 0.
//   - migrate: max_parallel ≥ 0; health_check checks or task_states (needed
//     when max_parallel > 0); min_healthy_time, healthy_deadline ≥ 0 and
//     min_healthy_time ≤ healthy_deadline.
//   - constraint: operator one of ConstraintOperands (Nomad's set, declared
//     in structs); attribute set (except distinct_hosts) with a valid
//     ${...} interpolation; comparison operators need a value; regexp
//     compiles; version parses (go-version); semver parses (strict
//     Semantic Versioning terms); set_contains* need a value; is_set and
//     is_not_set take none; distinct_hosts value a boolean*;
//     distinct_property value a count ≥ 1.
//   - request: EvalPriority 0 or 1..100.
package jobspec
