package reconcile

import (
	"time"

	"github.com/drover-sched/drover/structs"
)

// The rules in this file are about one allocation in isolation: when a
// failed alloc may be replaced and how long to wait first, when a
// disconnected one expires, and when one on a lost node must be stopped.
// Nomad keeps them as methods on its Allocation; drover keeps them here,
// next to their only user, and reads every setting from the group of the
// job version the alloc runs (allocInfo.group), never from the current job.

const (
	// followupBatchWindow: delayed allocs whose times fall within this
	// window of the first one of a batch share one follow-up evaluation,
	// so a burst of failures does not create a burst of evaluations.
	followupBatchWindow = 5 * time.Second

	// rescheduleWindow: a failed alloc whose reschedule time is at most
	// this far in the future is replaced now rather than by a follow-up
	// evaluation, which absorbs small clock drift between evaluations.
	rescheduleWindow = 1 * time.Second

	// defaultKillTimeout is the kill timeout a task gets when it sets a
	// shorter one; stop_after_client_disconnect waits for it on top.
	defaultKillTimeout = 5 * time.Second
)

// lastEventTime is when the alloc last finished something: the latest
// FinishedAt of its tasks, or its modify time when no task has finished.
// It counts as the failure time of a failed alloc.
func lastEventTime(a *structs.Allocation) time.Time {
	var t time.Time
	for _, ts := range a.TaskStates {
		if ts != nil && ts.FinishedAt.After(t) {
			t = ts.FinishedAt
		}
	}
	if t.IsZero() {
		return time.Unix(0, a.ModifyTime).UTC()
	}
	return t
}

// reschedulePolicy is the policy of the alloc's own group, or nil.
func (ai *allocInfo) reschedulePolicy() *structs.ReschedulePolicy {
	if ai.group == nil {
		return nil
	}
	return ai.group.ReschedulePolicy
}

// nextDelay is how long to wait before replacing the failed alloc, grown
// from the policy's Delay by its delay function over the reschedule events
// so far: constant keeps Delay; exponential doubles the last delay;
// fibonacci adds the last two (restarting the series after a reset). A
// delay over MaxDelay is capped, and starts over at Delay when the alloc
// ran for longer than the cap since its last reschedule.
func (ai *allocInfo) nextDelay() time.Duration {
	p := ai.reschedulePolicy()
	if p == nil {
		return 0
	}
	a := ai.alloc
	delay := p.Delay
	if a.RescheduleTracker == nil || len(a.RescheduleTracker.Events) == 0 {
		return delay
	}
	events := a.RescheduleTracker.Events
	last := events[len(events)-1]
	if last == nil {
		return delay
	}
	switch p.DelayFunction {
	case structs.DelayFunctionExponential:
		delay = last.Delay * 2
	case structs.DelayFunctionFibonacci:
		if len(events) >= 2 && events[len(events)-2] != nil {
			prev := events[len(events)-2]
			if prev.Delay == p.MaxDelay && last.Delay == p.Delay {
				delay = last.Delay // the series was reset: start again
			} else {
				delay = last.Delay + prev.Delay
			}
		}
	default:
		return delay
	}
	if p.MaxDelay > 0 && delay > p.MaxDelay {
		delay = p.MaxDelay
		if lastEventTime(a).UnixNano()-last.RescheduleTime > delay.Nanoseconds() {
			delay = p.Delay
		}
	}
	return delay
}

// rescheduleAttempts counts the reschedule events within the policy's
// interval before failTime.
func (ai *allocInfo) rescheduleAttempts(p *structs.ReschedulePolicy, failTime time.Time) int {
	n := 0
	for _, e := range ai.alloc.RescheduleTracker.Events {
		if e != nil && failTime.UnixNano()-e.RescheduleTime < p.Interval.Nanoseconds() {
			n++
		}
	}
	return n
}

// rescheduleTimeAfter returns when an alloc that failed at failTime may be
// replaced, and whether its policy allows it at all: always when
// unlimited; with limited attempts, when fewer than Attempts reschedules
// happened within Interval and the next delay is shorter than Interval.
// An alloc that was never rescheduled (no tracker) has every attempt left.
func (ai *allocInfo) rescheduleTimeAfter(failTime time.Time) (time.Time, bool) {
	p := ai.reschedulePolicy()
	if p == nil {
		return time.Time{}, false
	}
	delay := ai.nextDelay()
	eligible := p.Unlimited || (p.Attempts > 0 && ai.alloc.RescheduleTracker == nil)
	if p.Attempts > 0 && ai.alloc.RescheduleTracker != nil {
		eligible = ai.rescheduleAttempts(p, failTime) < p.Attempts && delay < p.Interval
	}
	return failTime.Add(delay), eligible
}

// rescheduleTime is rescheduleTimeAfter for a failed alloc, counted from its
// failure time. Allocs that are not failed, or that the server already
// stopped, are never eligible.
func (ai *allocInfo) rescheduleTime() (time.Time, bool) {
	a := ai.alloc
	if a.DesiredStatus == structs.AllocDesiredStatusStop || a.ClientStatus != structs.AllocClientStatusFailed {
		return time.Time{}, false
	}
	failTime := lastEventTime(a)
	if failTime.IsZero() || ai.reschedulePolicy() == nil {
		return time.Time{}, false
	}
	return ai.rescheduleTimeAfter(failTime)
}

// needsToReconnect reports whether the alloc's last client-status
// transition recorded by the server is "unknown": it was disconnected and
// has not been seen reconnecting since.
func needsToReconnect(a *structs.Allocation) bool {
	for i := len(a.AllocStates) - 1; i >= 0; i-- {
		if s := a.AllocStates[i]; s != nil && s.Field == structs.AllocStateFieldClientStatus {
			return s.Value == structs.AllocClientStatusUnknown
		}
	}
	return false
}

// supportsDisconnect reports whether the disconnect / reconnect logic
// applies to the alloc: the server switch is on and the alloc's group has
// max_client_disconnect.
func (ai *allocInfo) supportsDisconnect(serverSupports bool) bool {
	return serverSupports && ai.group != nil && ai.group.MaxClientDisconnect != nil
}

// expired reports whether an unknown alloc has been disconnected for at
// least its group's max_client_disconnect: it is then lost for good.
func (ai *allocInfo) expired(now time.Time) bool {
	a := ai.alloc
	if a.ClientStatus != structs.AllocClientStatusUnknown || ai.group == nil || ai.group.MaxClientDisconnect == nil {
		return false
	}
	last := a.LastUnknown()
	if last.IsZero() {
		return false
	}
	return !now.Before(last.Add(*ai.group.MaxClientDisconnect))
}

// disconnectTimeout is when an alloc disconnecting now becomes lost:
// now + max_client_disconnect (now when unset).
func (ai *allocInfo) disconnectTimeout(now time.Time) time.Time {
	if ai.group == nil || ai.group.MaxClientDisconnect == nil {
		return now
	}
	return now.Add(*ai.group.MaxClientDisconnect)
}

// stopsAfterDisconnect reports whether the alloc's group has a non-zero
// stop_after_client_disconnect.
func (ai *allocInfo) stopsAfterDisconnect() bool {
	g := ai.group
	return g != nil && g.StopAfterClientDisconnect != nil && *g.StopAfterClientDisconnect != 0
}

// clientStopTime is when the node of a lost alloc will have stopped it by
// itself: stop_after_client_disconnect plus the longest kill timeout (at
// least the default) after the alloc was first marked lost, or after now
// when it has not been marked yet. Nomad reads the wall clock for "now"
// here; drover uses the reconciler's clock.
func (ai *allocInfo) clientStopTime(now time.Time) time.Time {
	var t time.Time
	for _, s := range ai.alloc.AllocStates {
		if s != nil && s.Field == structs.AllocStateFieldClientStatus && s.Value == structs.AllocClientStatusLost {
			t = s.Time
			break
		}
	}
	if t.IsZero() {
		t = now
	}
	kill := defaultKillTimeout
	for _, task := range ai.group.Tasks {
		if task != nil && task.KillTimeout > kill {
			kill = task.KillTimeout
		}
	}
	return t.Add(*ai.group.StopAfterClientDisconnect + kill)
}

// wantsTransition reports whether someone asked to move the alloc
// (migrate, reschedule or forced reschedule).
func wantsTransition(a *structs.Allocation) bool {
	t := a.DesiredTransition
	return t.ShouldMigrate() || t.ShouldReschedule() || t.ShouldForceReschedule()
}

// maxNormScore is the alloc's best placement score, or nil without scores.
func maxNormScore(a *structs.Allocation) *structs.NodeScoreMeta {
	return a.Metrics.MaxNormScore()
}
