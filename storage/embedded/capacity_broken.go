//go:build drover_broken_capacity

package embedded

// brokenCapacityCheck: this build skips the commit-time capacity check
// (invariant 2), deliberately. Only the chaos suite's
// TestBrokenCapacityCheckIsCaught is built with this tag.
const brokenCapacityCheck = true
