package sqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/structs"
)

// Producer sends evaluations to the FIFO eval queue.
type Producer struct {
	Client   *awssqs.Client
	QueueURL string
	Logger   *zap.Logger
}

// Send sends evals now, ten per SendMessageBatch call, each with its
// DedupID.
func (p *Producer) Send(ctx context.Context, evals ...*structs.Evaluation) error {
	return p.send(ctx, "", evals)
}

// Resend sends evals again now with a fresh MessageDeduplicationId: the
// eval's DedupID plus the re-send's time (to the second). SQS FIFO drops a
// message whose dedup ID it saw in the last five minutes, so a deliberate
// re-send of an eval that did not change (the pending sweeper's) needs its
// own ID (design §5); two re-sends in the same second are one.
func (p *Producer) Resend(ctx context.Context, at time.Time, evals ...*structs.Evaluation) error {
	return p.send(ctx, "-r"+at.UTC().Format("20060102T150405"), evals)
}

func (p *Producer) send(ctx context.Context, dedupSuffix string, evals []*structs.Evaluation) error {
	var errs []error
	for start := 0; start < len(evals); start += 10 {
		batch := evals[start:min(start+10, len(evals))]
		entries := make([]types.SendMessageBatchRequestEntry, len(batch))
		for i, ev := range batch {
			entries[i] = types.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(Encode(ev)),
				MessageGroupId: aws.String(GroupID(ev.Namespace, ev.JobID)), MessageDeduplicationId: aws.String(DedupID(ev) + dedupSuffix),
			}
		}
		out, err := p.Client.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(p.QueueURL), Entries: entries})
		if err != nil {
			errs = append(errs, fmt.Errorf("send %d evals to %s: %w", len(batch), p.QueueURL, err))
			continue
		}
		for _, f := range out.Failed {
			i, _ := strconv.Atoi(aws.ToString(f.Id))
			errs = append(errs, fmt.Errorf("send eval %s: %s: %s", batch[i].ID, aws.ToString(f.Code), aws.ToString(f.Message)))
		}
		if p.Logger != nil {
			for _, ev := range batch {
				p.Logger.Debug("eval sent to the queue", zap.String("eval_id", ev.ID), zap.String("job_id", ev.JobID))
			}
		}
	}
	return errors.Join(errs...)
}

// Delayer holds evaluations until their WaitUntil (EventBridge Scheduler:
// package events/schedule).
type Delayer interface {
	Schedule(ctx context.Context, ev *structs.Evaluation) error
}

// Queue is scheduler.Queue on AWS: evaluations due now go straight to the
// FIFO queue; delayed ones to the Delayer, which sends them at their time.
type Queue struct {
	Producer *Producer
	Delayer  Delayer
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Enqueue implements scheduler.Queue.
func (q *Queue) Enqueue(ctx context.Context, evals ...*structs.Evaluation) error {
	return q.enqueue(ctx, evals, q.Producer.Send)
}

// Resender is the queue for deliberate re-sends at time at (the pending
// sweeper's): due evals are sent with Producer.Resend, so the FIFO dedup
// window does not drop them; delayed ones go to the Delayer as Enqueue
// sends them.
func (q *Queue) Resender(at time.Time) *Resender { return &Resender{q: q, at: at} }

// Resender is a Queue sending with fresh dedup IDs (see Queue.Resender).
type Resender struct {
	q  *Queue
	at time.Time
}

// Enqueue implements scheduler.Queue.
func (r *Resender) Enqueue(ctx context.Context, evals ...*structs.Evaluation) error {
	return r.q.enqueue(ctx, evals, func(ctx context.Context, due ...*structs.Evaluation) error {
		return r.q.Producer.Resend(ctx, r.at, due...)
	})
}

func (q *Queue) enqueue(ctx context.Context, evals []*structs.Evaluation, send func(context.Context, ...*structs.Evaluation) error) error {
	now := time.Now()
	if q.Now != nil {
		now = q.Now()
	}
	var due []*structs.Evaluation
	var errs []error
	for _, ev := range evals {
		if ev.WaitUntil.After(now) && q.Delayer != nil {
			if err := q.Delayer.Schedule(ctx, ev); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		due = append(due, ev)
	}
	if len(due) > 0 {
		if err := send(ctx, due...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
