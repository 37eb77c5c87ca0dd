package dynamodb

import "time"

// SetClock makes s draw its indexes from now instead of the wall clock
// (tests of writers whose clocks disagree).
func SetClock(s *Store, now func() time.Time) { s.clock.now = now }
