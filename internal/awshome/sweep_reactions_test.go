package awshome_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/internal/awshome"
	"github.com/drover-sched/drover/structs"
)

// killAfterNodeWrite is SDK middleware that, armed, lets DynamoDB
// requests through until one writing node's item (its META) succeeds, then
// fails every request after it until disarmed: the Lambda invocation died
// right after that write.
type killAfterNodeWrite struct {
	mu          sync.Mutex
	node        string
	armed, dead bool
}

var errKilled = errors.New("test: the sweeper's invocation died")

func (k *killAfterNodeWrite) arm(armed bool) {
	k.mu.Lock()
	k.armed, k.dead = armed, false
	k.mu.Unlock()
}

func (k *killAfterNodeWrite) writesNode(params any) bool {
	in, ok := params.(*dynamodb.TransactWriteItemsInput)
	if !ok {
		return false
	}
	for _, it := range in.TransactItems {
		if it.Update == nil {
			continue
		}
		pk, _ := it.Update.Key["PK"].(*types.AttributeValueMemberS)
		sk, _ := it.Update.Key["SK"].(*types.AttributeValueMemberS)
		if pk != nil && sk != nil && pk.Value == "NODE#"+k.node && sk.Value == "META" {
			return true
		}
	}
	return false
}

func (k *killAfterNodeWrite) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("killAfterNodeWrite",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			k.mu.Lock()
			armed, dead := k.armed, k.dead
			k.mu.Unlock()
			if dead {
				return middleware.InitializeOutput{}, middleware.Metadata{}, errKilled
			}
			out, md, err := next.HandleInitialize(ctx, in)
			if armed && err == nil && awsmiddleware.GetServiceID(ctx) == dynamodb.ServiceID && k.writesNode(in.Parameters) {
				k.mu.Lock()
				k.dead = true
				k.mu.Unlock()
			}
			return out, md, err
		}), middleware.Before)
}

// TestSweepRedoesReactionsOfAKilledReturn: the AWS sweeper is what writes
// a down node ready again when its agent heartbeats again, then reacts (an
// evaluation of the system job for the node, blocked evaluations
// re-queued). A sweep killed right after the node's ready write left the
// node ready with no reactions, and the next sweep, finding it ready and
// alive, did nothing: the system job never ran on the node. The node's
// ReactionsPending mark, written with the status, makes the next sweep
// (here a cold start: a new home, nothing in memory) do them, once.
func TestSweepRedoesReactionsOfAKilledReturn(t *testing.T) {
	ctx := context.Background()
	kill := &killAfterNodeWrite{node: "n1"}
	h, _ := homeOnEmulator(t, "drover-sweeprx", nil, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, kill.middleware) })
	node := &structs.Node{ID: "n1", Name: "n1", Datacenter: "dc1", NodePool: "default",
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 1000}, Memory: structs.NodeMemoryResources{MemoryMB: 1000}},
		Drivers:       map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}}
	if _, err := h.Service.RegisterNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	sys := &structs.Job{Region: "global", Namespace: "default", ID: "sys", Name: "sys", Type: structs.JobTypeSystem, Priority: 50,
		Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1,
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
	if _, err := h.Service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: sys}); err != nil {
		t.Fatal(err)
	}
	// The node goes silent and the sweeper marks it down.
	if err := h.Store.Heartbeat(ctx, "n1", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	h.HeartbeatGrace = 0
	if res, err := h.Sweep(ctx); err != nil || res.NodesDown != 1 {
		t.Fatalf("stale heartbeat: %+v %v", res, err)
	}
	blocked := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "other", Type: structs.JobTypeService,
		Priority: 50, TriggeredBy: structs.EvalTriggerQueuedAllocs, Status: structs.EvalStatusBlocked}
	if _, err := h.Store.UpsertEvals(ctx, blocked); err != nil {
		t.Fatal(err)
	}
	nodeEvals := func() int {
		t.Helper()
		evals, err := h.Store.EvalsByJob(ctx, "default", "sys")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range evals {
			if e.TriggeredBy == structs.EvalTriggerNodeUpdate && e.NodeID == "n1" {
				n++
			}
		}
		return n
	}
	blockedStatus := func() string {
		t.Helper()
		e, err := h.Store.Eval(ctx, blocked.ID)
		if err != nil {
			t.Fatal(err)
		}
		return e.Status
	}
	// Heard from again; the sweep that writes it ready dies right after.
	if err := h.Store.Heartbeat(ctx, "n1", time.Minute); err != nil {
		t.Fatal(err)
	}
	kill.arm(true)
	if _, err := h.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	kill.arm(false)
	n, err := h.Store.Node(ctx, "n1")
	if err != nil || n.Status != structs.NodeStatusReady {
		t.Fatalf("after the killed sweep the node is %+v (%v), want ready (the write landed)", n, err)
	}
	if got := nodeEvals(); got != 0 || blockedStatus() != structs.EvalStatusBlocked {
		t.Fatalf("the killed sweep reacted: %d node evals, blocked eval %s", got, blockedStatus())
	}

	// The next sweep, a cold start.
	h2, err := awshome.FromEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h2.Sweep(ctx)
	if err != nil || len(res.Errors) != 0 {
		t.Fatalf("the next sweep: %+v %v", res, err)
	}
	if got := nodeEvals(); got != 1 {
		t.Fatalf("after the next sweep: %d node-update evals of the system job for the node, want 1", got)
	}
	if st := blockedStatus(); st != structs.EvalStatusPending {
		t.Fatalf("after the next sweep the blocked eval is %s, want pending (re-queued)", st)
	}
	if n, err := h2.Store.Node(ctx, "n1"); err != nil || n.ReactionsPending != 0 {
		t.Fatalf("after the next sweep the node's reactions are still pending: %+v %v", n, err)
	}
	// Done, they are not done again.
	if res, err := h2.Sweep(ctx); err != nil || len(res.Errors) != 0 || res.NodesRedone != 0 || nodeEvals() != 1 {
		t.Fatalf("a sweep after the reactions ran: %+v %v, %d node evals, want 1", res, err, nodeEvals())
	}
}
