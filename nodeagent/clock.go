package nodeagent

import "time"

// Clock is the time source of the task runners (restart policy windows and
// delays, task event times) and of the wait for a previous alloc on
// another node. Tests inject a fake one to walk restart-policy timelines
// without sleeping. Kill timeouts always use real time: they
// bound how long a real process may take to exit.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives once d has elapsed.
	After(d time.Duration) <-chan time.Time
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
