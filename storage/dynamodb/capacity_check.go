//go:build !drover_broken_capacity

package dynamodb

// brokenCapacityCheck is false in every real build: a plan chunk placing
// on a node carries the conditions freeCpu/freeMem/freeDisk >= what it
// adds. The chaos suite's broken build (-tags drover_broken_capacity) sets
// it, to show that its checker catches the over-commit those conditions
// would have refused.
const brokenCapacityCheck = false
