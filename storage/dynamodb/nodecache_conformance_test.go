package dynamodb_test

import (
	"strings"
	"testing"

	"github.com/drover-sched/drover/internal/awstest"
	"github.com/drover-sched/drover/storage"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/storage/storagetest"
)

// nodeCacheCases are the conformance cases that read candidate nodes or
// commit plans, the two calls a NodeCache serves itself.
var nodeCacheCases = []string{"CommitPlan", "ConcurrentPlans", "NodeDrainAndEligibility", "UsageMaintained", "CandidateNodes",
	"PortUsage", "PlansNeverTakeReservedPorts"}

// TestConformanceNodeCache runs the conformance cases of candidate nodes
// and plans on the evaluate function's NodeCache over the store: what the
// cache serves is what the store promises (no over-commit under
// concurrent plans, a node write seen by the next read, usage kept).
func TestConformanceNodeCache(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storage.Store {
		name := t.Name()[strings.LastIndex(t.Name(), "/")+1:]
		wanted := false
		for _, c := range nodeCacheCases {
			wanted = wanted || strings.HasPrefix(name, c)
		}
		if !wanted {
			t.Skip("not a case of candidate nodes or plans (the Store's own conformance run covers it)")
		}
		if name == "ConcurrentPlansNeverOverCommit" || name == "ConcurrentPlansNeverShareAPort" {
			awstest.SkipOnMoto(t, motoNoIsolation)
		}
		return ddb.NewNodeCache(newStore(t, ddb.Config{}), ddb.NodeCacheConfig{})
	}, storagetest.Parallel())
}
