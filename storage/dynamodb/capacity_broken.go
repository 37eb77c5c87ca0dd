//go:build drover_broken_capacity

package dynamodb

// brokenCapacityCheck: this build leaves the free-capacity conditions out
// of plan chunks (invariant 2), deliberately. Only chaos/aws's
// TestBrokenCapacityCheckIsCaught is built with this tag.
const brokenCapacityCheck = true
