package structs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Job types, as in Nomad: service and batch jobs go through the reconciler,
// system and sysbatch jobs through the system scheduler (one alloc of each
// group per eligible node).
const (
	JobTypeService  = "service"
	JobTypeBatch    = "batch"
	JobTypeSystem   = "system"
	JobTypeSysBatch = "sysbatch"
)

// Job statuses, as Nomad reports them in a job's Status field.
const (
	JobStatusPending = "pending" // no allocation is running yet
	JobStatusRunning = "running" // at least one allocation is non-terminal
	JobStatusDead    = "dead"    // stopped, or every allocation is terminal
)

// Job priority bounds and default, as in Nomad (1..100, default 50).
const (
	JobMinPriority     = 1
	JobMaxPriority     = 100
	JobDefaultPriority = 50
)

// DefaultNamespace is the namespace a job lands in when it names none.
const DefaultNamespace = "default"

// DefaultNodePool is the node pool of nodes and jobs that name none.
const DefaultNodePool = "default"

// NodePoolAll is the built-in pool a job may name to run on every node.
const NodePoolAll = "all"

// Job is one version of a job specification plus the server-side fields
// that describe it (version, stability, indexes). The shape and JSON names
// are Nomad's structs.Job for the fields drover supports.
type Job struct {
	Region      string
	Namespace   string
	ID          string
	Name        string
	Type        string // JobTypeService, JobTypeBatch, JobTypeSystem or JobTypeSysBatch
	Priority    int    // 1..100
	AllAtOnce   bool
	Datacenters []string // empty or ["*"] means every datacenter
	NodePool    string
	Constraints []*Constraint
	// Affinities and Spreads are placement preferences for every group.
	Affinities []*Affinity `json:",omitempty"`
	Spreads    []*Spread   `json:",omitempty"`
	TaskGroups []*TaskGroup
	// Update is the job-level update strategy; groups inherit it when they
	// set none (Nomad's canonicalization does the merge).
	Update *UpdateStrategy `json:",omitempty"`
	// Multiregion is kept only so that the reconciler can tell a
	// multiregion job (deployments end "blocked" rather than successful);
	// the job parser rejects the block until drover supports it.
	Multiregion *Multiregion      `json:",omitempty"`
	Meta        map[string]string `json:",omitempty"`
	// Periodic makes the job a periodic parent: it runs nothing itself and
	// launches a child job at each of its cron times (Nomad's periodic
	// block).
	Periodic *PeriodicConfig `json:",omitempty"`
	// ParameterizedJob makes the job a parameterized parent: it runs
	// nothing itself and is dispatched into child jobs (Nomad's
	// parameterized block). A dispatched child keeps it, with Dispatched
	// set.
	ParameterizedJob *ParameterizedJobConfig `json:",omitempty"`
	// ParentID is the periodic or parameterized job this job was launched
	// or dispatched from ("" for a job the user registered).
	ParentID string `json:",omitempty"`
	// Dispatched marks a child dispatched from a parameterized job.
	Dispatched bool `json:",omitempty"`
	// DispatchIdempotencyToken is the token a dispatch was made with: a
	// second dispatch with the same token, while this child is not dead,
	// returns this child instead of a new one (Nomad's rule).
	DispatchIdempotencyToken string `json:",omitempty"`
	// Payload is a dispatched child's payload (base64 in JSON, at most
	// DispatchPayloadSizeLimit bytes), written into the task dir of each
	// task with a dispatch_payload block.
	Payload []byte `json:",omitempty"`

	// Server-side fields.

	// Stop marks a job the user stopped (deregistered without purge).
	Stop              bool
	Status            string
	StatusDescription string
	// Stable is true once a deployment of this version succeeded.
	Stable bool
	// Version starts at 0 and grows by one with every registration that
	// changes the specification.
	Version uint64
	// SubmitTime is when this version was registered, unix nanoseconds.
	SubmitTime int64
	// CreateIndex is the state index at which this job (incarnation) was
	// first registered. Allocations of an earlier incarnation of the same
	// job ID (purged, then registered again) carry a different one.
	CreateIndex uint64
	// ModifyIndex changes with every write to the job (status included).
	ModifyIndex uint64
	// JobModifyIndex changes only when the specification changes: a plan
	// computed from one JobModifyIndex commits only while it is current.
	JobModifyIndex uint64
}

// Multiregion is the subset of Nomad's multiregion block the reconciler
// needs: whether the job spans regions.
type Multiregion struct {
	Regions []*MultiregionRegion
}

// MultiregionRegion names one region of a multiregion job.
type MultiregionRegion struct {
	Name string
}

// IsMultiregion reports whether the job has a multiregion block with at
// least one region, as Nomad's Job.IsMultiregion.
func (j *Job) IsMultiregion() bool {
	return j != nil && j.Multiregion != nil && len(j.Multiregion.Regions) > 0
}

// Stopped reports whether the job is nil (purged) or marked stopped.
func (j *Job) Stopped() bool {
	return j == nil || j.Stop
}

// LookupTaskGroup returns the group with the given name, or nil.
func (j *Job) LookupTaskGroup(name string) *TaskGroup {
	if j == nil {
		return nil
	}
	for _, tg := range j.TaskGroups {
		if tg.Name == name {
			return tg
		}
	}
	return nil
}

// NamespacedID returns "namespace/id", the key drover uses wherever a job
// must be named across namespaces (queue message groups, for example).
func (j *Job) NamespacedID() string {
	return NamespacedJobID(j.Namespace, j.ID)
}

// NamespacedJobID returns "namespace/id".
func NamespacedJobID(namespace, jobID string) string {
	return namespace + "/" + jobID
}

// Copy returns a deep copy of the job. It goes through JSON, which is exact
// for every field of Job (Config values are JSON values to begin with).
// It panics only if the job holds values JSON cannot encode, which the
// parser never lets in.
func (j *Job) Copy() *Job {
	if j == nil {
		return nil
	}
	b, err := json.Marshal(j)
	if err != nil {
		panic(fmt.Sprintf("copy job %q: %v", j.ID, err))
	}
	out := new(Job)
	if err := json.Unmarshal(b, out); err != nil {
		panic(fmt.Sprintf("copy job %q: %v", j.ID, err))
	}
	return out
}

// TaskGroup is a set of tasks placed together on one node; Count copies of
// it run, each one allocation named job.group[index].
type TaskGroup struct {
	Name        string
	Count       int
	Constraints []*Constraint
	// Affinities and Spreads are the group's placement preferences.
	Affinities []*Affinity `json:",omitempty"`
	Spreads    []*Spread   `json:",omitempty"`
	Tasks      []*Task
	// Networks is the group's network block (at most one): its mode and
	// the static and dynamic ports its allocs hold on their node.
	Networks      []*NetworkResource `json:",omitempty"`
	RestartPolicy *RestartPolicy     `json:",omitempty"`
	// ReschedulePolicy decides whether and when a failed allocation is
	// replaced on another node (control-plane side; restarts are local).
	ReschedulePolicy *ReschedulePolicy `json:",omitempty"`
	EphemeralDisk    *EphemeralDisk    `json:",omitempty"`
	Update           *UpdateStrategy   `json:",omitempty"`
	Migrate          *MigrateStrategy  `json:",omitempty"`
	Meta             map[string]string `json:",omitempty"`
	// MaxClientDisconnect: when set, allocations on a node that stops
	// heartbeating become "unknown" for this long instead of "lost", and
	// may reconnect. (Nomad 1.8+: disconnect { lost_after }.)
	MaxClientDisconnect *time.Duration `json:",omitempty"`
	// StopAfterClientDisconnect: when set, allocations on a disconnected
	// node are stopped this long after the disconnect. (Nomad 1.8+:
	// disconnect { stop_on_client_after }.)
	StopAfterClientDisconnect *time.Duration `json:",omitempty"`
	// PreventRescheduleOnLost keeps a lost allocation from being replaced
	// until its node is back. (Nomad 1.8+: disconnect { replace = false }.)
	PreventRescheduleOnLost bool `json:",omitempty"`
	// ShutdownDelay is waited between deregistering and killing tasks.
	ShutdownDelay *time.Duration `json:",omitempty"`
	// MaxRunDuration, for batch and sysbatch jobs, is how long an
	// allocation of the group may run, from its creation, before the node
	// agent stops it (Nomad's group max_run_duration).
	MaxRunDuration *time.Duration `json:",omitempty"`
	// Volumes are the group's volume blocks by name (host volumes).
	Volumes map[string]*VolumeRequest `json:",omitempty"`
	// Scaling is the group's scaling block: Min and Max bound its count.
	Scaling *ScalingPolicy `json:",omitempty"`
	// Services are the group's service blocks (registered for the alloc).
	Services []*Service `json:",omitempty"`
}

// LookupTask returns the task with the given name, or nil.
func (tg *TaskGroup) LookupTask(name string) *Task {
	if tg == nil {
		return nil
	}
	for _, t := range tg.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// CombinedResources returns what one allocation of the group asks of a
// node: CPU (MHz) and memory (MiB) summed over the tasks, and the group's
// ephemeral disk (MiB).
func (tg *TaskGroup) CombinedResources() ComparableResources {
	var out ComparableResources
	for _, t := range tg.Tasks {
		if t.Resources != nil {
			out.CPU += int64(t.Resources.CPU)
			out.MemoryMB += int64(t.Resources.MemoryMB)
		}
	}
	if tg.EphemeralDisk != nil {
		out.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	return out
}

// Task is one process of a task group, run by a driver.
type Task struct {
	Name      string
	Driver    string
	User      string
	Lifecycle *TaskLifecycle `json:",omitempty"`
	// Config is the driver's configuration (for raw_exec: command, args).
	Config      map[string]any
	Constraints []*Constraint
	// Affinities are the task's placement preferences (they apply to its
	// group's allocations).
	Affinities    []*Affinity `json:",omitempty"`
	Env           map[string]string
	Resources     *Resources
	RestartPolicy *RestartPolicy    `json:",omitempty"`
	Meta          map[string]string `json:",omitempty"`
	// KillTimeout is how long the task has between its kill signal and
	// SIGKILL (Nomad default 5s).
	KillTimeout time.Duration
	LogConfig   *LogConfig `json:",omitempty"`
	// Leader: when the leader task exits, the other tasks are stopped.
	Leader        bool
	ShutdownDelay time.Duration
	// KillSignal is the first signal sent on stop (default SIGINT, as in
	// Nomad).
	KillSignal string
	// Templates are rendered into the task dir before the task starts.
	Templates []*Template `json:",omitempty"`
	// Artifacts are fetched into the task dir before the task starts.
	Artifacts []*TaskArtifact `json:",omitempty"`
	// VolumeMounts mount the group's volumes into the task.
	VolumeMounts []*VolumeMount `json:",omitempty"`
	// DispatchPayload writes a dispatched job's payload into the task dir.
	DispatchPayload *DispatchPayloadConfig `json:",omitempty"`
	// Services are the task's service blocks (registered while it runs).
	Services []*Service `json:",omitempty"`
}

// TaskLifecycle orders a task relative to the group's main tasks.
type TaskLifecycle struct {
	Hook    string // "prestart", "poststart" or "poststop"
	Sidecar bool
}

// Lifecycle hooks.
const (
	TaskLifecycleHookPrestart  = "prestart"
	TaskLifecycleHookPoststart = "poststart"
	TaskLifecycleHookPoststop  = "poststop"
)

// Resources is what a task asks for. CPU is in MHz, memory and disk in MiB.
type Resources struct {
	CPU         int // MHz
	Cores       int
	MemoryMB    int // MiB
	MemoryMaxMB int // MiB, 0 = no oversubscription
	DiskMB      int // MiB (deprecated at task level in Nomad; ephemeral disk wins)
}

// ComparableResources is a flat sum of resources used for fit checks:
// CPU in MHz, memory and disk in MiB.
type ComparableResources struct {
	CPU      int64
	MemoryMB int64
	DiskMB   int64
}

// Add returns r + o.
func (r ComparableResources) Add(o ComparableResources) ComparableResources {
	return ComparableResources{CPU: r.CPU + o.CPU, MemoryMB: r.MemoryMB + o.MemoryMB, DiskMB: r.DiskMB + o.DiskMB}
}

// Sub returns r - o.
func (r ComparableResources) Sub(o ComparableResources) ComparableResources {
	return ComparableResources{CPU: r.CPU - o.CPU, MemoryMB: r.MemoryMB - o.MemoryMB, DiskMB: r.DiskMB - o.DiskMB}
}

// Superset reports whether r covers o in every dimension; when it does not,
// it names the first exhausted dimension ("cpu", "memory" or "disk"), the
// words Nomad uses in DimensionExhausted.
func (r ComparableResources) Superset(o ComparableResources) (bool, string) {
	switch {
	case r.CPU < o.CPU:
		return false, "cpu"
	case r.MemoryMB < o.MemoryMB:
		return false, "memory"
	case r.DiskMB < o.DiskMB:
		return false, "disk"
	}
	return true, ""
}

// Constraint restricts placement: LTarget (usually an interpolated node
// attribute such as ${attr.kernel.name}) compared to RTarget by Operand.
type Constraint struct {
	LTarget string
	RTarget string
	Operand string
}

// String renders the constraint as Nomad does in placement metrics.
func (c *Constraint) String() string {
	return fmt.Sprintf("%s %s %s", c.LTarget, c.Operand, c.RTarget)
}

// Constraint operands. The ones drover evaluates are listed in
// SupportedConstraintOperands.
const (
	ConstraintEqual           = "="
	ConstraintEqualAlt        = "=="
	ConstraintIs              = "is"
	ConstraintNotEqual        = "!="
	ConstraintNot             = "not"
	ConstraintLess            = "<"
	ConstraintLessEqual       = "<="
	ConstraintGreater         = ">"
	ConstraintGreaterEqual    = ">="
	ConstraintRegex           = "regexp"
	ConstraintVersion         = "version"
	ConstraintSemver          = "semver"
	ConstraintSetContains     = "set_contains"
	ConstraintSetContainsAll  = "set_contains_all"
	ConstraintSetContainsAny  = "set_contains_any"
	ConstraintAttributeIsSet  = "is_set"
	ConstraintAttributeNotSet = "is_not_set"
	ConstraintDistinctHosts   = "distinct_hosts"
	ConstraintDistinctProp    = "distinct_property"
)

// RestartPolicy governs local restarts of a task by the node agent: at most
// Attempts restarts within each Interval, Delay apart; then Mode decides
// ("fail": the task fails; "delay": wait for the interval to end and go on).
type RestartPolicy struct {
	Attempts        int
	Interval        time.Duration
	Delay           time.Duration
	Mode            string // RestartPolicyModeFail or RestartPolicyModeDelay
	RenderTemplates bool   `json:",omitempty"`
}

// Restart policy modes.
const (
	RestartPolicyModeDelay = "delay"
	RestartPolicyModeFail  = "fail"
)

// ReschedulePolicy governs replacement of failed allocations by the control
// plane: Attempts within Interval (or Unlimited), with Delay grown by
// DelayFunction up to MaxDelay.
type ReschedulePolicy struct {
	Attempts      int
	Interval      time.Duration
	Delay         time.Duration
	DelayFunction string // "constant", "exponential" or "fibonacci"
	MaxDelay      time.Duration
	Unlimited     bool
}

// Reschedule delay functions.
const (
	DelayFunctionConstant    = "constant"
	DelayFunctionExponential = "exponential"
	DelayFunctionFibonacci   = "fibonacci"
)

// Enabled reports whether the policy allows any rescheduling.
func (p *ReschedulePolicy) Enabled() bool {
	return p != nil && (p.Unlimited || (p.Attempts > 0 && p.Interval > 0))
}

// UpdateStrategy is a group's rolling-update and canary configuration.
// MaxParallel 0 means no update strategy (all at once, no deployment).
type UpdateStrategy struct {
	Stagger          time.Duration
	MaxParallel      int
	HealthCheck      string // "checks", "task_states" or "manual"
	MinHealthyTime   time.Duration
	HealthyDeadline  time.Duration
	ProgressDeadline time.Duration
	Canary           int
	AutoRevert       bool
	AutoPromote      bool
}

// Update health checks.
const (
	UpdateHealthCheckChecks     = "checks"
	UpdateHealthCheckTaskStates = "task_states"
	UpdateHealthCheckManual     = "manual"
)

// IsEmpty reports whether the strategy does nothing (nil or MaxParallel 0),
// as Nomad's UpdateStrategy.IsEmpty.
func (u *UpdateStrategy) IsEmpty() bool {
	return u == nil || u.MaxParallel == 0
}

// MigrateStrategy governs how allocations leave a draining node.
type MigrateStrategy struct {
	MaxParallel     int
	HealthCheck     string
	MinHealthyTime  time.Duration
	HealthyDeadline time.Duration
}

// EphemeralDisk is the group's scratch disk. Sticky keeps it for a
// replacement on the same node; Migrate moves it to another node.
type EphemeralDisk struct {
	Sticky  bool
	SizeMB  int // MiB
	Migrate bool
}

// LogConfig bounds a task's captured stdout/stderr: MaxFiles files of at
// most MaxFileSizeMB MiB each per stream.
type LogConfig struct {
	MaxFiles      int
	MaxFileSizeMB int  // MiB
	Disabled      bool `json:",omitempty"`
}

// SpecChanged reports whether two versions of a job differ in their
// specification, ignoring the server-side fields (Stop, Status, Stable,
// Version, SubmitTime and indexes). A registration that changes nothing
// keeps its version, as in Nomad.
func SpecChanged(a, b *Job) bool {
	if a == nil || b == nil {
		return a != b
	}
	return !bytes.Equal(specJSON(a), specJSON(b))
}

func specJSON(j *Job) []byte {
	c := *j
	c.Stop, c.Status, c.StatusDescription, c.Stable = false, "", "", false
	c.Version, c.SubmitTime, c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = 0, 0, 0, 0, 0
	b, err := json.Marshal(&c)
	if err != nil {
		panic(fmt.Sprintf("encode job %q: %v", j.ID, err))
	}
	return b
}

// CurrentIncarnation returns the versions (of one job, in their order)
// that belong to cur, the job as registered now: a job purged and
// registered again starts a new incarnation (a new CreateIndex), and the
// versions of the purged one, which the stores keep while their allocs
// exist, are not its history, as Nomad deletes them with the job. A nil
// cur (the job is purged) has none.
func CurrentIncarnation(versions []*Job, cur *Job) []*Job {
	if cur == nil {
		return nil
	}
	out := make([]*Job, 0, len(versions))
	for _, v := range versions {
		if v.CreateIndex == cur.CreateIndex {
			out = append(out, v)
		}
	}
	return out
}
