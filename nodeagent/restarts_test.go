package nodeagent

import (
	"testing"
	"time"

	"github.com/drover-sched/drover/structs"
)

func TestRestartTrackerFailMode(t *testing.T) {
	clk := newFakeClock()
	p := &structs.RestartPolicy{Attempts: 2, Interval: 10 * time.Minute, Delay: 15 * time.Second, Mode: structs.RestartPolicyModeFail}
	rt := newRestartTracker(p, structs.JobTypeService, clk)
	rt.jitter = func() float64 { return 0.5 }

	// Two restarts within the interval, each delayed 15s plus jitter.
	for i := 0; i < 2; i++ {
		clk.Advance(time.Minute)
		dec, delay, reason := rt.next(false, false)
		if dec != restartTask || reason != ReasonWithinPolicy {
			t.Fatalf("exit %d: decision %v reason %q", i+1, dec, reason)
		}
		if want := 15*time.Second + 15*time.Second/8; delay != want {
			t.Fatalf("exit %d: delay %v, want %v (15s + half of the 25%% jitter)", i+1, delay, want)
		}
	}
	// The third failure within the same interval fails the task.
	clk.Advance(time.Minute)
	if dec, _, reason := rt.next(false, false); dec != taskFailed || reason == "" {
		t.Fatalf("third exit: decision %v reason %q", dec, reason)
	}

	// A new tracker: once the interval has passed, the count starts over.
	rt = newRestartTracker(p, structs.JobTypeService, clk)
	rt.jitter = func() float64 { return 0 }
	for i := 0; i < 2; i++ {
		if dec, _, _ := rt.next(false, false); dec != restartTask {
			t.Fatalf("exit %d not restarted", i+1)
		}
	}
	clk.Advance(10 * time.Minute) // window [t0, t0+10m) has closed
	for i := 0; i < 2; i++ {
		if dec, delay, _ := rt.next(false, false); dec != restartTask || delay != 15*time.Second {
			t.Fatalf("exit %d of the new window: decision %v delay %v", i+1, dec, delay)
		}
	}
	if dec, _, _ := rt.next(false, false); dec != taskFailed {
		t.Fatal("third exit of the new window should fail")
	}
}

func TestRestartTrackerDelayMode(t *testing.T) {
	clk := newFakeClock()
	p := &structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: structs.RestartPolicyModeDelay}
	rt := newRestartTracker(p, structs.JobTypeService, clk)
	rt.jitter = func() float64 { return 0 }

	clk.Advance(5 * time.Second)
	if dec, delay, reason := rt.next(false, false); dec != restartTask || delay != time.Second || reason != ReasonWithinPolicy {
		t.Fatalf("first exit: %v %v %q", dec, delay, reason)
	}
	clk.Advance(5 * time.Second) // t0+10s
	dec, delay, reason := rt.next(false, false)
	if dec != restartTask || reason != ReasonDelay || delay != 50*time.Second {
		t.Fatalf("second exit: %v %v %q; want restart after the rest of the interval (50s)", dec, delay, reason)
	}
	clk.Advance(delay) // exactly at the end of the interval: a new window opens
	if dec, delay, reason := rt.next(false, false); dec != restartTask || delay != time.Second || reason != ReasonWithinPolicy {
		t.Fatalf("exit after the delay: %v %v %q", dec, delay, reason)
	}
}

func TestRestartTrackerSuccessAndNoAttempts(t *testing.T) {
	clk := newFakeClock()
	none := &structs.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Second, Mode: structs.RestartPolicyModeFail}
	if dec, _, _ := newRestartTracker(none, structs.JobTypeBatch, clk).next(true, false); dec != taskDone {
		t.Errorf("batch success: %v", dec)
	}
	if dec, _, reason := newRestartTracker(none, structs.JobTypeBatch, clk).next(false, false); dec != taskFailed || reason != ReasonNoRestartsAllowed {
		t.Errorf("batch failure without attempts: %v %q", dec, reason)
	}
	// A service that exits cleanly is restarted: services are not meant
	// to end.
	some := &structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: structs.RestartPolicyModeFail}
	if dec, _, _ := newRestartTracker(some, structs.JobTypeService, clk).next(true, false); dec != restartTask {
		t.Errorf("service success: %v", dec)
	}
	if dec, _, reason := newRestartTracker(some, structs.JobTypeService, clk).next(false, true); dec != taskFailed || reason != ReasonUnrecoverableError {
		t.Errorf("unrecoverable: %v %q", dec, reason)
	}
	// Defaults when the job sets none.
	if rt := newRestartTracker(nil, structs.JobTypeBatch, clk); rt.policy.Attempts != 3 || rt.policy.Interval != 24*time.Hour {
		t.Errorf("batch default: %+v", rt.policy)
	}
}
