package dynamodb_test

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
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

var ctx = context.Background()

// home is the evaluate path on DynamoDB without a queue: the control
// plane's services and the evaluator over one store.
type home struct {
	t       *testing.T
	store   *ddb.Store
	service *controlplane.Service
	eval    *scheduler.Evaluator
}

func newHome(t *testing.T, cfg ddb.Config) *home {
	s := newStore(t, cfg)
	log := zaptest.NewLogger(t)
	return &home{t: t, store: s, service: controlplane.New(controlplane.Config{Store: s, Logger: log}),
		eval: &scheduler.Evaluator{State: s, Reconcile: reconcile.Reconcile, Update: placement.UpdateType,
			RescheduleTracker: reconcile.NextRescheduleTracker, Logger: log}}
}

func (h *home) node(id string, cpu, mem int64) {
	h.t.Helper()
	_, err := h.service.RegisterNode(ctx, &structs.Node{
		ID: id, Name: id, Datacenter: "dc1", NodePool: "default", Attributes: map[string]string{"kernel.name": "linux"},
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: cpu},
			Memory: structs.NodeMemoryResources{MemoryMB: mem}, Disk: structs.NodeDiskResources{DiskMB: 1 << 20}},
		Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

func testJob(id string, count, cpu int) *structs.Job {
	return &structs.Job{
		Region: "global", Namespace: "default", ID: id, Name: id, Type: structs.JobTypeService, Priority: 50,
		NodePool: "default",
		TaskGroups: []*structs.TaskGroup{{
			Name: "web", Count: count, EphemeralDisk: &structs.EphemeralDisk{SizeMB: 10},
			Tasks: []*structs.Task{{Name: "server", Driver: "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{"1000"}},
				Resources: &structs.Resources{CPU: cpu, MemoryMB: 16}}},
		}},
	}
}

func (h *home) register(j *structs.Job) string {
	h.t.Helper()
	res, err := h.service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: j})
	if err != nil {
		h.t.Fatal(err)
	}
	return res.EvalID
}

// checkInvariants asserts no duplicate placement, no over-committed node,
// and node counters equal to the allocs that hold resources.
func (h *home) checkInvariants() {
	h.t.Helper()
	usage, err := h.store.NodesWithUsage(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, u := range usage {
		allocs, err := h.store.AllocsByNode(ctx, u.Node.ID)
		if err != nil {
			h.t.Fatal(err)
		}
		var sum structs.ComparableResources
		n := 0
		for _, a := range allocs {
			if a.HoldsResources() {
				sum = sum.Add(a.AllocatedResources.Comparable())
				n++
			}
		}
		if sum != u.Used || n != u.Allocs {
			h.t.Fatalf("node %s counters %+v (%d allocs), allocs hold %+v (%d): leaked or lost capacity", u.Node.ID, u.Used, u.Allocs, sum, n)
		}
		if ok, dim := u.Node.Capacity().Superset(u.Used); !ok {
			h.t.Fatalf("node %s over-committed: %s", u.Node.ID, dim)
		}
	}
}

func (h *home) live(jobID string) []*structs.Allocation {
	h.t.Helper()
	allocs, err := h.store.AllocsByJob(ctx, "default", jobID)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []*structs.Allocation
	names := map[string]bool{}
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		if names[a.Name] {
			h.t.Fatalf("duplicate live alloc name %s", a.Name)
		}
		names[a.Name] = true
		out = append(out, a)
	}
	return out
}

// TestChunkedPlanCrashAfterChunk: a plan of 1,000 placements is committed
// in chunks (≤ 100 actions each); a crash after chunk 3 leaves a partial
// plan; the redelivered evaluation completes it with exactly 1,000 live
// allocs, unique names, no node over-committed and no leaked capacity. On
// moto the plan has 120 placements (still 4 chunks): its transactions copy
// the table once per action, so 1,000 would take minutes.
func TestChunkedPlanCrashAfterChunk(t *testing.T) {
	t.Parallel()
	count := awstest.OnMoto(1000, 120)
	var chunks atomic.Int32
	var crashed atomic.Bool
	h := newHome(t, ddb.Config{AfterChunk: func(p *structs.Plan, k int) error {
		chunks.Add(1)
		if k == 3 && crashed.CompareAndSwap(false, true) {
			return errors.New("injected crash after chunk 3")
		}
		return nil
	}})
	for i := 0; i < 10; i++ {
		h.node(fmt.Sprintf("node-%02d", i), 100*110, 1<<20) // room for 110 allocs of 100 MHz
	}
	evalID := h.register(testJob("big", count, 100))
	err := h.eval.Process(ctx, evalID)
	if err == nil || !crashed.Load() {
		t.Fatalf("first run: want the injected crash, got %v", err)
	}
	partial := len(h.live("big"))
	if partial == 0 || partial >= count {
		t.Fatalf("after the crash %d allocs exist; want a partial plan", partial)
	}
	h.checkInvariants()
	ev, _ := h.store.Eval(ctx, evalID)
	if ev.Status != structs.EvalStatusPending {
		t.Fatalf("eval after a crash between chunks: %s, want pending", ev.Status)
	}
	// Redelivery.
	if err := h.eval.Process(ctx, evalID); err != nil {
		t.Fatalf("redelivered evaluation: %v", err)
	}
	if n := len(h.live("big")); n != count {
		t.Fatalf("after the re-run: %d live allocs, want %d", n, count)
	}
	h.checkInvariants()
	if ev, _ := h.store.Eval(ctx, evalID); ev.Status != structs.EvalStatusComplete {
		t.Fatalf("eval after the re-run: %s", ev.Status)
	}
	// A third delivery changes nothing.
	if err := h.eval.Process(ctx, evalID); err != nil {
		t.Fatal(err)
	}
	if n := len(h.live("big")); n != count {
		t.Fatalf("after a third delivery: %d live allocs", n)
	}
	t.Logf("%d placements: %d chunks committed in all, partial plan had %d allocs", count, chunks.Load(), partial)
}

// TestRaceForLastRoom: two evaluations of different jobs compute their
// plans at the same time for the one node's last room; one commits, the
// other's capacity condition fails, it re-evaluates and ends blocked.
func TestRaceForLastRoom(t *testing.T) {
	t.Parallel()
	awstest.SkipOnMoto(t, motoNoIsolation)
	h := newHome(t, ddb.Config{})
	h.node("n1", 1000, 1<<20)
	fill := h.register(testJob("fill", 9, 100))
	if err := h.eval.Process(ctx, fill); err != nil {
		t.Fatal(err)
	}
	a, b := h.register(testJob("a", 1, 100)), h.register(testJob("b", 1, 100))
	var barrier sync.WaitGroup
	barrier.Add(2)
	h.eval.BeforeCommit = func(_ context.Context, _ *structs.Evaluation, attempt int) {
		if attempt == 1 {
			barrier.Done()
			barrier.Wait() // both plans are computed before either commits
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, id := range []string{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = h.eval.Process(ctx, id) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	placed, blocked := 0, 0
	for _, id := range []string{a, b} {
		ev, err := h.store.Eval(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if ev.BlockedEval != "" {
			blocked++
		}
		job := "a"
		if id == b {
			job = "b"
		}
		placed += len(h.live(job))
	}
	if placed != 1 || blocked != 1 {
		t.Fatalf("placed %d, blocked %d: want one winner and one blocked", placed, blocked)
	}
	h.checkInvariants()
}

// injector is SDK middleware that answers the first n TransactWriteItems
// calls with err (before they reach the endpoint) and records every
// ClientRequestToken sent.
type injector struct {
	mu     sync.Mutex
	n      int
	err    error
	tokens []string
}

func (in *injector) apply(o *awsddb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("inject", func(ctx context.Context, p middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			tw, ok := p.Parameters.(*awsddb.TransactWriteItemsInput)
			if !ok {
				return next.HandleInitialize(ctx, p)
			}
			in.mu.Lock()
			in.tokens = append(in.tokens, aws.ToString(tw.ClientRequestToken))
			fail := in.n > 0
			if fail {
				in.n--
			}
			in.mu.Unlock()
			if fail {
				return middleware.InitializeOutput{}, middleware.Metadata{}, in.err
			}
			return next.HandleInitialize(ctx, p)
		}), middleware.After)
	})
}

func reason(code string) error {
	return &types.TransactionCanceledException{Message: aws.String("injected"), CancellationReasons: []types.CancellationReason{{Code: aws.String("None")}, {Code: aws.String(code)}}}
}

// TestFailureKinds: a transaction conflict is retried with the same
// request token; throttling is backed off and, when it persists, returned
// as storage.ErrRetryable / dynamodb.ErrThrottled; a failed condition is
// storage.ErrConflict and not retried.
func TestFailureKinds(t *testing.T) {
	t.Parallel()
	inj := &injector{}
	client := ddb.NewClient(awstest.Config(t), inj.apply)
	table := awstest.Name("drover-kinds")
	if err := ddb.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	s := ddb.New(client, ddb.Config{Table: table, Retries: 4})
	job := testJob("web", 1, 100)
	ev := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "web", Status: structs.EvalStatusPending}

	// Two transaction conflicts, then success: same token each time.
	inj.mu.Lock()
	inj.n, inj.err, inj.tokens = 2, reason("TransactionConflict"), nil
	inj.mu.Unlock()
	if _, err := s.RegisterJob(ctx, &storage.RegisterJobRequest{Job: job, Eval: ev}); err != nil {
		t.Fatalf("register through two transaction conflicts: %v", err)
	}
	if len(inj.tokens) != 3 || inj.tokens[0] != inj.tokens[1] || inj.tokens[1] != inj.tokens[2] || len(inj.tokens[0]) > 36 {
		t.Fatalf("retries of one chunk must reuse its token: %q", inj.tokens)
	}

	// Persistent throttling: retryable, told apart.
	inj.mu.Lock()
	inj.n, inj.err = 100, reason("ThrottlingError")
	inj.mu.Unlock()
	_, err := s.UpsertEvals(ctx, ev)
	if !errors.Is(err, storage.ErrRetryable) || !errors.Is(err, ddb.ErrThrottled) || errors.Is(err, storage.ErrConflict) {
		t.Fatalf("persistent throttling: %v", err)
	}
	var re *ddb.RetryableError
	if !errors.As(err, &re) {
		t.Fatalf("want *RetryableError, got %T", err)
	}
	// Persistent transaction conflicts: retryable, the other kind.
	inj.mu.Lock()
	inj.n, inj.err = 100, &types.TransactionConflictException{Message: aws.String("injected")}
	inj.mu.Unlock()
	_, err = s.UpsertEvals(ctx, ev)
	if !errors.Is(err, ddb.ErrTransactionConflict) || errors.Is(err, ddb.ErrThrottled) {
		t.Fatalf("persistent transaction conflict: %v", err)
	}
	inj.mu.Lock()
	inj.n = 0
	inj.mu.Unlock()

	// A failed condition (a plan of an older job version) is a conflict,
	// not retried.
	cur, _ := s.Job(ctx, "default", "web")
	inj.mu.Lock()
	inj.tokens = nil
	inj.mu.Unlock()
	_, err = s.CommitPlan(ctx, &structs.Plan{EvalID: ev.ID, Namespace: "default", JobID: "web", JobModifyIndex: cur.JobModifyIndex + 1})
	var ce *storage.ConflictError
	if !errors.As(err, &ce) || errors.Is(err, storage.ErrRetryable) {
		t.Fatalf("stale plan: want *ConflictError, got %v", err)
	}
	if len(inj.tokens) != 1 {
		t.Fatalf("a failed condition must not be retried: %d calls", len(inj.tokens))
	}
}

// TestTokensDifferPerContent: two commits of plans that differ only in
// content never share a request token (a re-run computes new tokens).
func TestTokensDifferPerContent(t *testing.T) {
	t.Parallel()
	inj := &injector{}
	client := ddb.NewClient(awstest.Config(t), inj.apply)
	table := awstest.Name("drover-tokens")
	if err := ddb.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	s := ddb.New(client, ddb.Config{Table: table})
	for i := 0; i < 3; i++ {
		ev := &structs.Evaluation{ID: fmt.Sprintf("e-%d", i), Namespace: "default", JobID: "web", Status: structs.EvalStatusPending}
		if _, err := s.UpsertEvals(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, tok := range inj.tokens {
		if seen[tok] {
			t.Fatalf("token %s reused for different content", tok)
		}
		seen[tok] = true
	}
}

// txSizeLimit is SDK middleware standing in for DynamoDB's 4 MB limit on
// a transaction's items, which the emulators do not enforce: it refuses a
// TransactWriteItems whose items add up to more, counted as DynamoDB
// counts item sizes, and records the largest it let through.
type txSizeLimit struct {
	mu      sync.Mutex
	largest int
	big     int // transactions over 1 MB
}

func (l *txSizeLimit) apply(o *awsddb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("tx-size", func(ctx context.Context, p middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if tw, ok := p.Parameters.(*awsddb.TransactWriteItemsInput); ok {
				n := 0
				for _, it := range tw.TransactItems {
					switch {
					case it.Put != nil:
						n += attrsSize(it.Put.Item)
					case it.Update != nil:
						n += attrsSize(it.Update.Key) + attrsSize(it.Update.ExpressionAttributeValues)
					case it.ConditionCheck != nil:
						n += attrsSize(it.ConditionCheck.Key)
					case it.Delete != nil:
						n += attrsSize(it.Delete.Key)
					}
				}
				if n > ddb.MaxTransactBytes {
					return middleware.InitializeOutput{}, middleware.Metadata{}, &smithy.GenericAPIError{Code: "ValidationException",
						Message: fmt.Sprintf("Transaction request size %d exceeds the 4 MB limit", n)}
				}
				l.mu.Lock()
				l.largest = max(l.largest, n)
				if n > 1<<20 {
					l.big++
				}
				l.mu.Unlock()
			}
			return next.HandleInitialize(ctx, p)
		}), middleware.After)
	})
}

// attrsSize is the size of attributes by DynamoDB's rules (names plus
// values; strings and binaries their length).
func attrsSize(m map[string]types.AttributeValue) int {
	n := 0
	for k, v := range m {
		n += len(k)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(v.Value)
		case *types.AttributeValueMemberB:
			n += len(v.Value)
		case *types.AttributeValueMemberN:
			n += len(v.Value)/2 + 1
		default:
			n++
		}
	}
	return n
}

// TestLargeJobPlanChunksByBytes: each node an alloc lands on gets its copy
// of the job version, so a job with a few hundred KB of incompressible env
// spread over 20 nodes makes a plan's items outgrow DynamoDB's 4 MB per
// transaction long before 100 actions; the plan is chunked by bytes too
// and every alloc is placed.
func TestLargeJobPlanChunksByBytes(t *testing.T) {
	t.Parallel()
	limit := &txSizeLimit{}
	client := ddb.NewClient(awstest.Config(t), limit.apply)
	table := awstest.Name("drover-large")
	if err := ddb.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	s := ddb.New(client, ddb.Config{Table: table})
	log := zaptest.NewLogger(t)
	h := &home{t: t, store: s, service: controlplane.New(controlplane.Config{Store: s, Logger: log}),
		eval: &scheduler.Evaluator{State: s, Reconcile: reconcile.Reconcile, Update: placement.UpdateType,
			RescheduleTracker: reconcile.NextRescheduleTracker, Logger: log}}
	for i := 0; i < 20; i++ {
		h.node(fmt.Sprintf("n%02d", i), 100, 1<<20) // room for one alloc each
	}
	job := testJob("large", 20, 100) // 20 nodes × a ~225 KB job copy: 4.5 MB
	noise := make([]byte, 220<<10)
	if _, err := crand.Read(noise); err != nil {
		t.Fatal(err)
	}
	job.TaskGroups[0].Tasks[0].Env = map[string]string{"BLOB": base64.StdEncoding.EncodeToString(noise)} // ~290 KB, ~220 KB gzipped
	if err := h.eval.Process(ctx, h.register(job)); err != nil {
		t.Fatalf("evaluate a job of 20 allocs with ~225 KB job copies on 20 nodes: %v", err)
	}
	if n := len(h.live("large")); n != 20 {
		t.Fatalf("%d live allocs, want 20", n)
	}
	h.checkInvariants()
	for i := 0; i < 20; i++ {
		as, _, err := s.AgentAssignments(ctx, fmt.Sprintf("n%02d", i))
		if err != nil || len(as) != 1 || as[0].Job == nil || as[0].Job.TaskGroups[0].Tasks[0].Env["BLOB"] == "" {
			t.Fatalf("node n%02d's assignments: %d %v", i, len(as), err)
		}
	}
	if limit.big < 2 {
		t.Fatalf("%d transactions over 1 MB; the plan's 4.5 MB need at least two", limit.big)
	}
	t.Logf("largest transaction: %d bytes of items (limit %d)", limit.largest, ddb.MaxTransactBytes)
}

// TestFollowupEvalWrittenBeforeAllocsNameIt: failed allocs whose
// reschedule waits an hour get a follow-up eval; the plan that attaches it
// (FollowupEvalID) is cut short after its first chunk. Every alloc that
// names a follow-up must find it in the store: an alloc pointing at an
// eval that was never written waits for it forever (found by the chaos
// suite, seed 352 on kumo).
func TestFollowupEvalWrittenBeforeAllocsNameIt(t *testing.T) {
	t.Parallel()
	var armed, crashed atomic.Bool
	h := newHome(t, ddb.Config{ChunkActions: 6, AfterChunk: func(_ *structs.Plan, k int) error {
		if k == 1 && armed.Load() && crashed.CompareAndSwap(false, true) {
			return errors.New("injected crash after chunk 1")
		}
		return nil
	}})
	h.node("n1", 10000, 1<<20)
	j := testJob("fu", 6, 100)
	j.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 3, Interval: 24 * time.Hour,
		Delay: time.Hour, DelayFunction: structs.DelayFunctionConstant}
	if err := h.eval.Process(ctx, h.register(j)); err != nil {
		t.Fatal(err)
	}
	live := h.live("fu")
	if len(live) != 6 {
		t.Fatalf("%d live allocs, want 6", len(live))
	}
	var failed []*structs.Allocation
	for _, a := range live {
		failed = append(failed, &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusFailed,
			TaskStates: map[string]*structs.TaskState{"server": {State: structs.TaskStateDead, Failed: true}}})
	}
	if err := h.service.UpdateAllocs(ctx, "n1", failed); err != nil {
		t.Fatal(err)
	}
	evals, err := h.store.EvalsByJob(ctx, "default", "fu")
	if err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	for _, ev := range evals {
		if ev.Status == structs.EvalStatusPending && ev.WaitUntil.IsZero() {
			_ = h.eval.Process(ctx, ev.ID) // the injected crash, then nothing more
		}
	}
	if !crashed.Load() {
		t.Fatal("no plan was cut short: the test did not reach its case")
	}
	h.checkFollowups("fu", 0) // after the cut: every follow-up named exists
	// Redelivery completes the plan: the allocs now name their follow-up.
	evals, err = h.store.EvalsByJob(ctx, "default", "fu")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evals {
		if ev.Status == structs.EvalStatusPending && ev.WaitUntil.IsZero() {
			if err := h.eval.Process(ctx, ev.ID); err != nil {
				t.Fatalf("redelivered eval %s: %v", ev.ID, err)
			}
		}
	}
	h.checkFollowups("fu", 6)
}

// checkFollowups asserts that every alloc of the job naming a follow-up
// eval finds it in the store, and that at least min allocs name one.
func (h *home) checkFollowups(jobID string, min int) {
	h.t.Helper()
	all, err := h.store.AllocsByJob(ctx, "default", jobID)
	if err != nil {
		h.t.Fatal(err)
	}
	named := 0
	for _, a := range all {
		if a.FollowupEvalID == "" {
			continue
		}
		named++
		if _, err := h.store.Eval(ctx, a.FollowupEvalID); err != nil {
			h.t.Errorf("alloc %s names follow-up eval %s: %v", a.Name, a.FollowupEvalID, err)
		}
	}
	if named < min {
		h.t.Fatalf("%d allocs name a follow-up eval, want at least %d", named, min)
	}
}
