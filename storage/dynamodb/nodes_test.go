package dynamodb_test

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/drover-sched/drover/storage"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

// TestAgentItemsWithoutValue: a node agent may write its heartbeat
// attributes to any item of its own partition (its policy limits the
// attributes, not the sort key), creating items that hold nothing else.
// The store ignores them, logging the node's ID: the node's allocations
// still decode, a report naming another node's alloc through such an item
// is still refused, a node whose META is such an item can still register,
// and a down node whose only items are such is still collected.
func TestAgentItemsWithoutValue(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.WarnLevel)
	h := newHome(t, ddb.Config{Logger: zap.New(core)})
	h.node("n1", 1000, 1<<20)
	h.node("n2", 1000, 1<<20)
	if err := h.eval.Process(ctx, h.register(testJob("web", 1, 100))); err != nil {
		t.Fatal(err)
	}
	live := h.live("web")
	if len(live) != 1 {
		t.Fatalf("%d allocs", len(live))
	}
	placed := live[0]
	other := "n2"
	if placed.NodeID == "n2" {
		other = "n1"
	}
	// What the agent of node `other` can write: its heartbeat attributes,
	// under any sort key of its own partition.
	junk := func(nodeID, sk string) {
		t.Helper()
		_, err := h.store.Client().UpdateItem(ctx, &awsddb.UpdateItemInput{TableName: aws.String(h.store.Table()),
			Key:              map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "NODE#" + nodeID}, "SK": &types.AttributeValueMemberS{Value: sk}},
			UpdateExpression: aws.String("SET hbAt = :a, hbTTL = :t"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberN{Value: "1"},
				":t": &types.AttributeValueMemberN{Value: "1"}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	junk(other, "ALLOC#"+placed.ID) // names the other node's alloc
	junk(other, "ALLOC#zzz")
	junk("n3", "META") // before n3 ever registers

	if allocs, err := h.store.AllocsByNode(ctx, other); err != nil || len(allocs) != 0 {
		t.Fatalf("allocs of %s: %v %v", other, allocs, err)
	}
	if allocs, _, err := h.store.AgentAssignments(ctx, other); err != nil || len(allocs) != 0 {
		t.Fatalf("assignments of %s: %v %v", other, allocs, err)
	}
	_, err := h.store.UpdateAllocsFromClient(ctx, other, []*structs.Allocation{{ID: placed.ID, ClientStatus: structs.AllocClientStatusFailed}})
	if !errors.Is(err, storage.ErrWrongNode) {
		t.Fatalf("a report of another node's alloc through an item without value: %v, want ErrWrongNode", err)
	}
	h.node("n3", 1000, 1<<20)
	if n, err := h.store.Node(ctx, "n3"); err != nil || n.Status != structs.NodeStatusReady {
		t.Fatalf("node n3 registered over an item without value: %v %v", n, err)
	}
	if _, err := h.store.Nodes(ctx, ""); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range logs.FilterMessageSnippet("without a value").All() {
		if e.ContextMap()["node_id"] == other {
			found = true
		}
	}
	if !found {
		t.Fatalf("the ignored items of node %s were not logged with its ID: %v", other, logs.All())
	}
	// A down node holding only such items is collected.
	if _, err := h.store.UpdateNodeStatus(ctx, other, structs.NodeStatusDown, 1); err != nil {
		t.Fatal(err)
	}
	res, err := h.store.GarbageCollect(ctx, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Node(ctx, other); !errors.Is(err, storage.ErrNotFound) || res.Nodes != 1 {
		t.Fatalf("down node %s with only heartbeat items: collected %d nodes, lookup %v", other, res.Nodes, err)
	}
}

// TestCandidateNodesReadsNamedNodesByKey: the node listing comes from an
// eventually consistent index, which may not list a node that has just
// registered; the nodes a query names (the node of a node-update
// evaluation of a system job) are read from the table, so the evaluation
// still sees the new node.
func TestCandidateNodesReadsNamedNodesByKey(t *testing.T) {
	t.Parallel()
	h := newHome(t, ddb.Config{})
	h.node("n1", 1000, 1<<20)
	h.node("n2", 1000, 1<<20)
	// n2 as the index sees it right after its registration: not yet there.
	_, err := h.store.Client().UpdateItem(ctx, &awsddb.UpdateItemInput{TableName: aws.String(h.store.Table()),
		Key:              map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "NODE#n2"}, "SK": &types.AttributeValueMemberS{Value: "META"}},
		UpdateExpression: aws.String("REMOVE g1pk, g1sk")})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(q storage.NodeQuery) []string {
		us, err := h.store.CandidateNodes(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, u := range us {
			out = append(out, u.Node.ID)
		}
		return out
	}
	if got := ids(storage.NodeQuery{}); len(got) != 1 || got[0] != "n1" {
		t.Fatalf("candidates from the index alone: %v (want n1: the test hides n2 from the index)", got)
	}
	if got := ids(storage.NodeQuery{Include: []string{"n2", "gone"}}); len(got) != 2 || got[0] != "n1" || got[1] != "n2" {
		t.Fatalf("candidates with n2 named: %v, want [n1 n2]", got)
	}
}
