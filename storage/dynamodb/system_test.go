package dynamodb_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/drover-sched/drover/storage"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

// TestSystemJobOnDynamoDB: the AWS home's evaluator runs the same system
// scheduler: a system job gets one alloc per node, and a node that
// registers later gets its alloc from its node-update evaluation even
// while the node index (gsi1, eventually consistent) does not list it
// yet.
func TestSystemJobOnDynamoDB(t *testing.T) {
	t.Parallel()
	h := newHome(t, ddb.Config{})
	h.node("n1", 1000, 1<<20)
	h.node("n2", 1000, 1<<20)
	job := testJob("agent", 1, 100)
	job.Type = structs.JobTypeSystem
	if err := h.eval.Process(ctx, h.register(job)); err != nil {
		t.Fatal(err)
	}
	on := func() map[string]int {
		allocs, err := h.store.AllocsByJob(ctx, "default", "agent")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, a := range allocs {
			if !a.TerminalStatus() {
				out[a.NodeID]++
			}
		}
		return out
	}
	if got := on(); got["n1"] != 1 || got["n2"] != 1 || len(got) != 2 {
		t.Fatalf("allocs by node %v, want one on n1 and n2", got)
	}
	h.node("n3", 1000, 1<<20)
	// n3 as the node index sees it right after its registration.
	if _, err := h.store.Client().UpdateItem(ctx, &awsddb.UpdateItemInput{TableName: aws.String(h.store.Table()),
		Key:              map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "NODE#n3"}, "SK": &types.AttributeValueMemberS{Value: "META"}},
		UpdateExpression: aws.String("REMOVE g1pk, g1sk")}); err != nil {
		t.Fatal(err)
	}
	evals, err := h.store.Evals(ctx, storage.EvalFilter{JobID: "agent", Status: structs.EvalStatusPending})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evals {
		if e.TriggeredBy == structs.EvalTriggerNodeUpdate && e.NodeID == "n3" {
			n++
			if err := h.eval.Process(ctx, e.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := on(); n != 1 || got["n3"] != 1 || len(got) != 3 {
		t.Fatalf("%d node-update evals of n3; allocs by node %v, want one on each of three nodes", n, got)
	}
	h.checkInvariants()
}
