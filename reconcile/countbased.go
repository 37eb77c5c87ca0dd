package reconcile

import (
	"sort"

	"github.com/drover-sched/drover/structs"
)

// CountBased is the spine's simple reconciler, kept until the full one
// (Reconcile) is wired in: it places missing names with the lowest free
// indexes, stops the highest indexes beyond count and duplicate names,
// stops everything when the job is stopped or purged or its group removed,
// and updates allocs of older versions in place or destructively as
// in.Update decides. It never reschedules: a failed or completed alloc
// keeps its name.
func CountBased(in Input) *Result {
	res := &Result{DesiredTGUpdates: map[string]*DesiredUpdates{}}
	byGroup := map[string][]*structs.Allocation{}
	for _, a := range in.Allocs {
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a)
	}
	counters := func(g string) *DesiredUpdates {
		d, ok := res.DesiredTGUpdates[g]
		if !ok {
			d = &DesiredUpdates{}
			res.DesiredTGUpdates[g] = d
		}
		return d
	}
	stop := func(a *structs.Allocation, desc string) {
		res.Stop = append(res.Stop, &Stop{Alloc: a, StatusDescription: desc})
		counters(a.TaskGroup).Stop++
	}

	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)

	for _, g := range groups {
		tg := in.Job.LookupTaskGroup(g)
		if in.Job.Stopped() || tg == nil {
			for _, a := range sortedByIndex(byGroup[g]) {
				if !a.TerminalStatus() {
					stop(a, "alloc not needed due to job update")
				}
			}
		}
	}
	if in.Job.Stopped() {
		return res
	}

	for _, tg := range in.Job.TaskGroups {
		d := counters(tg.Name)
		// An alloc occupies its name while it is wanted and has not been
		// lost; completed batch work and failed allocs keep theirs (no
		// rescheduling in this reconciler).
		var occupying []*structs.Allocation
		for _, a := range sortedByIndex(byGroup[tg.Name]) {
			if a.ServerTerminalStatus() || a.ClientStatus == structs.AllocClientStatusLost {
				continue
			}
			if !in.Batch && a.ClientStatus == structs.AllocClientStatusComplete {
				continue
			}
			occupying = append(occupying, a)
		}
		seen := map[uint]bool{}
		var keep []*structs.Allocation
		for _, a := range occupying {
			idx := a.Index()
			switch {
			case seen[idx]:
				stop(a, "alloc not needed as a duplicate name")
			case idx >= uint(tg.Count):
				stop(a, "alloc not needed due to job update")
			default:
				seen[idx] = true
				keep = append(keep, a)
			}
		}
		for _, a := range keep {
			if a.ClientTerminalStatus() || a.JobVersion == in.Job.Version || in.Update == nil {
				d.Ignore++
				continue
			}
			kind, updated := in.Update(a, in.Job, tg)
			switch kind {
			case UpdateInPlace:
				if updated == nil {
					updated = a
				}
				res.InPlaceUpdate = append(res.InPlaceUpdate, updated)
				d.InPlaceUpdate++
			case UpdateDestructive:
				res.DestructiveUpdate = append(res.DestructiveUpdate, &DestructiveUpdate{
					PlaceName: a.Name, PlaceTaskGroup: tg, StopAlloc: a,
					StopStatusDescription: "alloc is being updated due to job update",
				})
				d.DestructiveUpdate++
			default:
				d.Ignore++
			}
		}
		for idx := uint(0); idx < uint(tg.Count); idx++ {
			if seen[idx] {
				continue
			}
			res.Place = append(res.Place, &Placement{Name: structs.AllocName(in.JobID, tg.Name, idx), TaskGroup: tg})
			d.Place++
		}
	}
	return res
}

// sortedByIndex returns allocs ordered by name index, then create index
// and ID, so that the oldest copy of a duplicated name is kept.
func sortedByIndex(allocs []*structs.Allocation) []*structs.Allocation {
	out := append([]*structs.Allocation(nil), allocs...)
	sort.Slice(out, func(i, j int) bool {
		ai, aj := out[i].Index(), out[j].Index()
		if ai != aj {
			return ai < aj
		}
		if out[i].CreateIndex != out[j].CreateIndex {
			return out[i].CreateIndex < out[j].CreateIndex
		}
		return out[i].ID < out[j].ID
	})
	return out
}
