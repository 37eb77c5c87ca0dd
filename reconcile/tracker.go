package reconcile

import (
	"time"

	"github.com/drover-sched/drover/structs"
)

// maxUnlimitedRescheduleEvents bounds the events a replacement inherits
// under an unlimited reschedule policy (Nomad keeps the last 5): only the
// delay function needs history then, and the tracker must stay small.
const maxUnlimitedRescheduleEvents = 5

// NextRescheduleTracker returns the reschedule tracker of a replacement of
// the failed alloc prev placed at now: prev's events that still matter
// (those within the policy's interval for limited attempts; the last few
// for an unlimited policy) plus one event for this reschedule, carrying
// the delay the policy applied. prev.Job must be the job version prev
// runs: its group's policy decides, as everywhere in the reconciler.
func NextRescheduleTracker(prev *structs.Allocation, now time.Time) *structs.RescheduleTracker {
	ai := &allocInfo{alloc: prev}
	if prev.Job != nil {
		ai.group = prev.Job.LookupTaskGroup(prev.TaskGroup)
	}
	p := ai.reschedulePolicy()
	var events []*structs.RescheduleEvent
	if prev.RescheduleTracker != nil && p != nil {
		past := prev.RescheduleTracker.Events
		if p.Attempts > 0 {
			for _, e := range past {
				if e != nil && p.Interval > 0 && now.UnixNano()-e.RescheduleTime <= p.Interval.Nanoseconds() {
					c := *e
					events = append(events, &c)
				}
			}
		} else {
			if len(past) > maxUnlimitedRescheduleEvents {
				past = past[len(past)-maxUnlimitedRescheduleEvents:]
			}
			for _, e := range past {
				if e != nil {
					c := *e
					events = append(events, &c)
				}
			}
		}
	}
	events = append(events, &structs.RescheduleEvent{
		RescheduleTime: now.UnixNano(), PrevAllocID: prev.ID, PrevNodeID: prev.NodeID, Delay: ai.nextDelay(),
	})
	return &structs.RescheduleTracker{Events: events}
}
