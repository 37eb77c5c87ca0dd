package dynamodb_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"go.uber.org/zap/zaptest"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/internal/awstest"
	"github.com/drover-sched/drover/placement"
	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

// writeCounter is SDK middleware counting the writes each partition key
// takes (a transaction's actions, single-item writes, batch writes).
type writeCounter struct {
	mu    sync.Mutex
	byKey map[string]int
}

func (w *writeCounter) apply(o *awsddb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("count-writes", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			var pks []string
			pk := func(k map[string]types.AttributeValue) {
				if v, ok := k["PK"].(*types.AttributeValueMemberS); ok {
					pks = append(pks, v.Value)
				}
			}
			switch p := in.Parameters.(type) {
			case *awsddb.UpdateItemInput:
				pk(p.Key)
			case *awsddb.PutItemInput:
				pk(p.Item)
			case *awsddb.DeleteItemInput:
				pk(p.Key)
			case *awsddb.TransactWriteItemsInput:
				for _, it := range p.TransactItems {
					switch {
					case it.Put != nil:
						pk(it.Put.Item)
					case it.Update != nil:
						pk(it.Update.Key)
					case it.Delete != nil:
						pk(it.Delete.Key)
					case it.ConditionCheck != nil:
						pk(it.ConditionCheck.Key)
					}
				}
			case *awsddb.BatchWriteItemInput:
				for _, reqs := range p.RequestItems {
					for _, r := range reqs {
						if r.PutRequest != nil {
							pk(r.PutRequest.Item)
						} else if r.DeleteRequest != nil {
							pk(r.DeleteRequest.Key)
						}
					}
				}
			}
			w.mu.Lock()
			for _, k := range pks {
				w.byKey[k]++
			}
			w.mu.Unlock()
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
	})
}

// TestIndexesWithoutHotItem: no write touches a global counter item, and
// the table indexes' bumps spread over their shards, while each table's
// index is still the index of its latest write (X-Nomad-Index).
func TestIndexesWithoutHotItem(t *testing.T) {
	t.Parallel()
	wc := &writeCounter{byKey: map[string]int{}}
	client := ddb.NewClient(awstest.Config(t), wc.apply)
	table := awstest.Name("drover-hot")
	if err := ddb.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	s := ddb.New(client, ddb.Config{Table: table})
	const jobs = 64
	var last uint64
	for i := 0; i < jobs; i++ {
		j := testJob(fmt.Sprintf("job-%02d", i), 1, 100)
		res, err := s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: j, Eval: &structs.Evaluation{ID: structs.GenerateUUID(),
			Namespace: "default", JobID: j.ID, Type: j.Type, Status: structs.EvalStatusPending, TriggeredBy: structs.EvalTriggerJobRegister}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Index <= last {
			t.Fatalf("write %d at index %d after %d: indexes must grow", i, res.Index, last)
		}
		last = res.Index
	}
	for _, tbl := range []string{storage.TableJobs, storage.TableEvals} {
		if got, err := s.Index(ctx, tbl); err != nil || got != last {
			t.Fatalf("index of %s: %d (%v), want the last write's %d", tbl, got, err, last)
		}
	}
	shards, top := 0, 0
	for k, n := range wc.byKey {
		if k == "META" {
			t.Fatalf("a write touched the global counter item META %d times", n)
		}
		if strings.HasPrefix(k, "INDEX#"+storage.TableJobs+"#") {
			shards++
			top = max(top, n)
		}
	}
	// 64 bumps over 32 shards at random: about 2 each; a hot item would
	// take all 64.
	if shards < 16 || top > 12 {
		t.Fatalf("the jobs index's %d bumps went to %d shards, at most %d to one: %v", jobs, shards, top, wc.byKey)
	}
}

// TestIndexesGrowAcrossSkewedWriters: a store whose clock is an hour
// behind another's still writes larger modify indexes over what the other
// wrote (it observes every index it reads), so guards on the modify index
// never see a value twice and table indexes move.
func TestIndexesGrowAcrossSkewedWriters(t *testing.T) {
	t.Parallel()
	ahead := newStore(t, ddb.Config{})
	ddb.SetClock(ahead, func() time.Time { return time.Now().Add(time.Hour) })
	behind := ddb.New(ahead.Client(), ddb.Config{Table: ahead.Table()})

	job := testJob("web", 1, 100)
	ev := func() *structs.Evaluation {
		return &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "web", Type: job.Type,
			Status: structs.EvalStatusPending, TriggeredBy: structs.EvalTriggerJobRegister}
	}
	first, err := ahead.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, Eval: ev()})
	if err != nil {
		t.Fatal(err)
	}
	changed := job.Copy()
	changed.Priority = 70
	second, err := behind.RegisterJob(ctx, &storage.RegisterJobRequest{Job: changed, Eval: ev()})
	if err != nil {
		t.Fatal(err)
	}
	if second.Job.ModifyIndex <= first.Job.ModifyIndex || second.Index <= first.Index {
		t.Fatalf("job written at %d over one written at %d by a writer an hour ahead", second.Index, first.Index)
	}
	if idx, _ := behind.Index(ctx, storage.TableJobs); idx != second.Index {
		t.Fatalf("jobs index %d after the later write at %d", idx, second.Index)
	}
	node := &structs.Node{ID: "n1", Name: "n1", Datacenter: "dc1", NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 1000}}}
	n1, err := ahead.UpsertNode(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	n2, err := behind.UpdateNodeStatus(ctx, "n1", structs.NodeStatusDown, time.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	if n2.ModifyIndex <= n1.ModifyIndex {
		t.Fatalf("node status written at %d over a registration at %d", n2.ModifyIndex, n1.ModifyIndex)
	}
	e := ev()
	if _, err := ahead.UpsertEvals(ctx, e); err != nil {
		t.Fatal(err)
	}
	e.Status = structs.EvalStatusComplete
	idx, err := behind.UpsertEvals(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := behind.Eval(ctx, e.ID)
	if got.ModifyIndex != idx || got.ModifyIndex <= got.CreateIndex {
		t.Fatalf("eval updated at %d, created at %d", got.ModifyIndex, got.CreateIndex)
	}
}

// TestAgentSeesEveryAssignmentWrite: the value a node agent polls changes
// with every write of the node's assignment index: after each chunk of one
// plan (they share the plan's index) and when two writers' plans carry the
// same index (two Lambda containers' clocks may give the same
// microsecond), so the agent never misses allocs.
func TestAgentSeesEveryAssignmentWrite(t *testing.T) {
	t.Parallel()
	var tokens []uint64
	var h *home
	h = newHome(t, ddb.Config{ChunkActions: 12, AfterChunk: func(_ *structs.Plan, _ int) error {
		tok, err := h.store.AgentAssignmentIndex(ctx, "n1")
		tokens = append(tokens, tok)
		return err
	}})
	frozen := time.Now()
	ddb.SetClock(h.store, func() time.Time { return frozen })
	h.node("n1", 100_000, 1<<20)
	before, err := h.store.AgentAssignmentIndex(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.eval.Process(ctx, h.register(testJob("big", 20, 10))); err != nil {
		t.Fatal(err)
	}
	if len(tokens) < 3 {
		t.Fatalf("%d chunks; the test wants a plan of several chunks on one node", len(tokens))
	}
	// Every chunk but the last (the eval's status) writes on n1.
	seen := map[uint64]bool{before: true}
	for i, tok := range tokens[:len(tokens)-1] {
		if seen[tok] {
			t.Fatalf("after chunk %d the agent's value %d did not change (values %v, before %d)", i+1, tok, tokens, before)
		}
		seen[tok] = true
	}
	planIdx, _ := h.store.NodeAssignmentIndex(ctx, "n1")

	// A second writer whose clock gives it the same index for its plan.
	other := ddb.New(h.store.Client(), ddb.Config{Table: h.store.Table()})
	wall := time.UnixMicro(int64(planIdx) - 1)
	ddb.SetClock(other, func() time.Time { return wall })
	log := zaptest.NewLogger(t)
	svc := controlplane.New(controlplane.Config{Store: other, Logger: log})
	res, err := svc.RegisterJob(ctx, &controlplane.RegisterRequest{Job: testJob("small", 1, 10)})
	if err != nil {
		t.Fatal(err)
	}
	wall = time.UnixMicro(int64(planIdx))
	ev := &scheduler.Evaluator{State: other, Reconcile: reconcile.Reconcile, Update: placement.UpdateType,
		RescheduleTracker: reconcile.NextRescheduleTracker, Logger: log}
	prev := tokens[len(tokens)-1]
	if err := ev.Process(ctx, res.EvalID); err != nil {
		t.Fatal(err)
	}
	if again, _ := h.store.NodeAssignmentIndex(ctx, "n1"); again != planIdx {
		t.Fatalf("the second plan got index %d, not %d: the test did not set up the collision", again, planIdx)
	}
	if tok, _ := h.store.AgentAssignmentIndex(ctx, "n1"); tok == prev {
		t.Fatalf("a second plan at the same index %d left the agent's value at %d: its allocs would not be fetched", planIdx, tok)
	}
}
