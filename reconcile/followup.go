package reconcile

import (
	"slices"
	"strconv"
	"time"

	"github.com/drover-sched/drover/structs"
)

// followups creates the follow-up evaluations for delayed allocs, batched
// so that a burst of allocs due at about the same time needs one
// evaluation: the allocs are sorted by time, and each batch starts at its
// first alloc's time and takes every alloc due less than
// followupBatchWindow after it. It sorts delayed in place and returns the
// eval ID of each entry, in that order. The evals are appended to the
// group's follow-ups.
//
// The first eval of the call has the given description; later ones only
// when describeAll (Nomad describes every disconnect-timeout eval but only
// the first reschedule eval of a series).
func (g *groupRun) followups(delayed []delayedAlloc, trigger, description string, describeAll bool) []string {
	if len(delayed) == 0 {
		return nil
	}
	slices.SortStableFunc(delayed, func(a, b delayedAlloc) int { return a.at.Compare(b.at) })
	ids := make([]string, len(delayed))
	var evals []*structs.Evaluation
	var batch *structs.Evaluation
	for i, d := range delayed {
		if batch == nil || d.at.Sub(batch.WaitUntil) >= followupBatchWindow {
			desc := description
			if batch != nil && !describeAll {
				desc = ""
			}
			batch = g.newFollowup(trigger, desc, d.at)
			evals = append(evals, batch)
		}
		ids[i] = batch.ID
	}
	res := g.r.res
	res.DesiredFollowupEvals[g.name] = append(res.DesiredFollowupEvals[g.name], evals...)
	return ids
}

// newFollowup makes one pending follow-up evaluation of the job that must
// not run before waitUntil. Its ID is derived from the evaluation being
// processed, the group and the eval's rank within the group, so a re-run
// of the same evaluation creates the same follow-ups.
func (g *groupRun) newFollowup(trigger, description string, waitUntil time.Time) *structs.Evaluation {
	r := g.r
	job := r.job
	rank := g.followupCount
	g.followupCount++
	return &structs.Evaluation{
		ID:                structs.DeterministicID(r.in.EvalID, "followup", g.name, strconv.Itoa(rank)),
		Namespace:         job.Namespace,
		Priority:          r.in.EvalPriority,
		Type:              job.Type,
		TriggeredBy:       trigger,
		JobID:             job.ID,
		JobModifyIndex:    job.ModifyIndex,
		Status:            structs.EvalStatusPending,
		StatusDescription: description,
		WaitUntil:         waitUntil,
		PreviousEval:      r.in.EvalID,
		CreateTime:        r.in.Now.UnixNano(),
		ModifyTime:        r.in.Now.UnixNano(),
	}
}
