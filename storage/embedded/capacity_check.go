//go:build !drover_broken_capacity

package embedded

// brokenCapacityCheck is false in every real build; the chaos suite's
// broken build (-tags drover_broken_capacity) sets it, to show that its
// checker catches an over-commit the commit-time check would have refused.
const brokenCapacityCheck = false
