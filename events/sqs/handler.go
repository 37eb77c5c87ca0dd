package sqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Processor evaluates one evaluation (scheduler.Evaluator).
type Processor interface {
	Process(ctx context.Context, evalID string) error
}

// HandlerState is what the handler reads and writes besides evaluating:
// the eval itself (to put back or fail it).
type HandlerState interface {
	scheduler.BlockedState
	Eval(ctx context.Context, evalID string) (*structs.Evaluation, error)
}

// DefaultDeliveryLimit is how many deliveries an eval gets before it is
// marked failed with a follow-up (Nomad's default). The queue's redrive
// policy (maxReceiveCount) must be higher, so the dead-letter queue only
// ever sees what could not even be marked failed.
const DefaultDeliveryLimit = 3

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
	// DeliveryLimit (default 3): at this many receives a failing eval is
	// marked failed and a follow-up created instead of handed back.
	DeliveryLimit int
	// RetryDelay is the visibility timeout of a message handed back after
	// a failure, by receive count (default 2 s × count; 10 s × count when
	// the store says the failure is transient: throttling, conflicts).
	RetryDelay func(receiveCount int, err error) time.Duration
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
// back with a short visibility timeout, the later ones at once.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for i, rec := range ev.Records {
		err := h.handleOne(ctx, rec)
		if err == nil {
			continue
		}
		n := receiveCount(rec)
		h.log().Warn("evaluation failed; handing the message back", zap.String("message_id", rec.MessageId),
			zap.Int("receive_count", n), zap.Int("later_messages", len(ev.Records)-i-1), zap.Error(err))
		for j, later := range ev.Records[i:] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: later.MessageId})
			delay := time.Duration(0)
			if j == 0 {
				delay = h.retryDelay(n, err)
			}
			h.changeVisibility(ctx, later, delay)
		}
		break
	}
	return resp, nil
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

func receiveCount(rec events.SQSMessage) int {
	n, err := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// handleOne processes one message: nil means acknowledge it.
func (h *Handler) handleOne(ctx context.Context, rec events.SQSMessage) error {
	msg, err := Decode(rec.Body)
	if err != nil {
		h.log().Error("dropping a message that is not an evaluation", zap.String("message_id", rec.MessageId), zap.Error(err))
		return nil
	}
	log := h.log().With(zap.String("eval_id", msg.EvalID), zap.String("job_id", msg.JobID), zap.String("namespace", msg.Namespace))
	perr := h.Evaluator.Process(ctx, msg.EvalID)
	switch {
	case perr == nil:
		return nil
	case errors.Is(perr, scheduler.ErrPaused):
		// Processing is paused (scheduler configuration): drop this
		// delivery, uncounted; the eval stays pending in the store and is
		// sent again when processing resumes (or by the pending sweep).
		log.Info("evaluation processing is paused; the eval stays pending")
		return nil
	case errors.Is(perr, scheduler.ErrNotYet):
		// Put it back until its time (design invariant 4): acknowledge
		// this delivery and hand the eval to the delayed path.
		e, err := h.State.Eval(ctx, msg.EvalID)
		if err != nil {
			return fmt.Errorf("put back early eval %s: %w", msg.EvalID, err)
		}
		if err := h.Queue.Enqueue(ctx, e); err != nil {
			return fmt.Errorf("put back early eval %s: %w", msg.EvalID, err)
		}
		log.Info("evaluation arrived before its wait-until; put back", zap.Time("wait_until", e.WaitUntil))
		return nil
	}
	limit := h.DeliveryLimit
	if limit <= 0 {
		limit = DefaultDeliveryLimit
	}
	if receiveCount(rec) < limit || ctx.Err() != nil {
		return perr
	}
	e, err := h.State.Eval(ctx, msg.EvalID)
	if err != nil {
		return fmt.Errorf("fail eval %s at its delivery limit: %w (last error: %v)", msg.EvalID, err, perr)
	}
	follow, err := scheduler.FailEval(ctx, h.State, h.Queue, e, perr.Error(), h.now())
	if err != nil {
		return err
	}
	log.Warn("evaluation failed its delivery limit; marked failed with a follow-up", zap.Int("deliveries", receiveCount(rec)),
		zap.String("followup_eval_id", follow.ID), zap.Error(perr))
	return nil
}
