package nodeagent

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/drover-sched/drover/structs"
)

// Restart reasons, shown in Restarting and Not Restarting events.
const (
	ReasonWithinPolicy       = "Restart within policy"
	ReasonNoRestartsAllowed  = "Policy allows no restarts"
	ReasonUnrecoverableError = "Error was unrecoverable"
	ReasonDelay              = "Exceeded allowed attempts, applying a delay"
	// ReasonUserRestart is a restart asked for through the API
	// (/v1/client/allocation/:id/restart); it uses no attempt.
	ReasonUserRestart = "User requested restart"
)

// Default restart policies, as Nomad's: batch jobs try harder and fail;
// services keep trying with a delay.
var (
	defaultServiceRestartPolicy = structs.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: structs.RestartPolicyModeFail}
	defaultBatchRestartPolicy   = structs.RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: structs.RestartPolicyModeFail}
)

// restartDecision is what to do after a task ended.
type restartDecision int

const (
	// restartTask: start it again after the delay.
	restartTask restartDecision = iota
	// taskDone: the task finished its work (a batch task that exited
	// cleanly); it is dead and not failed.
	taskDone
	// taskFailed: no restart; the task is dead and failed.
	taskFailed
)

// restartTracker applies a restart policy: at most Attempts restarts within
// each Interval (the window opens at the first start and reopens at the
// first exit after it closed), Delay (plus up to 25% jitter) between
// them; once the attempts are used up, mode "fail" fails the task and mode
// "delay" waits until the window closes and goes on.
type restartTracker struct {
	policy structs.RestartPolicy
	// batch: a clean exit ends the task instead of restarting it.
	batch  bool
	clock  Clock
	jitter func() float64 // in [0, 1)

	windowStart time.Time
	count       int
}

func newRestartTracker(policy *structs.RestartPolicy, jobType string, clock Clock) *restartTracker {
	batch := jobType == structs.JobTypeBatch || jobType == structs.JobTypeSysBatch
	p := defaultServiceRestartPolicy
	if batch {
		p = defaultBatchRestartPolicy
	}
	if policy != nil {
		p = *policy
	}
	if p.Mode == "" {
		p.Mode = structs.RestartPolicyModeFail
	}
	return &restartTracker{policy: p, batch: batch, clock: clock, jitter: rand.Float64, windowStart: clock.Now()}
}

// newTaskRestartTracker is newRestartTracker for task: a lifecycle task
// that is not a sidecar is done once it exits successfully, as a batch
// task.
func newTaskRestartTracker(task *structs.Task, policy *structs.RestartPolicy, jobType string, clock Clock) *restartTracker {
	rt := newRestartTracker(policy, jobType, clock)
	if isEphemeralTask(task) {
		rt.batch = true
	}
	return rt
}

// next decides what follows the end of a run. successful is a clean exit;
// unrecoverable marks a start error that retrying cannot fix.
func (rt *restartTracker) next(successful, unrecoverable bool) (restartDecision, time.Duration, string) {
	if successful && rt.batch {
		return taskDone, 0, ""
	}
	if unrecoverable {
		return taskFailed, 0, ReasonUnrecoverableError
	}
	if rt.policy.Attempts <= 0 {
		return taskFailed, 0, ReasonNoRestartsAllowed
	}
	now := rt.clock.Now()
	end := rt.windowStart.Add(rt.policy.Interval)
	if !now.Before(end) {
		rt.windowStart = now
		rt.count = 0
		end = now.Add(rt.policy.Interval)
	}
	rt.count++
	if rt.count <= rt.policy.Attempts {
		return restartTask, rt.withJitter(rt.policy.Delay), ReasonWithinPolicy
	}
	if rt.policy.Mode == structs.RestartPolicyModeDelay {
		return restartTask, end.Sub(now), ReasonDelay
	}
	return taskFailed, 0, fmt.Sprintf("Exceeded allowed attempts %d in interval %v and mode is %q",
		rt.policy.Attempts, rt.policy.Interval, rt.policy.Mode)
}

// withJitter adds up to 25% of d.
func (rt *restartTracker) withJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d + time.Duration(rt.jitter()*float64(d)/4)
}
