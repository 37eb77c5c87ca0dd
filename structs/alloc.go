package structs

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Allocation desired statuses (set by the control plane), as in Nomad.
const (
	AllocDesiredStatusRun   = "run"
	AllocDesiredStatusStop  = "stop"
	AllocDesiredStatusEvict = "evict"
)

// Allocation client statuses (reported by the node agent, or set by the
// control plane for lost and unknown allocs), as in Nomad.
const (
	AllocClientStatusPending  = "pending"
	AllocClientStatusRunning  = "running"
	AllocClientStatusComplete = "complete"
	AllocClientStatusFailed   = "failed"
	AllocClientStatusLost     = "lost"
	AllocClientStatusUnknown  = "unknown"
)

// Allocation is one placed copy of a task group on one node: the unit the
// node agent runs. Its Name is "job.group[index]".
//
// Job is not stored with the allocation (specs live once per job version);
// stores and the API fill it in from the job version the alloc runs
// (JobVersion), so readers see the same shape as Nomad's.
//
// The cbor tags are the embedded store's stored form of an alloc (CBOR,
// RFC 8949, each field keyed by its number): a number is never reused or
// renumbered; a new field takes the next free number of its struct (an
// untagged field is still stored, keyed by its name). Key 8 of
// Allocation was Job and stays unused.
type Allocation struct {
	ID        string `cbor:"1,keyasint,omitempty"`
	Namespace string `cbor:"2,keyasint,omitempty"`
	EvalID    string `cbor:"3,keyasint,omitempty"`
	Name      string `cbor:"4,keyasint,omitempty"`
	NodeID    string `cbor:"5,keyasint,omitempty"`
	NodeName  string `cbor:"6,keyasint,omitempty"`
	JobID     string `cbor:"7,keyasint,omitempty"`
	// Job is the job version this alloc runs; filled on read, not stored.
	Job *Job `json:",omitempty" cbor:"-"`
	// JobVersion is the version of the job this allocation runs.
	JobVersion uint64 `cbor:"9,keyasint,omitempty"`
	TaskGroup  string `cbor:"10,keyasint,omitempty"`

	// AllocatedResources is what the alloc holds on its node.
	AllocatedResources *AllocatedResources `json:",omitempty" cbor:"11,keyasint,omitempty"`
	// Resources and TaskResources are Nomad's older per-alloc and
	// per-task resource fields, which its CLI still reads (`node status`,
	// `alloc status`). The API fills them from AllocatedResources
	// (LegacyResources); they are never stored.
	Resources     *Resources            `json:",omitempty" cbor:"-"`
	TaskResources map[string]*Resources `json:",omitempty" cbor:"-"`
	Metrics       *AllocMetric          `json:",omitempty" cbor:"12,keyasint,omitempty"`

	DesiredStatus      string            `cbor:"13,keyasint,omitempty"`
	DesiredDescription string            `cbor:"14,keyasint,omitempty"`
	DesiredTransition  DesiredTransition `cbor:"15,keyasint,omitempty"`

	ClientStatus      string                `cbor:"16,keyasint,omitempty"`
	ClientDescription string                `cbor:"17,keyasint,omitempty"`
	TaskStates        map[string]*TaskState `json:",omitempty" cbor:"18,keyasint,omitempty"`
	// AllocStates records client-status transitions made by the control
	// plane (unknown on disconnect, lost), oldest first.
	AllocStates []*AllocState `json:",omitempty" cbor:"19,keyasint,omitempty"`

	DeploymentID     string                 `cbor:"20,keyasint,omitempty"`
	DeploymentStatus *AllocDeploymentStatus `json:",omitempty" cbor:"21,keyasint,omitempty"`

	// RescheduleTracker is the history of reschedules that led to this
	// alloc; it is carried over to each replacement.
	RescheduleTracker *RescheduleTracker `json:",omitempty" cbor:"22,keyasint,omitempty"`
	// FollowupEvalID is the delayed evaluation that will reschedule this
	// failed alloc.
	FollowupEvalID     string `cbor:"23,keyasint,omitempty"`
	PreviousAllocation string `cbor:"24,keyasint,omitempty"`
	NextAllocation     string `cbor:"25,keyasint,omitempty"`

	CreateIndex uint64 `cbor:"26,keyasint,omitempty"`
	ModifyIndex uint64 `cbor:"27,keyasint,omitempty"`
	// AllocModifyIndex changes when the server changes the alloc (not on
	// client status reports); the node agent acts on it.
	AllocModifyIndex uint64 `cbor:"28,keyasint,omitempty"`
	CreateTime       int64  `cbor:"29,keyasint,omitempty"` // unix nanoseconds
	ModifyTime       int64  `cbor:"30,keyasint,omitempty"` // unix nanoseconds
}

// DesiredTransition asks the control plane to move an alloc: Migrate off a
// draining node, Reschedule or ForceReschedule a failed one.
type DesiredTransition struct {
	Migrate         *bool `json:",omitempty" cbor:"1,keyasint,omitempty"`
	Reschedule      *bool `json:",omitempty" cbor:"2,keyasint,omitempty"`
	ForceReschedule *bool `json:",omitempty" cbor:"3,keyasint,omitempty"`
}

// ShouldMigrate reports whether the alloc is marked for migration.
func (d DesiredTransition) ShouldMigrate() bool { return d.Migrate != nil && *d.Migrate }

// ShouldReschedule reports whether the alloc is marked for rescheduling.
func (d DesiredTransition) ShouldReschedule() bool { return d.Reschedule != nil && *d.Reschedule }

// ShouldForceReschedule reports whether a reschedule is forced regardless of
// the reschedule policy.
func (d DesiredTransition) ShouldForceReschedule() bool {
	return d.ForceReschedule != nil && *d.ForceReschedule
}

// AllocatedResources is what an alloc holds on its node, in Nomad's shape:
// per task CPU (MHz, as CpuShares) and memory (MiB); shared disk (MiB).
type AllocatedResources struct {
	Tasks  map[string]*AllocatedTaskResources `cbor:"1,keyasint,omitempty"`
	Shared AllocatedSharedResources           `cbor:"2,keyasint,omitempty"`
}

// AllocatedTaskResources is one task's share of an alloc's resources.
type AllocatedTaskResources struct {
	Cpu    AllocatedCpuResources    `cbor:"1,keyasint,omitempty"`
	Memory AllocatedMemoryResources `cbor:"2,keyasint,omitempty"`
}

// AllocatedCpuResources holds CPU in MHz.
type AllocatedCpuResources struct {
	CpuShares int64 `cbor:"1,keyasint,omitempty"` // MHz
}

// AllocatedMemoryResources holds memory in MiB.
type AllocatedMemoryResources struct {
	MemoryMB    int64 `cbor:"1,keyasint,omitempty"` // MiB
	MemoryMaxMB int64 `cbor:"2,keyasint,omitempty"` // MiB
}

// AllocatedSharedResources is what the alloc's tasks share: the group's
// ephemeral disk in MiB and, for a group with a network block, the network
// it was given on its node (Networks: mode, the node's IP and device, each
// port with its host port) and its ports (Ports: label, host port, mapped
// port, host IP), in Nomad's shapes (`nomad alloc status` reads both).
type AllocatedSharedResources struct {
	DiskMB   int64                  `cbor:"1,keyasint,omitempty"` // MiB
	Networks []*NetworkResource     `cbor:"2,keyasint,omitempty"`
	Ports    []AllocatedPortMapping `cbor:"3,keyasint,omitempty"`
}

// Comparable flattens the allocated resources for fit checks.
func (a *AllocatedResources) Comparable() ComparableResources {
	var out ComparableResources
	if a == nil {
		return out
	}
	for _, t := range a.Tasks {
		out.CPU += t.Cpu.CpuShares
		out.MemoryMB += t.Memory.MemoryMB
	}
	out.DiskMB = a.Shared.DiskMB
	return out
}

// AllocatedResourcesFor builds what an alloc of tg holds on its node.
func AllocatedResourcesFor(tg *TaskGroup) *AllocatedResources {
	out := &AllocatedResources{Tasks: make(map[string]*AllocatedTaskResources, len(tg.Tasks))}
	for _, t := range tg.Tasks {
		tr := &AllocatedTaskResources{}
		if t.Resources != nil {
			tr.Cpu.CpuShares = int64(t.Resources.CPU)
			tr.Memory.MemoryMB = int64(t.Resources.MemoryMB)
			tr.Memory.MemoryMaxMB = int64(t.Resources.MemoryMaxMB)
		}
		out.Tasks[t.Name] = tr
	}
	if tg.EphemeralDisk != nil {
		out.Shared.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	return out
}

// AllocMetric records how a placement was made, or why it failed: the
// nodes looked at, filtered out (and by which constraint or class),
// exhausted (and in which dimension), and scores. Shape as Nomad's.
type AllocMetric struct {
	NodesEvaluated     int              `cbor:"1,keyasint,omitempty"`
	NodesFiltered      int              `cbor:"2,keyasint,omitempty"`
	NodesInPool        int              `cbor:"3,keyasint,omitempty"`
	NodePool           string           `cbor:"4,keyasint,omitempty"`
	NodesAvailable     map[string]int   `json:",omitempty" cbor:"5,keyasint,omitempty"` // by datacenter
	ClassFiltered      map[string]int   `json:",omitempty" cbor:"6,keyasint,omitempty"`
	ConstraintFiltered map[string]int   `json:",omitempty" cbor:"7,keyasint,omitempty"`
	NodesExhausted     int              `cbor:"8,keyasint,omitempty"`
	ClassExhausted     map[string]int   `json:",omitempty" cbor:"9,keyasint,omitempty"`
	DimensionExhausted map[string]int   `json:",omitempty" cbor:"10,keyasint,omitempty"`
	QuotaExhausted     []string         `json:",omitempty" cbor:"11,keyasint,omitempty"`
	ScoreMetaData      []*NodeScoreMeta `cbor:"12,keyasint,omitempty"`
	AllocationTime     time.Duration    `cbor:"13,keyasint,omitempty"`
	CoalescedFailures  int              `cbor:"14,keyasint,omitempty"`
}

// NodeScoreMeta is the score a node got for a placement. NormScore is the
// normalized final score in [0, 1] (higher is better).
type NodeScoreMeta struct {
	NodeID    string             `cbor:"1,keyasint,omitempty"`
	Scores    map[string]float64 `cbor:"2,keyasint,omitempty"`
	NormScore float64            `cbor:"3,keyasint,omitempty"`
}

// MaxNormScore returns the best NormScore in the metric, or nil when there
// is none, as Nomad's AllocMetric.MaxNormScore. The reconciler uses it to
// pick between an original alloc and its replacement on reconnect.
func (m *AllocMetric) MaxNormScore() *NodeScoreMeta {
	if m == nil || len(m.ScoreMetaData) == 0 {
		return nil
	}
	best := m.ScoreMetaData[0]
	for _, s := range m.ScoreMetaData[1:] {
		if s.NormScore > best.NormScore {
			best = s
		}
	}
	return best
}

// Task states.
const (
	TaskStatePending = "pending"
	TaskStateRunning = "running"
	TaskStateDead    = "dead"
)

// TaskState is a task's state as the node agent reports it.
type TaskState struct {
	State       string       `cbor:"1,keyasint,omitempty"` // pending, running or dead
	Failed      bool         `cbor:"2,keyasint,omitempty"`
	Restarts    uint64       `cbor:"3,keyasint,omitempty"`
	LastRestart time.Time    `cbor:"4,keyasint,omitempty"`
	StartedAt   time.Time    `cbor:"5,keyasint,omitempty"`
	FinishedAt  time.Time    `cbor:"6,keyasint,omitempty"`
	Events      []*TaskEvent `cbor:"7,keyasint,omitempty"`
}

// Successful reports whether the task is dead and did not fail.
func (ts *TaskState) Successful() bool {
	return ts.State == TaskStateDead && !ts.Failed
}

// Task event types, Nomad's strings.
const (
	TaskReceived          = "Received"
	TaskSetup             = "Task Setup"
	TaskSetupFailure      = "Setup Failure"
	TaskDriverFailure     = "Driver Failure"
	TaskStarted           = "Started"
	TaskTerminated        = "Terminated"
	TaskKilling           = "Killing"
	TaskKilled            = "Killed"
	TaskRestarting        = "Restarting"
	TaskNotRestarting     = "Not Restarting"
	TaskSiblingFailed     = "Sibling Task Failed"
	TaskLeaderDead        = "Leader Task Dead"
	TaskMainDead          = "Main Tasks Dead"
	TaskRestoreFailed     = "Failed Restoring Task"
	TaskRestartSignal     = "Restart Signaled"
	TaskSignaling         = "Signaling"
	TaskClientReconnected = "Reconnected"
	TaskPluginUnhealthy   = "Plugin became unhealthy"
	TaskWaitingPrevAlloc  = "Waiting for previous alloc"
	TaskBuildingTaskDir   = "Building Task Directory"
	TaskHookFailed        = "Task hook failed"
	// TaskHookMessage is a message from a task hook ("Template skipped
	// signal ...").
	TaskHookMessage = "Task hook message"
	// TaskDownloadingArtifacts: the task's artifacts are being fetched.
	TaskDownloadingArtifacts = "Downloading Artifacts"
	// TaskArtifactDownloadFailed: fetching an artifact failed.
	TaskArtifactDownloadFailed = "Failed Artifact Download"
	TaskMaxEventsPerTask       = 10 // events kept per task, oldest dropped first
	TaskEventDriverMessage     = "Driver"
)

// TaskPreviousAllocSkipped is the event of a task that starts without
// waiting for its previous alloc or moving that alloc's data, because the
// control plane will not describe it (drover's; Nomad only logs this).
const TaskPreviousAllocSkipped = "Previous Alloc Skipped"

// TaskEvent is one entry of a task's history. Time is unix nanoseconds.
type TaskEvent struct {
	Type           string            `cbor:"1,keyasint,omitempty"`
	Time           int64             `cbor:"2,keyasint,omitempty"` // unix nanoseconds
	DisplayMessage string            `cbor:"3,keyasint,omitempty"`
	Details        map[string]string `json:",omitempty" cbor:"4,keyasint,omitempty"`
	Message        string            `json:",omitempty" cbor:"5,keyasint,omitempty"`
	FailsTask      bool              `json:",omitempty" cbor:"6,keyasint,omitempty"`
	RestartReason  string            `json:",omitempty" cbor:"7,keyasint,omitempty"`
	SetupError     string            `json:",omitempty" cbor:"8,keyasint,omitempty"`
	DriverError    string            `json:",omitempty" cbor:"9,keyasint,omitempty"`
	ExitCode       int               `cbor:"10,keyasint,omitempty"`
	Signal         int               `cbor:"11,keyasint,omitempty"`
	KillReason     string            `json:",omitempty" cbor:"12,keyasint,omitempty"`
	KillTimeout    time.Duration     `json:",omitempty" cbor:"13,keyasint,omitempty"`
	KillError      string            `json:",omitempty" cbor:"14,keyasint,omitempty"`
	StartDelay     int64             `json:",omitempty" cbor:"15,keyasint,omitempty"` // nanoseconds
	FailedSibling  string            `json:",omitempty" cbor:"16,keyasint,omitempty"`
	// TaskSignal and TaskSignalReason name a signal sent through the API
	// and why (Nomad's "Signaling" event).
	TaskSignal       string `json:",omitempty" cbor:"17,keyasint,omitempty"`
	TaskSignalReason string `json:",omitempty" cbor:"18,keyasint,omitempty"`
}

// AllocState is one recorded transition of an alloc's client status.
type AllocState struct {
	Field string    `cbor:"1,keyasint,omitempty"` // always "client_status" today
	Value string    `cbor:"2,keyasint,omitempty"`
	Time  time.Time `cbor:"3,keyasint,omitempty"`
}

// AllocStateFieldClientStatus is the only AllocState field in use.
const AllocStateFieldClientStatus = "client_status"

// AllocDeploymentStatus is an alloc's health within its deployment.
// Healthy is nil until the node agent decides.
type AllocDeploymentStatus struct {
	Healthy     *bool     `json:",omitempty" cbor:"1,keyasint,omitempty"`
	Timestamp   time.Time `cbor:"2,keyasint,omitempty"`
	Canary      bool      `cbor:"3,keyasint,omitempty"`
	ModifyIndex uint64    `cbor:"4,keyasint,omitempty"`
}

// IsHealthy reports a decided healthy status.
func (s *AllocDeploymentStatus) IsHealthy() bool {
	return s != nil && s.Healthy != nil && *s.Healthy
}

// IsUnhealthy reports a decided unhealthy status.
func (s *AllocDeploymentStatus) IsUnhealthy() bool {
	return s != nil && s.Healthy != nil && !*s.Healthy
}

// HasHealth reports whether health has been decided either way.
func (s *AllocDeploymentStatus) HasHealth() bool {
	return s != nil && s.Healthy != nil
}

// IsCanary reports whether the alloc was placed as a canary.
func (s *AllocDeploymentStatus) IsCanary() bool {
	return s != nil && s.Canary
}

// RescheduleTracker is the chain of reschedule events behind an alloc.
type RescheduleTracker struct {
	Events []*RescheduleEvent `cbor:"1,keyasint,omitempty"`
}

// RescheduleEvent records one reschedule: when (unix nanoseconds), from
// which alloc and node, and the delay that was applied.
type RescheduleEvent struct {
	RescheduleTime int64         `cbor:"1,keyasint,omitempty"` // unix nanoseconds
	PrevAllocID    string        `cbor:"2,keyasint,omitempty"`
	PrevNodeID     string        `cbor:"3,keyasint,omitempty"`
	Delay          time.Duration `cbor:"4,keyasint,omitempty"`
}

// Copy returns a deep copy of the tracker.
func (rt *RescheduleTracker) Copy() *RescheduleTracker {
	if rt == nil {
		return nil
	}
	out := &RescheduleTracker{Events: make([]*RescheduleEvent, len(rt.Events))}
	for i, e := range rt.Events {
		c := *e
		out.Events[i] = &c
	}
	return out
}

// ServerTerminalStatus reports whether the control plane wants the alloc
// gone (desired stop or evict).
func (a *Allocation) ServerTerminalStatus() bool {
	return a.DesiredStatus == AllocDesiredStatusStop || a.DesiredStatus == AllocDesiredStatusEvict
}

// ClientTerminalStatus reports whether the alloc finished on its node
// (complete, failed or lost).
func (a *Allocation) ClientTerminalStatus() bool {
	switch a.ClientStatus {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	}
	return false
}

// TerminalStatus reports whether the alloc is terminal on either side: it
// no longer holds resources once both sides agree, and is never run again.
func (a *Allocation) TerminalStatus() bool {
	return a.ServerTerminalStatus() || a.ClientTerminalStatus()
}

// HoldsResources reports whether the alloc still counts against its node's
// capacity: until the node has finished it (client terminal), or until the
// server has stopped it and the node never started it. Nomad counts every
// non-terminal alloc; drover does the same.
func (a *Allocation) HoldsResources() bool {
	return !a.TerminalStatus()
}

// RanSuccessfully reports whether every task of the alloc finished
// without failing, and it had at least one task state: a batch alloc
// that did its work (Nomad's Allocation.RanSuccessfully).
func (a *Allocation) RanSuccessfully() bool {
	if len(a.TaskStates) == 0 {
		return false
	}
	for _, ts := range a.TaskStates {
		if ts == nil || !ts.Successful() {
			return false
		}
	}
	return true
}

// Index returns the alloc's name index (the number in "job.group[N]"), or
// 0 when the name has none.
func (a *Allocation) Index() uint {
	idx, _ := AllocIndexFromName(a.Name)
	return idx
}

// LastUnknown returns when the alloc last became "unknown", or the zero
// time.
func (a *Allocation) LastUnknown() time.Time {
	for i := len(a.AllocStates) - 1; i >= 0; i-- {
		s := a.AllocStates[i]
		if s.Field == AllocStateFieldClientStatus && s.Value == AllocClientStatusUnknown {
			return s.Time
		}
	}
	return time.Time{}
}

// AppendState records a client-status transition at t.
func (a *Allocation) AppendState(value string, t time.Time) {
	a.AllocStates = append(a.AllocStates, &AllocState{Field: AllocStateFieldClientStatus, Value: value, Time: t})
}

// Copy returns a deep copy of the alloc. Job is shared, not copied: job
// versions are immutable once written.
func (a *Allocation) Copy() *Allocation {
	if a == nil {
		return nil
	}
	c := *a
	if a.AllocatedResources != nil {
		ar := &AllocatedResources{Tasks: make(map[string]*AllocatedTaskResources, len(a.AllocatedResources.Tasks)), Shared: a.AllocatedResources.Shared}
		ar.Shared.Networks = CopyNetworks(a.AllocatedResources.Shared.Networks)
		if a.AllocatedResources.Shared.Ports != nil {
			ar.Shared.Ports = append([]AllocatedPortMapping(nil), a.AllocatedResources.Shared.Ports...)
		}
		for k, v := range a.AllocatedResources.Tasks {
			tv := *v
			ar.Tasks[k] = &tv
		}
		c.AllocatedResources = ar
	}
	if a.Metrics != nil {
		m := *a.Metrics
		m.ScoreMetaData = append([]*NodeScoreMeta(nil), a.Metrics.ScoreMetaData...)
		c.Metrics = &m
	}
	c.DesiredTransition = DesiredTransition{
		Migrate:         copyBoolPtr(a.DesiredTransition.Migrate),
		Reschedule:      copyBoolPtr(a.DesiredTransition.Reschedule),
		ForceReschedule: copyBoolPtr(a.DesiredTransition.ForceReschedule),
	}
	if a.TaskStates != nil {
		c.TaskStates = make(map[string]*TaskState, len(a.TaskStates))
		for k, v := range a.TaskStates {
			ts := *v
			ts.Events = make([]*TaskEvent, len(v.Events))
			for i, e := range v.Events {
				ec := *e
				ts.Events[i] = &ec
			}
			c.TaskStates[k] = &ts
		}
	}
	if a.AllocStates != nil {
		c.AllocStates = make([]*AllocState, len(a.AllocStates))
		for i, s := range a.AllocStates {
			sc := *s
			c.AllocStates[i] = &sc
		}
	}
	if a.DeploymentStatus != nil {
		ds := *a.DeploymentStatus
		ds.Healthy = copyBoolPtr(a.DeploymentStatus.Healthy)
		c.DeploymentStatus = &ds
	}
	c.RescheduleTracker = a.RescheduleTracker.Copy()
	return &c
}

func copyBoolPtr(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// AllocName returns Nomad's allocation name "job.group[index]".
func AllocName(jobID, group string, index uint) string {
	return jobID + "." + group + "[" + strconv.FormatUint(uint64(index), 10) + "]"
}

// AllocIndexFromName parses the index out of "job.group[index]". It
// returns false when the name has no well-formed trailing index.
func AllocIndexFromName(name string) (uint, bool) {
	if !strings.HasSuffix(name, "]") {
		return 0, false
	}
	open := strings.LastIndexByte(name, '[')
	if open < 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(name[open+1:len(name)-1], 10, 32)
	if err != nil {
		return 0, false
	}
	return uint(n), true
}

// AllocListStub is the summary of an allocation that list endpoints return,
// in Nomad's shape.
type AllocListStub struct {
	ID                 string
	EvalID             string
	Name               string
	Namespace          string
	NodeID             string
	NodeName           string
	JobID              string
	JobType            string
	JobVersion         uint64
	TaskGroup          string
	DesiredStatus      string
	DesiredDescription string
	ClientStatus       string
	ClientDescription  string
	TaskStates         map[string]*TaskState  `json:",omitempty"`
	DeploymentStatus   *AllocDeploymentStatus `json:",omitempty"`
	FollowupEvalID     string
	RescheduleTracker  *RescheduleTracker `json:",omitempty"`
	PreviousAllocation string
	NextAllocation     string
	CreateIndex        uint64
	ModifyIndex        uint64
	CreateTime         int64
	ModifyTime         int64
}

// Stub returns the list summary of the alloc.
func (a *Allocation) Stub() *AllocListStub {
	s := &AllocListStub{
		ID: a.ID, EvalID: a.EvalID, Name: a.Name, Namespace: a.Namespace,
		NodeID: a.NodeID, NodeName: a.NodeName, JobID: a.JobID, JobVersion: a.JobVersion,
		TaskGroup: a.TaskGroup, DesiredStatus: a.DesiredStatus, DesiredDescription: a.DesiredDescription,
		ClientStatus: a.ClientStatus, ClientDescription: a.ClientDescription, TaskStates: a.TaskStates,
		DeploymentStatus: a.DeploymentStatus, FollowupEvalID: a.FollowupEvalID,
		RescheduleTracker: a.RescheduleTracker, PreviousAllocation: a.PreviousAllocation,
		NextAllocation: a.NextAllocation, CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex,
		CreateTime: a.CreateTime, ModifyTime: a.ModifyTime,
	}
	if a.Job != nil {
		s.JobType = a.Job.Type
	}
	return s
}

// String names the alloc for logs and errors.
func (a *Allocation) String() string {
	return fmt.Sprintf("alloc %s (%s)", a.ID, a.Name)
}

// LegacyResources fills Resources and TaskResources from
// AllocatedResources: CPU MHz, memory MiB per task, the group's disk MiB.
func (a *Allocation) LegacyResources() {
	ar := a.AllocatedResources
	if ar == nil {
		return
	}
	total := &Resources{DiskMB: int(ar.Shared.DiskMB)}
	a.TaskResources = make(map[string]*Resources, len(ar.Tasks))
	for name, t := range ar.Tasks {
		r := &Resources{CPU: int(t.Cpu.CpuShares), MemoryMB: int(t.Memory.MemoryMB), MemoryMaxMB: int(t.Memory.MemoryMaxMB)}
		a.TaskResources[name] = r
		total.CPU += r.CPU
		total.MemoryMB += r.MemoryMB
		total.MemoryMaxMB += r.MemoryMaxMB
	}
	a.Resources = total
}
