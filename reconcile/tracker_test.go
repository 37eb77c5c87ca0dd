package reconcile

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

func trackerAlloc(policy *structs.ReschedulePolicy, events ...*structs.RescheduleEvent) *structs.Allocation {
	job := &structs.Job{ID: "j", TaskGroups: []*structs.TaskGroup{{Name: "g", ReschedulePolicy: policy}}}
	a := &structs.Allocation{ID: "prev", NodeID: "n1", TaskGroup: "g", Job: job, ClientStatus: structs.AllocClientStatusFailed}
	if events != nil {
		a.RescheduleTracker = &structs.RescheduleTracker{Events: events}
	}
	return a
}

func TestNextRescheduleTracker(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ev := func(ago, delay time.Duration) *structs.RescheduleEvent {
		return &structs.RescheduleEvent{RescheduleTime: now.Add(-ago).UnixNano(), PrevAllocID: "older", PrevNodeID: "n0", Delay: delay}
	}
	t.Run("first reschedule gets the base delay", func(t *testing.T) {
		p := &structs.ReschedulePolicy{Attempts: 2, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: "constant"}
		tr := NextRescheduleTracker(trackerAlloc(p), now)
		if len(tr.Events) != 1 || tr.Events[0].Delay != 5*time.Second || tr.Events[0].PrevAllocID != "prev" ||
			tr.Events[0].PrevNodeID != "n1" || tr.Events[0].RescheduleTime != now.UnixNano() {
			t.Fatalf("tracker: %+v", tr.Events[0])
		}
	})
	t.Run("limited attempts keep only events within the interval", func(t *testing.T) {
		p := &structs.ReschedulePolicy{Attempts: 3, Interval: 10 * time.Minute, Delay: 5 * time.Second, DelayFunction: "constant"}
		tr := NextRescheduleTracker(trackerAlloc(p, ev(time.Hour, 5*time.Second), ev(time.Minute, 5*time.Second)), now)
		if len(tr.Events) != 2 {
			t.Fatalf("events: %d, want the recent one plus the new one", len(tr.Events))
		}
	})
	t.Run("exponential doubles the last delay", func(t *testing.T) {
		p := &structs.ReschedulePolicy{Unlimited: true, Delay: 5 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour}
		tr := NextRescheduleTracker(trackerAlloc(p, ev(time.Minute, 20*time.Second)), now)
		if got := tr.Events[len(tr.Events)-1].Delay; got != 40*time.Second {
			t.Fatalf("delay %s, want 40s", got)
		}
	})
	t.Run("unlimited keeps the last five", func(t *testing.T) {
		p := &structs.ReschedulePolicy{Unlimited: true, Delay: 5 * time.Second, DelayFunction: "constant"}
		var past []*structs.RescheduleEvent
		for i := 0; i < 8; i++ {
			past = append(past, ev(time.Duration(10-i)*time.Minute, 5*time.Second))
		}
		tr := NextRescheduleTracker(trackerAlloc(p, past...), now)
		if len(tr.Events) != 6 || tr.Events[0].RescheduleTime != past[3].RescheduleTime {
			t.Fatalf("events: %d", len(tr.Events))
		}
	})
}
