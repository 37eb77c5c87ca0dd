package scheduler

import (
	"bytes"
	"encoding/json"

	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/structs"
)

// SimpleUpdateType is the spine's update decision: an alloc whose group
// changed in anything but count and update strategy is replaced
// (destructive); otherwise it moves to the new version in place. The
// finer decision of the reconciler issue replaces it.
func SimpleUpdateType(existing *structs.Allocation, newJob *structs.Job, newTG *structs.TaskGroup) (reconcile.UpdateKind, *structs.Allocation) {
	if existing.Job == nil {
		return reconcile.UpdateDestructive, nil
	}
	if existing.Job.Version == newJob.Version && existing.Job.CreateIndex == newJob.CreateIndex {
		return reconcile.UpdateIgnore, nil
	}
	old := existing.Job.LookupTaskGroup(newTG.Name)
	if old == nil || !bytes.Equal(groupShape(old), groupShape(newTG)) ||
		!bytes.Equal(jobShape(existing.Job), jobShape(newJob)) {
		return reconcile.UpdateDestructive, nil
	}
	updated := existing.Copy()
	updated.Job = newJob
	updated.JobVersion = newJob.Version
	return reconcile.UpdateInPlace, updated
}

func groupShape(tg *structs.TaskGroup) []byte {
	c := *tg
	c.Count = 0
	c.Update = nil
	b, _ := json.Marshal(&c)
	return b
}

func jobShape(j *structs.Job) []byte {
	b, _ := json.Marshal(struct {
		Meta        map[string]string
		Constraints []*structs.Constraint
		Datacenters []string
		NodePool    string
	}{j.Meta, j.Constraints, j.Datacenters, j.NodePool})
	return b
}
