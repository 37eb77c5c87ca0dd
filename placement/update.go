package placement

import (
	"maps"
	"reflect"
	"slices"

	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/structs"
)

// UpdateType decides what an existing alloc needs to move to newJob, whose
// group is newTG. It is the reconciler's update function
// (reconcile.UpdateFunc), and mirrors Nomad's generic scheduler, which
// compares the alloc's own job version with the new one using its
// tasksUpdated check.
//
// Ignore (nothing to do):
//   - the alloc already runs this job version (same version and
//     incarnation);
//   - the alloc is terminal and nothing destructive changed (re-running a
//     finished batch alloc in place would be pointless work).
//
// Destructive (stop and replace), when anything a running task was started
// with changes:
//   - the group: its number of tasks or their names, its ephemeral disk
//     (size, sticky, migrate), its network block (mode, ports: the
//     ports a task was started with), its restart policy's
//     render_templates, its volume blocks;
//   - per task: driver, user, driver config, env, resources (CPU, cores,
//     memory, memory max), lifecycle (hook, sidecar), whether logging is
//     disabled, the restart policy's render_templates, templates,
//     artifacts, volume mounts (as Nomad's tasksUpdated; service blocks
//     are not among them: the node agent re-registers the services of an
//     alloc updated in place, as Nomad's, and Connect is refused);
//   - placement preferences: the affinities (job, group and task level)
//     or spreads (job and group level) that apply to the group, as
//     Nomad's tasksUpdated (an alloc placed under other preferences is
//     placed again);
//   - meta: the task's combined job + group + task meta (tasks see it as
//     NOMAD_META_* environment variables);
//   - placement: constraints at job, group or task level, datacenters and
//     node pool. UpdateType has no node at hand, so it replaces;
//     UpdateTypeOnNodes re-checks them against the alloc's node and
//     updates in place when the node still fits, as Nomad does.
//   - an alloc whose own job version is unknown (no Job) or lacks the
//     group.
//
// In place (the alloc keeps running and moves to the new version), for
// everything else, notably: count, update strategy, migrate strategy,
// reschedule policy, restart policy attempts / interval / delay / mode,
// kill timeout, kill signal, shutdown delay, leader, log file limits,
// max_client_disconnect, stop_after_client_disconnect, priority. The
// returned alloc is a copy with JobVersion and Job set to the new job.
func UpdateType(existing *structs.Allocation, newJob *structs.Job, newTG *structs.TaskGroup) (reconcile.UpdateKind, *structs.Allocation) {
	old := existing.Job
	if old == nil {
		if existing.JobVersion == newJob.Version {
			return reconcile.UpdateIgnore, nil
		}
		return reconcile.UpdateDestructive, nil
	}
	if old.Version == newJob.Version && old.CreateIndex == newJob.CreateIndex {
		return reconcile.UpdateIgnore, nil
	}
	oldTG := old.LookupTaskGroup(newTG.Name)
	if oldTG == nil || destructiveChange(old, oldTG, newJob, newTG) || placementChanged(old, oldTG, newJob, newTG) {
		return reconcile.UpdateDestructive, nil
	}
	return inPlace(existing, newJob)
}

// UpdateTypeOnNodes is UpdateType with the nodes at hand (by ID): an alloc
// whose job changed only in where it may run (constraints, datacenters,
// node pool) is updated in place when its node still satisfies the new
// job, and replaced otherwise, as Nomad's in-place update re-checks the
// node's feasibility.
func UpdateTypeOnNodes(nodes map[string]*structs.Node) reconcile.UpdateFunc {
	cc := newConstraintChecker()
	return func(existing *structs.Allocation, newJob *structs.Job, newTG *structs.TaskGroup) (reconcile.UpdateKind, *structs.Allocation) {
		old := existing.Job
		if old == nil || (old.Version == newJob.Version && old.CreateIndex == newJob.CreateIndex) {
			return UpdateType(existing, newJob, newTG)
		}
		oldTG := old.LookupTaskGroup(newTG.Name)
		if oldTG == nil || destructiveChange(old, oldTG, newJob, newTG) {
			return reconcile.UpdateDestructive, nil
		}
		if placementChanged(old, oldTG, newJob, newTG) && !fitsNode(cc, nodes[existing.NodeID], newJob, newTG) {
			return reconcile.UpdateDestructive, nil
		}
		return inPlace(existing, newJob)
	}
}

// fitsNode reports whether node n still satisfies the job's placement
// rules for tg: pool, datacenter, drivers and constraints.
func fitsNode(cc *constraintChecker, n *structs.Node, job *structs.Job, tg *structs.TaskGroup) bool {
	if n == nil || !inNodePool(n, job.NodePool) || !inDatacenters(n.Datacenter, job.Datacenters) || missingDriver(tg, n) != "" {
		return false
	}
	for _, c := range groupConstraints(job, tg) {
		if !cc.meets(c, n) {
			return false
		}
	}
	return true
}

// inPlace moves a live alloc to newJob; a terminal one is left alone.
func inPlace(existing *structs.Allocation, newJob *structs.Job) (reconcile.UpdateKind, *structs.Allocation) {
	if existing.TerminalStatus() {
		return reconcile.UpdateIgnore, nil
	}
	updated := existing.Copy()
	updated.Job = newJob
	updated.JobVersion = newJob.Version
	return reconcile.UpdateInPlace, updated
}

// destructiveChange reports whether moving from (oldJob, oldTG) to
// (newJob, newTG) changes anything a running task was started with (see
// UpdateType for the list).
func destructiveChange(oldJob *structs.Job, oldTG *structs.TaskGroup, newJob *structs.Job, newTG *structs.TaskGroup) bool {
	switch {
	case oldJob.Type != newJob.Type,
		// (A job registered under the ID of a purged job of another type:
		// an alloc placed by the other scheduler is not the new job's.)
		len(oldTG.Tasks) != len(newTG.Tasks),
		!ephemeralDiskEqual(oldTG.EphemeralDisk, newTG.EphemeralDisk),
		!structs.NetworksEqual(oldTG.Networks, newTG.Networks),
		rendersTemplates(oldTG.RestartPolicy) != rendersTemplates(newTG.RestartPolicy),
		!reflect.DeepEqual(oldTG.Volumes, newTG.Volumes),
		!preferencesEqual(groupAffinities(oldJob, oldTG), groupAffinities(newJob, newTG)),
		!preferencesEqual(groupSpreads(oldJob, oldTG), groupSpreads(newJob, newTG)):
		return true
	}
	for _, ot := range oldTG.Tasks {
		nt := newTG.LookupTask(ot.Name)
		if nt == nil || taskChanged(ot, nt) {
			return true
		}
		if !maps.Equal(combinedMeta(oldJob, oldTG, ot), combinedMeta(newJob, newTG, nt)) {
			return true
		}
	}
	return false
}

// placementChanged reports a change of where the group may run:
// constraints (job, group, task), datacenters or node pool.
func placementChanged(oldJob *structs.Job, oldTG *structs.TaskGroup, newJob *structs.Job, newTG *structs.TaskGroup) bool {
	if !constraintsEqual(oldJob.Constraints, newJob.Constraints) ||
		!constraintsEqual(oldTG.Constraints, newTG.Constraints) ||
		!slices.Equal(oldJob.Datacenters, newJob.Datacenters) ||
		oldJob.NodePool != newJob.NodePool {
		return true
	}
	for _, ot := range oldTG.Tasks {
		if nt := newTG.LookupTask(ot.Name); nt != nil && !constraintsEqual(ot.Constraints, nt.Constraints) {
			return true
		}
	}
	return false
}

// taskChanged reports a destructive change of one task's own settings.
func taskChanged(a, b *structs.Task) bool {
	return a.Driver != b.Driver ||
		a.User != b.User ||
		!configEqual(a.Config, b.Config) ||
		!maps.Equal(a.Env, b.Env) ||
		!resourcesEqual(a.Resources, b.Resources) ||
		!lifecycleEqual(a.Lifecycle, b.Lifecycle) ||
		logsDisabled(a.LogConfig) != logsDisabled(b.LogConfig) ||
		rendersTemplates(a.RestartPolicy) != rendersTemplates(b.RestartPolicy) ||
		!reflect.DeepEqual(a.Templates, b.Templates) ||
		!reflect.DeepEqual(a.Artifacts, b.Artifacts) ||
		!reflect.DeepEqual(a.VolumeMounts, b.VolumeMounts)
}

// configEqual compares driver configs (JSON values); nil and empty are
// the same.
func configEqual(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// resourcesEqual compares what a task asks of its node; nil asks nothing.
func resourcesEqual(a, b *structs.Resources) bool {
	var za, zb structs.Resources
	if a != nil {
		za = *a
	}
	if b != nil {
		zb = *b
	}
	return za.CPU == zb.CPU && za.Cores == zb.Cores && za.MemoryMB == zb.MemoryMB && za.MemoryMaxMB == zb.MemoryMaxMB
}

func lifecycleEqual(a, b *structs.TaskLifecycle) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func ephemeralDiskEqual(a, b *structs.EphemeralDisk) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func constraintsEqual(a, b []*structs.Constraint) bool {
	return slices.EqualFunc(a, b, func(x, y *structs.Constraint) bool {
		if x == nil || y == nil {
			return x == y
		}
		return *x == *y
	})
}

func logsDisabled(c *structs.LogConfig) bool { return c != nil && c.Disabled }

func rendersTemplates(p *structs.RestartPolicy) bool { return p != nil && p.RenderTemplates }

// combinedMeta is the meta a task sees: job meta, overridden by group meta,
// overridden by task meta.
func combinedMeta(job *structs.Job, tg *structs.TaskGroup, task *structs.Task) map[string]string {
	out := make(map[string]string, len(job.Meta)+len(tg.Meta)+len(task.Meta))
	maps.Copy(out, job.Meta)
	maps.Copy(out, tg.Meta)
	maps.Copy(out, task.Meta)
	return out
}

// preferencesEqual compares affinity or spread lists by value, nil and
// empty alike.
func preferencesEqual[T any](a, b []*T) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}
