package sqs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// pauser is offered by a Processor that knows whether evaluation
// processing is paused (scheduler.Evaluator: the scheduler
// configuration's PauseEvalBroker).
type pauser interface {
	Paused(ctx context.Context) bool
}

// Processor evaluates one evaluation (scheduler.Evaluator).
type Processor interface {
	Process(ctx context.Context, evalID string) error
}

// HandlerState is what the handler reads and writes besides evaluating:
// the eval itself (to put back or fail it) and its count of real attempts.
type HandlerState interface {
	scheduler.BlockedState
	Eval(ctx context.Context, evalID string) (*structs.Evaluation, error)
	// StartEvalAttempt counts one real attempt at evaluating the eval and
	// returns the attempts counted since the eval was last written, or 0
	// (nothing counted) when it is terminal or unknown (storage/dynamodb).
	StartEvalAttempt(ctx context.Context, namespace, jobID, evalID string) (int, error)
}

// DefaultDeliveryLimit is how many real attempts an eval gets before it is
// marked failed with a follow-up (Nomad's delivery limit). Attempts are
// counted in the eval's own item when an evaluation starts, not from SQS's
// ApproximateReceiveCount, which also counts deliveries handed back
// unprocessed and throttled ones. The queue's redrive policy
// (maxReceiveCount) must be well above it, so the dead-letter queue only
// ever sees what could not even be marked failed.
const DefaultDeliveryLimit = 3

// Default time margins of an invocation (see Handler.StartMargin and
// Handler.StopMargin).
const (
	DefaultStartMargin = 15 * time.Second
	DefaultStopMargin  = 3 * time.Second
)

// Handler is the evaluate function's adapter: SQS batch in, one
// Process call per message, partial batch response out.
type Handler struct {
	Evaluator Processor
	State     HandlerState
	// Queue puts back early evaluations and receives failed evals'
	// follow-ups.
	Queue scheduler.Queue
	// Client and QueueURL change the visibility of handed-back messages.
	Client   *awssqs.Client
	QueueURL string
	// DeliveryLimit (default 3): at this many real attempts a failing eval
	// is marked failed and a follow-up created instead of handed back; an
	// eval whose attempts started and never finished (the function timed
	// out or crashed) is failed when one more would exceed it.
	DeliveryLimit int
	// StartMargin (default 15 s): an evaluation is started only while more
	// than this is left before the invocation's deadline (the Lambda
	// context's); the messages it cannot start are handed back at once,
	// as the FIFO rule wants: that message and every later one.
	StartMargin time.Duration
	// StopMargin (default 3 s): each evaluation's context ends this long
	// before the deadline, so an evaluation cut off by it is handed back
	// in time instead of Lambda failing the whole batch.
	StopMargin time.Duration
	// RetryDelay is the visibility timeout of a message handed back after
	// a failure, by attempt count (default 2 s × count; 10 s × count when
	// the store says the failure is transient: throttling, conflicts).
	RetryDelay func(attempts int, err error) time.Duration
	Now        func() time.Time
	Logger     *zap.Logger
}

func (h *Handler) log() *zap.Logger {
	if h.Logger == nil {
		return zap.NewNop()
	}
	return h.Logger
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Handler) retryDelay(n int, err error) time.Duration {
	if h.RetryDelay != nil {
		return h.RetryDelay(n, err)
	}
	if errors.Is(err, storage.ErrRetryable) {
		// The backend is throttling or busy: back off longer.
		return time.Duration(n) * 10 * time.Second
	}
	return time.Duration(n) * 2 * time.Second
}

// Handle processes a batch in order. With FIFO queues, at the first
// failure it stops and reports that message and every later one as failed
// (SQS would otherwise reorder a message group); the failed one is handed
// back with a short visibility timeout, the later ones at once. It starts
// an evaluation only while more than StartMargin is left before ctx's
// deadline; what it cannot start in time it hands back the same way.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for i, rec := range ev.Records {
		if left, ok := h.timeLeft(ctx); ok && left <= h.startMargin() {
			h.log().Info("not enough time left to start an evaluation; handing the rest of the batch back",
				zap.Duration("left", left), zap.Int("messages", len(ev.Records)-i))
			h.handBack(ctx, &resp, ev.Records[i:], 0)
			break
		}
		attempts, err := h.handleOne(ctx, rec)
		if err == nil {
			continue
		}
		h.log().Warn("evaluation failed; handing the message back", zap.String("message_id", rec.MessageId),
			zap.Int("attempts", attempts), zap.Int("later_messages", len(ev.Records)-i-1), zap.Error(err))
		h.handBack(ctx, &resp, ev.Records[i:], h.retryDelay(max(attempts, 1), err))
		break
	}
	return resp, nil
}

// handBack reports recs as failed: the first becomes visible again after
// delay, the later ones at once.
func (h *Handler) handBack(ctx context.Context, resp *events.SQSEventResponse, recs []events.SQSMessage, delay time.Duration) {
	for j, rec := range recs {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		d := time.Duration(0)
		if j == 0 {
			d = delay
		}
		h.changeVisibility(ctx, rec, d)
	}
}

func (h *Handler) timeLeft(ctx context.Context) (time.Duration, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return dl.Sub(h.now()), true
}

func (h *Handler) startMargin() time.Duration {
	if h.StartMargin > 0 {
		return h.StartMargin
	}
	return DefaultStartMargin
}

func (h *Handler) stopMargin() time.Duration {
	if h.StopMargin > 0 {
		return h.StopMargin
	}
	return DefaultStopMargin
}

func (h *Handler) changeVisibility(ctx context.Context, rec events.SQSMessage, d time.Duration) {
	if h.Client == nil || h.QueueURL == "" || rec.ReceiptHandle == "" {
		return
	}
	_, err := h.Client.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(h.QueueURL),
		ReceiptHandle: aws.String(rec.ReceiptHandle), VisibilityTimeout: int32(d / time.Second)})
	if err != nil {
		h.log().Warn("change visibility of a handed-back message", zap.String("message_id", rec.MessageId), zap.Error(err))
	}
}

// handleOne processes one message: nil means acknowledge it. It returns
// the eval's count of real attempts, this one included (0 when none was
// counted).
func (h *Handler) handleOne(ctx context.Context, rec events.SQSMessage) (int, error) {
	msg, err := Decode(rec.Body)
	if err != nil {
		h.log().Error("dropping a message that is not an evaluation", zap.String("message_id", rec.MessageId), zap.Error(err))
		return 0, nil
	}
	log := h.log().With(zap.String("eval_id", msg.EvalID), zap.String("job_id", msg.JobID), zap.String("namespace", msg.Namespace))
	if msg.WaitUntil.After(h.now()) {
		// Early (design invariant 4): not an attempt.
		return 0, h.putBack(ctx, log, msg.EvalID)
	}
	if p, ok := h.Evaluator.(pauser); ok && p.Paused(ctx) {
		// Processing is paused (scheduler configuration): drop this
		// delivery, not an attempt; the eval stays pending in the store
		// and is sent again when processing resumes.
		log.Info("evaluation processing is paused; the eval stays pending")
		return 0, nil
	}
	limit := h.DeliveryLimit
	if limit <= 0 {
		limit = DefaultDeliveryLimit
	}
	attempts, err := h.State.StartEvalAttempt(ctx, msg.Namespace, msg.JobID, msg.EvalID)
	if err != nil {
		return 0, fmt.Errorf("count an attempt of eval %s: %w", msg.EvalID, err)
	}
	if attempts > limit {
		// The earlier attempts started and never finished: the function
		// timed out or crashed in the middle of each.
		reason := fmt.Sprintf("%d attempts started and none finished (the evaluate function timed out or crashed during each)", attempts-1)
		return attempts, h.fail(ctx, log, msg.EvalID, attempts, reason)
	}
	evalCtx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		evalCtx, cancel = context.WithDeadline(ctx, dl.Add(-h.stopMargin()))
		defer cancel()
	}
	perr := h.Evaluator.Process(evalCtx, msg.EvalID)
	switch {
	case perr == nil:
		return attempts, nil
	case errors.Is(perr, scheduler.ErrNotYet):
		return attempts, h.putBack(ctx, log, msg.EvalID)
	case errors.Is(perr, scheduler.ErrPaused):
		// Paused between the check above and Process: the same.
		log.Info("evaluation processing is paused; the eval stays pending")
		return attempts, nil
	}
	if attempts < limit || ctx.Err() != nil {
		return attempts, perr
	}
	return attempts, h.fail(ctx, log, msg.EvalID, attempts, perr.Error())
}

// putBack acknowledges an early delivery and hands the eval to the delayed
// path, to run at its wait-until.
func (h *Handler) putBack(ctx context.Context, log *zap.Logger, evalID string) error {
	e, err := h.State.Eval(ctx, evalID)
	if errors.Is(err, storage.ErrNotFound) {
		log.Warn("early evaluation no longer exists; dropping delivery")
		return nil
	}
	if err != nil {
		return fmt.Errorf("put back early eval %s: %w", evalID, err)
	}
	if e.TerminalStatus() {
		return nil
	}
	if err := h.Queue.Enqueue(ctx, e); err != nil {
		return fmt.Errorf("put back early eval %s: %w", evalID, err)
	}
	log.Info("evaluation arrived before its wait-until; put back", zap.Time("wait_until", e.WaitUntil))
	return nil
}

// fail marks the eval failed with the reason and creates its delayed
// follow-up (design invariant 8); the message is then acknowledged.
func (h *Handler) fail(ctx context.Context, log *zap.Logger, evalID string, attempts int, reason string) error {
	e, err := h.State.Eval(ctx, evalID)
	if err != nil {
		return fmt.Errorf("fail eval %s at its delivery limit: %w (reason: %s)", evalID, err, reason)
	}
	follow, err := scheduler.FailEval(ctx, h.State, h.Queue, e, reason, h.now())
	if err != nil {
		return err
	}
	log.Warn("evaluation failed its delivery limit; marked failed with a follow-up", zap.Int("attempts", attempts),
		zap.String("followup_eval_id", follow.ID), zap.String("reason", reason))
	return nil
}
