// Package awschaos plays the chaos suite's schedules on the AWS home, on
// the emulators (kumo, and moto where it can: internal/awstest starts
// them): the DynamoDB store with the node cache and the evaluator the
// Lambda functions wire (internal/awshome), the evaluate function's SQS
// batch handler for each delivery, the control-plane service for the
// API's writes and the nodes' reports, and the pending-eval sweeper.
// Faults are injected in the AWS SDK's middleware stack of the DynamoDB
// client and between plan chunks.
package awschaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/chaos"
	"github.com/drover-sched/drover/controlplane"
	evsqs "github.com/drover-sched/drover/events/sqs"
	"github.com/drover-sched/drover/internal/awshome"
	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

// The AWS home's faults.
const (
	// FaultFailBeforeSend: one of the next few DynamoDB requests fails
	// before it reaches the service.
	FaultFailBeforeSend = "ddb-fail-before-send"
	// FaultLostAnswer: one of the next few DynamoDB writes reaches the
	// service and succeeds, and its answer is lost ("did my write
	// happen?").
	FaultLostAnswer = "ddb-lost-answer"
	// FaultThrottle: the next few DynamoDB requests are throttled.
	FaultThrottle = "ddb-throttle"
	// FaultTxConflict: the next few transactions are cancelled for a
	// TransactionConflict with another in-flight transaction.
	FaultTxConflict = "ddb-transaction-conflict"
	// FaultKilledBetweenChunks: the next multi-chunk plan's evaluate
	// invocation dies after one of its chunks landed.
	FaultKilledBetweenChunks = "evaluate-killed-between-chunks"
)

// chunkActions is the plan chunk size the suite runs with: small, so that
// plans of a few allocs commit in several chunks.
const chunkActions = 6

// injector is the middleware's fault state.
type injector struct {
	mu        sync.Mutex
	kind      string
	countdown int // requests until the fault fires (fail, lost)
	times     int // requests it fires on (throttle, conflict)
	chunkKill int // chunk after which the next plan dies (0: none)
}

var errLost = errors.New("chaos: connection reset after the request was sent (the answer is lost)")

func isWrite(op string) bool {
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem":
		return true
	}
	return false
}

// fire decides the fate of one request: "" (let it through), or a kind.
func (in *injector) fire(op string) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	switch in.kind {
	case FaultFailBeforeSend:
		in.countdown--
		if in.countdown <= 0 {
			in.kind = ""
			return FaultFailBeforeSend
		}
	case FaultLostAnswer:
		if !isWrite(op) {
			return ""
		}
		in.countdown--
		if in.countdown <= 0 {
			in.kind = ""
			return FaultLostAnswer
		}
	case FaultThrottle:
		in.times--
		if in.times <= 0 {
			in.kind = ""
		}
		return FaultThrottle
	case FaultTxConflict:
		if op != "TransactWriteItems" {
			return ""
		}
		in.times--
		if in.times <= 0 {
			in.kind = ""
		}
		return FaultTxConflict
	}
	return ""
}

// middleware is the outermost step of every DynamoDB call (Initialize,
// ahead of the SDK's retries): what it injects is what drover's store
// sees, not what the SDK retries away. A lost answer lets the whole call
// run (sent, answered, its response read and closed) and then fails it.
func (in *injector) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("chaosFaults",
		func(ctx context.Context, input middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			op := awsmiddleware.GetOperationName(ctx)
			switch in.fire(op) {
			case FaultFailBeforeSend:
				return middleware.InitializeOutput{}, middleware.Metadata{}, fmt.Errorf("chaos: %s failed before it was sent: dial tcp: connection refused", op)
			case FaultThrottle:
				return middleware.InitializeOutput{}, middleware.Metadata{}, &smithy.GenericAPIError{Code: "ThrottlingException", Message: "chaos: rate exceeded"}
			case FaultTxConflict:
				return middleware.InitializeOutput{}, middleware.Metadata{}, &types.TransactionCanceledException{
					Message:             aws.String("chaos: Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]"),
					CancellationReasons: []types.CancellationReason{{Code: aws.String("TransactionConflict")}}}
			case FaultLostAnswer:
				_, md, err := next.HandleInitialize(ctx, input)
				if err != nil {
					return middleware.InitializeOutput{}, md, err
				}
				return middleware.InitializeOutput{}, md, errLost
			}
			return next.HandleInitialize(ctx, input)
		}), middleware.Before)
}

// Home is the AWS home on an emulator, one table per schedule.
type Home struct {
	env   *chaos.Env
	store *ddb.Store
	svc   *controlplane.Service
	ev    *scheduler.Evaluator
	h     *evsqs.Handler
	in    *injector
	msgs  atomic.Int64
}

// Options vary the home.
type Options struct {
	// NoNodeCache makes the evaluator read the store directly instead of
	// through the node cache the evaluate function uses (to tell the
	// cache's part in a finding).
	NoNodeCache bool
}

// New creates a table named table on the endpoint cfg points at and the
// home on it.
func New(ctx context.Context, cfg aws.Config, table string, env *chaos.Env, opts Options) (*Home, error) {
	in := &injector{}
	if err := ddb.CreateTable(ctx, ddb.NewClient(cfg), table); err != nil {
		return nil, fmt.Errorf("create table %s: %w", table, err)
	}
	cfg = cfg.Copy()
	cfg.APIOptions = append(cfg.APIOptions, in.middleware)
	h := &Home{env: env, in: in}
	h.store = ddb.New(ddb.NewClient(cfg), ddb.Config{Table: table, ChunkActions: chunkActions, Retries: 3,
		AfterChunk: h.afterChunk})
	nodes := ddb.NewNodeCache(h.store, ddb.NodeCacheConfig{})
	h.ev = awshome.NewEvaluator(h.store, nodes, env.Queue, debugLog())
	if opts.NoNodeCache {
		h.ev.State = h.store
	}
	h.ev.Now = env.Clock.Now
	h.ev.State = env.Observe(h.ev.State)
	h.svc = controlplane.New(controlplane.Config{Store: h.store, Queue: env.Queue, Now: env.Clock.Now, Planner: h.ev})
	h.h = &evsqs.Handler{Evaluator: h.ev, State: h.store, Queue: env.Queue, DeliveryLimit: evsqs.DefaultDeliveryLimit, Now: env.Clock.Now, Logger: debugLog()}
	return h, nil
}

// afterChunk is the store's between-chunks hook: an armed kill fires
// after the chosen chunk of a plan of more chunks.
func (h *Home) afterChunk(_ *structs.Plan, chunk int) error {
	h.in.mu.Lock()
	defer h.in.mu.Unlock()
	if h.in.chunkKill > 0 && chunk == h.in.chunkKill {
		h.in.chunkKill = 0
		return fmt.Errorf("chaos: the evaluate invocation was killed after plan chunk %d", chunk)
	}
	return nil
}

// Store implements chaos.Home.
func (h *Home) Store() storage.Store { return h.store }

// Service implements chaos.Home.
func (h *Home) Service() *controlplane.Service { return h.svc }

// Faults implements chaos.Home.
func (h *Home) Faults() []string {
	return []string{FaultFailBeforeSend, FaultLostAnswer, FaultThrottle, FaultTxConflict, FaultKilledBetweenChunks}
}

// Fault implements chaos.Home.
func (h *Home) Fault(kind string, r *rand.Rand) {
	h.in.mu.Lock()
	defer h.in.mu.Unlock()
	switch kind {
	case FaultKilledBetweenChunks:
		h.in.chunkKill = 1 + r.IntN(2)
	case FaultFailBeforeSend, FaultLostAnswer:
		h.in.kind, h.in.countdown = kind, 1+r.IntN(8)
	case FaultThrottle, FaultTxConflict:
		h.in.kind, h.in.times = kind, 1+r.IntN(3)
	}
}

// Disarm implements chaos.Home.
func (h *Home) Disarm() {
	h.in.mu.Lock()
	h.in.kind, h.in.chunkKill = "", 0
	h.in.mu.Unlock()
}

// Crashed implements chaos.Home: a Lambda invocation that dies is the
// lost answer or the killed evaluation, not a process to restart.
func (h *Home) Crashed() bool { return false }

// Restart implements chaos.Home.
func (h *Home) Restart(context.Context) error { return nil }

// Deliver implements chaos.Home: one SQS message with the eval, through
// the evaluate function's handler; a message it reports failed is handed
// back (SQS makes it visible again).
func (h *Home) Deliver(ctx context.Context, ev *structs.Evaluation) bool {
	id := fmt.Sprintf("msg-%d", h.msgs.Add(1))
	// An invocation of the evaluate function: its deadline is Lambda's
	// 15 minutes on the run's clock, which the handler measures what is
	// left with (not the run's own, real, deadline).
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), h.env.Clock.Now().Add(15*time.Minute))
	defer cancel()
	resp, err := h.h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: id, Body: evsqs.Encode(ev)}}})
	return err == nil && len(resp.BatchItemFailures) == 0
}

// Sweep implements chaos.Home: the sweeper's pending-eval re-send and its
// redo of the node status changes whose reactions are pending (every
// minute on AWS; a quiet cluster's minutes pass, hence no minimum age).
// Its cutoff is on the wall clock, as the AWS home's sweeper's is
// (internal/awshome): the DynamoDB store stamps an eval's ModifyTime with
// the wall clock, which is ahead of the run's clock (it starts at the
// second before the run and moves only for delayed evals), so a cutoff on
// the run's clock would never see an eval written during the run, and an
// eval whose write landed while its request failed (so nobody sent it)
// would stay pending for good.
func (h *Home) Sweep(ctx context.Context) {
	_, _ = scheduler.SweepPending(ctx, h.store, h.env.Queue, 0, time.Now(), nil)
	if live, err := h.store.NodesLiveness(ctx); err == nil {
		for _, l := range live {
			if l.ReactionsPending != 0 {
				_ = h.svc.RedoNodeReactions(ctx, l.NodeID)
			}
		}
	}
}

// Close implements chaos.Home: the table is left to the emulator (it goes
// with the emulator's process).
func (h *Home) Close() {}

// debugLog is the evaluator's and the handler's logger: none, unless
// CHAOS_DEBUG is set (replays).
func debugLog() *zap.Logger {
	if os.Getenv("CHAOS_DEBUG") == "" {
		return zap.NewNop()
	}
	l, _ := zap.NewDevelopment()
	return l
}
