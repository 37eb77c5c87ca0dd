package storage

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"

	"github.com/drover-sched/drover/structs"
)

// The functions below are the change rules every backend applies, so that
// all stores write the same thing for the same request (invariant 7).

// ApplyStop applies a plan's stop to alloc a (the stored copy) at now
// (unix nanoseconds). It does not touch indexes.
func ApplyStop(a *structs.Allocation, st *structs.AllocStop, now int64) {
	a.DesiredStatus = st.DesiredStatus
	a.DesiredDescription = st.DesiredDescription
	if st.ClientStatus != "" && st.ClientStatus != a.ClientStatus {
		a.ClientStatus = st.ClientStatus
		a.AppendState(st.ClientStatus, time.Unix(0, now).UTC())
	}
	if st.FollowupEvalID != "" {
		a.FollowupEvalID = st.FollowupEvalID
	}
}

// ApplyUpdate applies a plan's in-place change to alloc a at now (unix
// nanoseconds). It does not touch indexes.
func ApplyUpdate(a *structs.Allocation, u *structs.AllocUpdate, now int64) {
	if u.JobVersion != nil {
		a.JobVersion = *u.JobVersion
	}
	if u.DeploymentID != nil && *u.DeploymentID != a.DeploymentID {
		a.DeploymentID = *u.DeploymentID
		a.DeploymentStatus = nil
	}
	if u.FollowupEvalID != nil {
		a.FollowupEvalID = *u.FollowupEvalID
	}
	if u.DesiredTransition != nil {
		a.DesiredTransition = *u.DesiredTransition
	}
	if u.ClientStatus != "" && u.ClientStatus != a.ClientStatus {
		a.ClientStatus = u.ClientStatus
		a.AppendState(u.ClientStatus, time.Unix(0, now).UTC())
	}
}

// ApplyClientUpdate copies the client-owned fields of u onto a and reports
// whether anything changed. A status the control plane decided (lost) is
// not overwritten by a late non-terminal report from the node (a terminal
// one replaces it: the node is the authority on how the alloc ended, as in
// Nomad). Deployment health counts only for the deployment the report
// names (u.DeploymentID), when that is still the alloc's: a late report
// from before the alloc joined another deployment, or one naming none, is
// not health in the current one.
func ApplyClientUpdate(a, u *structs.Allocation) bool {
	before, _ := json.Marshal(a)
	reported := &structs.Allocation{ClientStatus: u.ClientStatus}
	if a.ClientStatus != structs.AllocClientStatusLost || reported.ClientTerminalStatus() {
		if u.ClientStatus != "" {
			a.ClientStatus = u.ClientStatus
		}
		a.ClientDescription = u.ClientDescription
	}
	if u.TaskStates != nil {
		a.TaskStates = u.TaskStates
	}
	if u.DeploymentStatus != nil && u.DeploymentID != "" && u.DeploymentID == a.DeploymentID {
		ds := &structs.AllocDeploymentStatus{}
		if a.DeploymentStatus != nil {
			*ds = *a.DeploymentStatus
		}
		ds.Healthy = u.DeploymentStatus.Healthy
		ds.Timestamp = u.DeploymentStatus.Timestamp
		a.DeploymentStatus = ds
	}
	after, _ := json.Marshal(a)
	return !bytes.Equal(before, after)
}

// MergePlanDeployment prepares a plan's deployment d for writing over the
// stored one (nil: none): it keeps what the store counts and what may have
// changed since the plan's snapshot (placed, healthy and unhealthy allocs,
// promotion, a later progress deadline, canaries already placed), and takes
// the rest from the plan.
func MergePlanDeployment(stored, d *structs.Deployment) {
	if stored == nil {
		return
	}
	for name, g := range d.TaskGroups {
		old, ok := stored.TaskGroups[name]
		if !ok {
			continue
		}
		g.PlacedAllocs, g.HealthyAllocs, g.UnhealthyAllocs = old.PlacedAllocs, old.HealthyAllocs, old.UnhealthyAllocs
		g.Promoted = g.Promoted || old.Promoted
		if g.RequireProgressBy.Before(old.RequireProgressBy) {
			g.RequireProgressBy = old.RequireProgressBy
		}
		g.PlacedCanaries = unionIDs(old.PlacedCanaries, g.PlacedCanaries)
	}
}

func unionIDs(a, b []string) []string {
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, list := range [][]string{a, b} {
		for _, id := range list {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// HealthDecided reports the health an alloc's deployment counts for the
// first time (prev had none): +1 healthy or +1 unhealthy, as Nomad's
// state store counts it.
func HealthDecided(prev, now *structs.AllocDeploymentStatus) (healthy, unhealthy int) {
	if prev.HasHealth() || !now.HasHealth() {
		return 0, 0
	}
	if now.IsHealthy() {
		return 1, 0
	}
	return 0, 1
}

// CheckReservedPorts refuses placements on node n that take one of the
// node's reserved host ports (ReservedResources.Networks, the agent's
// reserved_ports): a *ConflictError naming the alloc and the port, as an
// over-commit is. Placements that hold no resources are not checked.
func CheckReservedPorts(n *structs.Node, placements []*structs.Allocation) error {
	reserved := n.ReservedHostPorts()
	if len(reserved) == 0 {
		return nil
	}
	for _, a := range placements {
		if !a.HoldsResources() {
			continue
		}
		for _, p := range a.AllocatedResources.HostPorts() {
			if _, found := slices.BinarySearch(reserved, p); found {
				return Conflictf("placement of %s on node %s: host port %d is reserved on the node", a.Name, n.ID, p)
			}
		}
	}
	return nil
}
