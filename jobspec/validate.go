package jobspec

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	driverspkg "github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/drivers/catalog"
	"github.com/drover-sched/drover/structs"
)

// Limits and minimums. The numbers are Nomad's except MaxIDLength, which is
// drover's own (Nomad sets none; drover keys storage items and alloc names
// on the job ID).
const (
	// MaxIDLength bounds a job's ID and Name, in bytes.
	MaxIDLength = 128
	// MinCPU is the least CPU a task may ask for, in MHz.
	MinCPU = 1
	// MinMemoryMB is the least memory a task may ask for, in MiB.
	MinMemoryMB = 10
	// MinEphemeralDiskMB is the least ephemeral disk a group may ask for, in MiB.
	MinEphemeralDiskMB = 10
	// MinRestartInterval is the shortest restart interval.
	MinRestartInterval = 5 * time.Second
	// MinRescheduleDelay is the shortest reschedule delay (and max_delay).
	MinRescheduleDelay = 5 * time.Second
	// MinRescheduleInterval is the shortest interval of a limited reschedule policy.
	MinRescheduleInterval = 15 * time.Second
	// MaxGroupCount bounds a group's count: drover's own limit (Nomad sets
	// none), so that one registration cannot ask the scheduler for more
	// allocations than it can plan in one evaluation.
	MaxGroupCount = 10000
)

var (
	validNamespace = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)
	validNodePool  = regexp.MustCompile(`^[a-zA-Z0-9-_]{1,128}$`)
)

// Validate checks a drover job against every rule of Nomad's job validation
// on the fields drover supports, and rejects what drover does not support
// (system and sysbatch jobs, multiregion, reserved cores). It returns nil or
// ValidationErrors listing all the problems found.
func Validate(job *structs.Job) error {
	var errs errorList
	if job == nil {
		errs.add("Job", "is missing")
		return errs.err()
	}
	validateJob(job, &errs)
	return errs.err()
}

func validateJob(j *structs.Job, errs *errorList) {
	const jp = "Job"
	if j.Region == "" {
		errs.add(join(jp, "Region"), "must not be empty")
	}
	switch {
	case j.ID == "":
		errs.add(join(jp, "ID"), "must not be empty")
	case strings.Contains(j.ID, " "):
		errs.add(join(jp, "ID"), "must not contain spaces (got %q)", j.ID)
	case strings.Contains(j.ID, "\x00"):
		errs.add(join(jp, "ID"), "must not contain null characters")
	case j.ID == "." || j.ID == ".." || strings.ContainsAny(j.ID, "/?#%") || hasControl(j.ID):
		errs.add(join(jp, "ID"), "must be usable in a URL path: not \".\" or \"..\", and no '/', '?', '#', '%%' or control characters (got %q)", j.ID)
	case len(j.ID) > MaxIDLength:
		errs.add(join(jp, "ID"), "must be at most %d bytes long (got %d)", MaxIDLength, len(j.ID))
	}
	switch {
	case j.Name == "":
		errs.add(join(jp, "Name"), "must not be empty")
	case strings.Contains(j.Name, "\x00"):
		errs.add(join(jp, "Name"), "must not contain null characters")
	case len(j.Name) > MaxIDLength:
		errs.add(join(jp, "Name"), "must be at most %d bytes long (got %d)", MaxIDLength, len(j.Name))
	}
	switch {
	case j.Namespace == "":
		errs.add(join(jp, "Namespace"), "must not be empty")
	case !validNamespace.MatchString(j.Namespace):
		errs.add(join(jp, "Namespace"), "must be 1 to 128 letters, digits or dashes (got %q)", j.Namespace)
	}
	switch j.Type {
	case structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem, structs.JobTypeSysBatch:
	case "":
		errs.add(join(jp, "Type"), "must not be empty (%s)", jobTypeList)
	default:
		errs.add(join(jp, "Type"), "unknown job type %q (%s)", j.Type, jobTypeList)
	}
	if j.Priority < structs.JobMinPriority || j.Priority > structs.JobMaxPriority {
		errs.add(join(jp, "Priority"), "must be between %d and %d (got %d)", structs.JobMinPriority, structs.JobMaxPriority, j.Priority)
	}
	for i, dc := range j.Datacenters {
		if dc == "" {
			errs.add(indexed(join(jp, "Datacenters"), i), "must not be empty (use \"*\" for any datacenter)")
		}
	}
	if !validNodePool.MatchString(j.NodePool) {
		errs.add(join(jp, "NodePool"), "must be 1 to 128 letters, digits, dashes or underscores (got %q)", j.NodePool)
	}
	if j.Multiregion != nil {
		errs.unsupported(jp, "multiregion")
	}
	validatePeriodic(j, errs)
	validateParameterized(j, errs)
	for i, c := range j.Constraints {
		validateConstraint(c, indexed(join(jp, "Constraints"), i), false, errs)
	}
	validateAffinities(j.Affinities, join(jp, "Affinities"), j.Type, errs)
	validateSpreads(j.Spreads, join(jp, "Spreads"), j.Type, errs)
	if j.Update != nil {
		if !allowsUpdate(j.Type) {
			errs.add(join(jp, "Update"), "update block is not allowed for %s jobs (rolling updates are for service and system jobs)", j.Type)
		}
		if isSystem(j.Type) && j.Update.Canary > 0 {
			errs.add(join(jp, "Update.Canary"), "canaries are not supported for system jobs by drover yet (got %d)", j.Update.Canary)
		}
		validateUpdate(j.Update, join(jp, "Update"), errs)
	}

	if len(j.TaskGroups) == 0 {
		errs.add(join(jp, "TaskGroups"), "must have at least one group")
	}
	seen := make(map[string]int)
	for i, tg := range j.TaskGroups {
		if tg == nil {
			errs.add(indexed(join(jp, "TaskGroups"), i), "must not be null")
			continue
		}
		gp := groupPath(i, tg.Name)
		switch {
		case tg.Name == "":
			errs.add(join(gp, "Name"), "must not be empty")
		case strings.Contains(tg.Name, "\x00"):
			errs.add(join(gp, "Name"), "must not contain null characters")
		default:
			if first, dup := seen[tg.Name]; dup {
				errs.add(join(gp, "Name"), "duplicates the name of Job.TaskGroups[%d]: group names must be unique", first)
			} else {
				seen[tg.Name] = i
			}
		}
		validateGroup(j, tg, gp, errs)
	}
}

func validateGroup(j *structs.Job, tg *structs.TaskGroup, gp string, errs *errorList) {
	if tg.Count > MaxGroupCount {
		errs.add(join(gp, "Count"), "must be at most %d (got %d)", MaxGroupCount, tg.Count)
	}
	if tg.Count < 0 {
		errs.add(join(gp, "Count"), "must not be negative (got %d)", tg.Count)
	}
	if j.Type == structs.JobTypeSystem && tg.Count > 1 {
		errs.add(join(gp, "Count"), "must be 0 or 1 for a system job: the system scheduler runs one alloc of the group per node (got %d)", tg.Count)
	}
	if len(tg.Tasks) == 0 {
		errs.add(join(gp, "Tasks"), "must have at least one task")
	}
	if tg.ShutdownDelay != nil && *tg.ShutdownDelay < 0 {
		errs.add(join(gp, "ShutdownDelay"), "must not be negative (got %v)", *tg.ShutdownDelay)
	}
	validateScaling(tg, gp, errs)
	if d := tg.MaxRunDuration; d != nil {
		if *d <= 0 {
			errs.add(join(gp, "MaxRunDuration"), "must be greater than zero (got %v)", *d)
		}
		if j.Type != structs.JobTypeBatch && j.Type != structs.JobTypeSysBatch {
			errs.add(join(gp, "MaxRunDuration"), "is only allowed in batch and sysbatch jobs (job type %q does not allow max_run_duration)", j.Type)
		}
	}
	if tg.MaxClientDisconnect != nil && *tg.MaxClientDisconnect < 0 {
		errs.add(join(gp, "MaxClientDisconnect"), "must not be negative (got %v)", *tg.MaxClientDisconnect)
	}
	if tg.StopAfterClientDisconnect != nil && *tg.StopAfterClientDisconnect < 0 {
		errs.add(join(gp, "StopAfterClientDisconnect"), "must not be negative (got %v)", *tg.StopAfterClientDisconnect)
	}
	if tg.MaxClientDisconnect != nil && tg.StopAfterClientDisconnect != nil {
		errs.add(join(gp, "StopAfterClientDisconnect"), "cannot be set together with max_client_disconnect")
	}
	// Nomad's rule on the deprecated fields, applied to what the disconnect
	// block maps onto them too, so that a job read back from drover
	// validates as it did when submitted.
	if tg.MaxClientDisconnect != nil && tg.PreventRescheduleOnLost && tg.ReschedulePolicy != nil && tg.ReschedulePolicy.Attempts > 0 {
		errs.add(join(gp, "PreventRescheduleOnLost"),
			"not replacing lost allocations (prevent_reschedule_on_lost, or disconnect replace = false) with max_client_disconnect or lost_after set needs a reschedule policy without attempts (got %d)",
			tg.ReschedulePolicy.Attempts)
	}
	for i, c := range tg.Constraints {
		validateConstraint(c, indexed(join(gp, "Constraints"), i), false, errs)
	}
	validateAffinities(tg.Affinities, join(gp, "Affinities"), j.Type, errs)
	validateSpreads(tg.Spreads, join(gp, "Spreads"), j.Type, errs)

	if tg.RestartPolicy == nil {
		errs.add(join(gp, "RestartPolicy"), "must be set")
	} else {
		validateRestart(tg.RestartPolicy, join(gp, "RestartPolicy"), errs)
	}
	switch {
	case isSystem(j.Type) && tg.ReschedulePolicy != nil:
		errs.add(join(gp, "ReschedulePolicy"), "must not be set for %s jobs (their allocs are replaced on their own node)", j.Type)
	case isSystem(j.Type):
	case tg.ReschedulePolicy == nil:
		errs.add(join(gp, "ReschedulePolicy"), "must be set")
	default:
		validateReschedule(tg.ReschedulePolicy, join(gp, "ReschedulePolicy"), errs)
	}
	if tg.EphemeralDisk == nil {
		errs.add(join(gp, "EphemeralDisk"), "must be set")
	} else if tg.EphemeralDisk.SizeMB < MinEphemeralDiskMB {
		errs.add(join(gp, "EphemeralDisk.SizeMB"), "must be at least %d MiB (got %d)", MinEphemeralDiskMB, tg.EphemeralDisk.SizeMB)
	}
	if u := tg.Update; u != nil {
		if !allowsUpdate(j.Type) {
			errs.add(join(gp, "Update"), "update block is not allowed for %s jobs (rolling updates are for service and system jobs)", j.Type)
		}
		if isSystem(j.Type) && u.Canary > 0 && (j.Update == nil || j.Update.Canary != u.Canary) {
			errs.add(join(gp, "Update.Canary"), "canaries are not supported for system jobs by drover yet (got %d)", u.Canary)
		}
		// A group that only inherits the job's update block has had it
		// checked at Job.Update already.
		if j.Update == nil || !reflect.DeepEqual(*u, *j.Update) {
			validateUpdate(u, join(gp, "Update"), errs)
		}
	}
	if m := tg.Migrate; m != nil {
		if j.Type != structs.JobTypeService {
			errs.add(join(gp, "Migrate"), "migrate block is not allowed for %s jobs", j.Type)
		}
		validateMigrate(m, join(gp, "Migrate"), errs)
	}

	validateNetworks(tg.Networks, join(gp, "Networks"), errs)
	validateBridgeTasks(tg, join(gp, "Networks"), errs)
	validateServices(tg, gp, errs)

	names := make(map[string]int)
	var leaders []int
	for i, t := range tg.Tasks {
		if t == nil {
			errs.add(indexed(join(gp, "Tasks"), i), "must not be null")
			continue
		}
		tp := taskPath(gp, i, t.Name)
		if t.Name != "" {
			if first, dup := names[t.Name]; dup {
				errs.add(join(tp, "Name"), "duplicates the name of Tasks[%d]: task names must be unique in a group", first)
			} else {
				names[t.Name] = i
			}
		}
		if t.Leader {
			leaders = append(leaders, i)
		}
		validateTask(j, tg, t, tp, errs)
	}
	if len(leaders) > 1 {
		errs.add(join(gp, "Tasks"), "at most one task may be the leader (tasks %v are)", leaders)
	}
}

// jobTypeList names the job types drover schedules, for messages.
var jobTypeList = fmt.Sprintf("%q, %q, %q or %q", structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem, structs.JobTypeSysBatch)

// isSystem reports whether jobs of type t go through the system scheduler.
func isSystem(t string) bool {
	return t == structs.JobTypeSystem || t == structs.JobTypeSysBatch
}

// allowsUpdate reports whether jobs of type t may have an update block
// (Nomad: service and system).
func allowsUpdate(t string) bool {
	return t == structs.JobTypeService || t == structs.JobTypeSystem
}

func validateTask(j *structs.Job, tg *structs.TaskGroup, t *structs.Task, tp string, errs *errorList) {
	validateDispatchPayload(t, tp, errs)
	switch {
	case t.Name == "":
		errs.add(join(tp, "Name"), "must not be empty")
	case strings.ContainsAny(t.Name, `/\`):
		errs.add(join(tp, "Name"), "must not contain slashes (it names a directory; got %q)", t.Name)
	case t.Name == "." || t.Name == ".." || t.Name == "alloc":
		errs.add(join(tp, "Name"), "must not be %q (it names a directory beside the alloc's shared \"alloc\" directory)", t.Name)
	case strings.Contains(t.Name, "\x00"):
		errs.add(join(tp, "Name"), "must not contain null characters")
	}

	if t.Driver == "" {
		errs.add(join(tp, "Driver"), "must be set (drover's drivers: %s)", strings.Join(Drivers(), ", "))
	} else if validate, ok := lookupDriver(t.Driver); !ok {
		errs.add(join(tp, "Driver"), "unknown driver %q (drover's drivers: %s)", t.Driver, strings.Join(Drivers(), ", "))
	} else {
		config := t.Config
		if config == nil {
			config = map[string]any{}
		}
		for _, e := range validate(config, driverspkg.ValidateContext{GroupPorts: groupPortLabels(tg), GroupNetworkMode: groupNetworkMode(tg)}) {
			errs.add(join(join(tp, "Config"), e.Field), "%s", e.Rule)
		}
	}

	for _, k := range sortedStringKeys(t.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			errs.add(join(tp, "Env"), "variable name %q must be non-empty, without '=' or null characters", k)
		}
		if strings.Contains(t.Env[k], "\x00") {
			errs.add(join(join(tp, "Env"), k), "must not contain null characters")
		}
	}

	if b, ok := catalog.Lookup(t.Driver); t.User != "" && ok && !b.TaskUser {
		errs.add(join(tp, "User"), "is not supported by the %s driver: it runs tasks as the agent's user (got %q)", t.Driver, t.User)
	}

	if t.KillTimeout < 0 {
		errs.add(join(tp, "KillTimeout"), "must not be negative (got %v)", t.KillTimeout)
	} else if j.Type == structs.JobTypeService && tg.Update != nil && tg.Update.ProgressDeadline > 0 && t.KillTimeout > tg.Update.ProgressDeadline {
		errs.add(join(tp, "KillTimeout"), "must not be longer than the group's update progress_deadline (%v > %v)", t.KillTimeout, tg.Update.ProgressDeadline)
	}
	if t.KillSignal != "" && !knownSignal(t.KillSignal) {
		errs.add(join(tp, "KillSignal"), "unknown signal %q (a name like SIGINT, SIGTERM, SIGQUIT, SIGUSR1)", t.KillSignal)
	}
	if t.ShutdownDelay < 0 {
		errs.add(join(tp, "ShutdownDelay"), "must not be negative (got %v)", t.ShutdownDelay)
	}
	validateTemplates(t.Templates, tp, errs)
	validateArtifacts(t.Artifacts, tp, errs)
	validateVolumeMounts(tg, t, tp, errs)

	if r := t.Resources; r == nil {
		errs.add(join(tp, "Resources"), "must be set")
	} else {
		rp := join(tp, "Resources")
		if r.Cores != 0 {
			errs.add(join(rp, "Cores"), "reserving cores is not supported by drover yet (ask for cpu in MHz)")
		}
		if r.CPU < MinCPU {
			errs.add(join(rp, "CPU"), "must be at least %d MHz (got %d)", MinCPU, r.CPU)
		}
		if r.MemoryMB < MinMemoryMB {
			errs.add(join(rp, "MemoryMB"), "must be at least %d MiB (got %d)", MinMemoryMB, r.MemoryMB)
		}
		switch {
		case r.MemoryMaxMB < 0:
			errs.add(join(rp, "MemoryMaxMB"), "must not be negative (got %d; an unlimited memory_max is not supported by drover yet)", r.MemoryMaxMB)
		case r.MemoryMaxMB != 0 && r.MemoryMaxMB < r.MemoryMB:
			errs.add(join(rp, "MemoryMaxMB"), "must be at least memory (%d MiB) (got %d)", r.MemoryMB, r.MemoryMaxMB)
		}
		if r.DiskMB != 0 {
			errs.add(join(rp, "DiskMB"), "a task cannot ask for disk (got %d MiB): set the group's ephemeral_disk size instead", r.DiskMB)
		}
	}

	if l := t.LogConfig; l == nil {
		errs.add(join(tp, "LogConfig"), "must be set")
	} else {
		lp := join(tp, "LogConfig")
		if l.MaxFiles < 1 {
			errs.add(join(lp, "MaxFiles"), "must be at least 1 (got %d)", l.MaxFiles)
		}
		if l.MaxFileSizeMB < 1 {
			errs.add(join(lp, "MaxFileSizeMB"), "must be at least 1 MiB (got %d)", l.MaxFileSizeMB)
		}
		if tg.EphemeralDisk != nil && l.MaxFiles >= 1 && l.MaxFileSizeMB >= 1 {
			if logs := int64(l.MaxFiles) * int64(l.MaxFileSizeMB); logs >= int64(tg.EphemeralDisk.SizeMB) {
				errs.add(lp, "log storage (%d files × %d MiB = %d MiB) must be less than the group's ephemeral disk (%d MiB)",
					l.MaxFiles, l.MaxFileSizeMB, logs, tg.EphemeralDisk.SizeMB)
			}
		}
	}

	for i, c := range t.Constraints {
		validateConstraint(c, indexed(join(tp, "Constraints"), i), true, errs)
	}
	validateAffinities(t.Affinities, join(tp, "Affinities"), j.Type, errs)

	if lc := t.Lifecycle; lc != nil {
		switch lc.Hook {
		case structs.TaskLifecycleHookPrestart, structs.TaskLifecycleHookPoststart, structs.TaskLifecycleHookPoststop:
		case "":
			errs.add(join(tp, "Lifecycle.Hook"), "must be set (%s, %s or %s)", structs.TaskLifecycleHookPrestart, structs.TaskLifecycleHookPoststart, structs.TaskLifecycleHookPoststop)
		default:
			errs.add(join(tp, "Lifecycle.Hook"), "unknown hook %q (%s, %s or %s)", lc.Hook, structs.TaskLifecycleHookPrestart, structs.TaskLifecycleHookPoststart, structs.TaskLifecycleHookPoststop)
		}
	}

	// The node agent restarts each task by its own policy (the group's,
	// merged with the task's restart block); check it unless it is the
	// group's, checked already.
	if rp := t.RestartPolicy; rp != nil && (tg.RestartPolicy == nil || *rp != *tg.RestartPolicy) {
		validateRestart(rp, join(tp, "RestartPolicy"), errs)
	}
}

func validateRestart(r *structs.RestartPolicy, path string, errs *errorList) {
	switch r.Mode {
	case structs.RestartPolicyModeDelay, structs.RestartPolicyModeFail:
	default:
		errs.add(join(path, "Mode"), "unknown mode %q (%q or %q)", r.Mode, structs.RestartPolicyModeFail, structs.RestartPolicyModeDelay)
	}
	if r.Attempts < 0 {
		errs.add(join(path, "Attempts"), "must not be negative (got %d)", r.Attempts)
	}
	if r.Attempts == 0 && r.Mode == structs.RestartPolicyModeDelay {
		errs.add(join(path, "Attempts"), "0 attempts with mode %q is ambiguous: use mode %q to never restart", r.Mode, structs.RestartPolicyModeFail)
	}
	if r.Delay < 0 {
		errs.add(join(path, "Delay"), "must not be negative (got %v)", r.Delay)
	}
	if r.Interval < MinRestartInterval {
		errs.add(join(path, "Interval"), "must be at least %v (got %v)", MinRestartInterval, r.Interval)
	}
	if need := satMul(r.Delay, r.Attempts); need > r.Interval {
		errs.add(join(path, "Interval"), "cannot fit %d restarts %v apart (%v > %v): lengthen the interval or shorten the delay",
			r.Attempts, r.Delay, need, r.Interval)
	}
}

var delayFunctions = []string{structs.DelayFunctionConstant, structs.DelayFunctionExponential, structs.DelayFunctionFibonacci}

func validateReschedule(r *structs.ReschedulePolicy, path string, errs *errorList) {
	if r.Attempts < 0 {
		errs.add(join(path, "Attempts"), "must not be negative (got %d)", r.Attempts)
	}
	// As in Nomad, a policy that never reschedules is not checked further.
	if r.Attempts <= 0 && !r.Unlimited {
		return
	}
	if r.Attempts > 0 {
		if r.Interval <= 0 {
			errs.add(join(path, "Interval"), "must be set when attempts is set (got %v)", r.Interval)
		}
		if r.Unlimited {
			errs.add(join(path, "Unlimited"), "cannot be true when attempts is set (%d): use either attempts and interval, or unlimited", r.Attempts)
		}
	}
	delaysOK := true
	if r.Delay < MinRescheduleDelay {
		errs.add(join(path, "Delay"), "must be at least %v (got %v)", MinRescheduleDelay, r.Delay)
		delaysOK = false
	}
	switch r.DelayFunction {
	case structs.DelayFunctionConstant:
	case structs.DelayFunctionExponential, structs.DelayFunctionFibonacci:
		if r.MaxDelay < MinRescheduleDelay {
			errs.add(join(path, "MaxDelay"), "must be at least %v with delay function %q (got %v)", MinRescheduleDelay, r.DelayFunction, r.MaxDelay)
			delaysOK = false
		}
		if r.MaxDelay < r.Delay {
			errs.add(join(path, "MaxDelay"), "must be at least the delay (%v) (got %v)", r.Delay, r.MaxDelay)
			delaysOK = false
		}
	default:
		errs.add(join(path, "DelayFunction"), "unknown delay function %q (one of %s)", r.DelayFunction, strings.Join(delayFunctions, ", "))
		delaysOK = false
	}
	if r.Unlimited {
		return
	}
	if r.Interval < MinRescheduleInterval {
		errs.add(join(path, "Interval"), "must be at least %v (got %v)", MinRescheduleInterval, r.Interval)
		return
	}
	if !delaysOK {
		return
	}
	if possible, needed, ok := rescheduleFits(r); !ok {
		errs.add(join(path, "Interval"), "can only make %d of %d attempts in %v with delay %v, delay function %q and max_delay %v: set the interval to at least %v",
			possible, r.Attempts, r.Interval, r.Delay, r.DelayFunction, r.MaxDelay, needed.Round(time.Second))
	}
}

// rescheduleFits works out whether r.Attempts reschedules fit in r.Interval
// given the delay progression: it returns how many fit, the interval all of
// them would need, and whether they all fit. The arithmetic is Nomad's: a
// constant delay needs attempts × delay; an exponential one its last delay
// below max_delay plus max_delay for each attempt past it; a Fibonacci one
// its last delay (growing by max_delay once past it). Closed forms keep a
// huge attempts count cheap.
func rescheduleFits(r *structs.ReschedulePolicy) (possible int, needed time.Duration, ok bool) {
	switch r.DelayFunction {
	case structs.DelayFunctionConstant:
		needed = satMul(r.Delay, r.Attempts)
		if r.Interval >= needed {
			return r.Attempts, needed, true
		}
		return int(r.Interval / r.Delay), needed, false

	case structs.DelayFunctionExponential:
		k := 0
		for ; k < r.Attempts; k++ {
			d, fits := doubled(r.Delay, k)
			if !fits || d > r.MaxDelay {
				break
			}
			needed = d
			if needed < r.Interval {
				possible++
			}
		}
		if rest := r.Attempts - k; rest > 0 {
			if r.Interval > needed {
				possible += min(rest, int((r.Interval-needed-1)/r.MaxDelay))
			}
			needed = satAdd(needed, satMul(r.MaxDelay, rest))
		}
		return possible, needed, possible >= r.Attempts

	case structs.DelayFunctionFibonacci:
		n := max(2, r.Attempts) // delays of attempts 0..n-1
		delays := []time.Duration{r.Delay, r.Delay}
		capped := -1 // index of the first delay cut to max_delay
		for i := 2; i < n && capped < 0; i++ {
			next := satAdd(delays[i-1], delays[i-2])
			if next > r.MaxDelay || next == math.MaxInt64 {
				next, capped = r.MaxDelay, i
			}
			delays = append(delays, next)
		}
		// Past the ceiling, delay i is (i-capped+1) × max_delay.
		delayAt := func(i int) time.Duration {
			if i < len(delays) {
				return delays[i]
			}
			return satMul(r.MaxDelay, i-capped+1)
		}
		needed = delayAt(n - 1)
		if r.Interval >= needed {
			return r.Attempts, needed, true
		}
		for i, d := range delays {
			if d > r.Interval {
				return i, needed, false
			}
		}
		return capped + int(r.Interval/r.MaxDelay), needed, false
	}
	return 0, 0, false
}

// doubled returns d × 2^k, and false if that overflows.
func doubled(d time.Duration, k int) (time.Duration, bool) {
	if k >= 63 {
		return 0, false
	}
	v := d << k
	if v>>k != d || v < 0 {
		return 0, false
	}
	return v, true
}

func satAdd(a, b time.Duration) time.Duration {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(d time.Duration, n int) time.Duration {
	if n <= 0 || d <= 0 {
		return 0
	}
	if d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}

var updateHealthChecks = []string{structs.UpdateHealthCheckChecks, structs.UpdateHealthCheckTaskStates, structs.UpdateHealthCheckManual}

func validateUpdate(u *structs.UpdateStrategy, path string, errs *errorList) {
	switch u.HealthCheck {
	case structs.UpdateHealthCheckChecks, structs.UpdateHealthCheckTaskStates, structs.UpdateHealthCheckManual:
	default:
		errs.add(join(path, "HealthCheck"), "unknown health check %q (one of %s)", u.HealthCheck, strings.Join(updateHealthChecks, ", "))
	}
	if u.MaxParallel < 0 {
		errs.add(join(path, "MaxParallel"), "must not be negative (got %d)", u.MaxParallel)
	}
	if u.Canary < 0 {
		errs.add(join(path, "Canary"), "must not be negative (got %d)", u.Canary)
	}
	if u.Canary == 0 && u.AutoPromote {
		errs.add(join(path, "AutoPromote"), "needs canaries: set canary above 0")
	}
	if u.MinHealthyTime < 0 {
		errs.add(join(path, "MinHealthyTime"), "must not be negative (got %v)", u.MinHealthyTime)
	}
	if u.HealthyDeadline <= 0 {
		errs.add(join(path, "HealthyDeadline"), "must be greater than zero (got %v)", u.HealthyDeadline)
	}
	if u.ProgressDeadline < 0 {
		errs.add(join(path, "ProgressDeadline"), "must not be negative (got %v)", u.ProgressDeadline)
	}
	if u.MinHealthyTime >= 0 && u.HealthyDeadline > 0 && u.MinHealthyTime >= u.HealthyDeadline {
		errs.add(join(path, "MinHealthyTime"), "must be less than healthy_deadline (%v >= %v)", u.MinHealthyTime, u.HealthyDeadline)
	}
	if u.ProgressDeadline > 0 && u.HealthyDeadline >= u.ProgressDeadline {
		errs.add(join(path, "HealthyDeadline"), "must be less than progress_deadline (%v >= %v)", u.HealthyDeadline, u.ProgressDeadline)
	}
	if u.Stagger <= 0 {
		errs.add(join(path, "Stagger"), "must be greater than zero (got %v)", u.Stagger)
	}
}

func validateMigrate(m *structs.MigrateStrategy, path string, errs *errorList) {
	if m.MaxParallel < 0 {
		errs.add(join(path, "MaxParallel"), "must not be negative (got %d)", m.MaxParallel)
	}
	switch m.HealthCheck {
	case structs.UpdateHealthCheckChecks, structs.UpdateHealthCheckTaskStates:
	case "":
		if m.MaxParallel > 0 {
			errs.add(join(path, "HealthCheck"), "must be set (%q or %q)", structs.UpdateHealthCheckChecks, structs.UpdateHealthCheckTaskStates)
		}
	default:
		errs.add(join(path, "HealthCheck"), "unknown health check %q (%q or %q)", m.HealthCheck, structs.UpdateHealthCheckChecks, structs.UpdateHealthCheckTaskStates)
	}
	if m.MinHealthyTime < 0 {
		errs.add(join(path, "MinHealthyTime"), "must not be negative (got %v)", m.MinHealthyTime)
	}
	if m.HealthyDeadline < 0 {
		errs.add(join(path, "HealthyDeadline"), "must not be negative (got %v)", m.HealthyDeadline)
	}
	if m.MinHealthyTime >= 0 && m.HealthyDeadline >= 0 && m.MinHealthyTime > m.HealthyDeadline {
		errs.add(join(path, "MinHealthyTime"), "must not be longer than healthy_deadline (%v > %v)", m.MinHealthyTime, m.HealthyDeadline)
	}
}

// hasControl reports whether s holds an ASCII control character.
func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

func sortedStringKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
