// Package schedule holds drover's delayed evaluations on AWS in
// EventBridge Scheduler: one one-time at() schedule per evaluation, at the
// next whole minute at or after its WaitUntil (Scheduler fires anywhere
// within the minute of its time, so an earlier minute could fire early),
// targeting the FIFO eval queue with the job's message group, deleted
// after it fires. The schedule's name derives from the eval ID, so
// creating it again is idempotent (ConflictException).
package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"go.uber.org/zap"

	evsqs "github.com/drover-sched/drover/events/sqs"
	"github.com/drover-sched/drover/structs"
)

// DefaultGroup is drover's schedule group.
const DefaultGroup = "drover"

// Scheduler creates the schedules.
type Scheduler struct {
	Client *scheduler.Client
	// Group is the schedule group (default "drover").
	Group string
	// QueueARN is the FIFO eval queue; RoleARN the role Scheduler assumes
	// to send to it.
	QueueARN string
	RoleARN  string
	Logger   *zap.Logger
}

// Name is the schedule of an evaluation: "eval-<id>" (Scheduler allows 64
// characters).
func Name(evalID string) string {
	n := "eval-" + evalID
	if len(n) > 64 {
		n = "eval-" + structs.DeterministicID(evalID)
	}
	return n
}

// FireTime is the next whole minute at or after waitUntil, in UTC.
func FireTime(waitUntil time.Time) time.Time {
	t := waitUntil.UTC()
	m := t.Truncate(time.Minute)
	if m.Before(t) {
		m = m.Add(time.Minute)
	}
	return m
}

// Expression is Scheduler's one-time expression for t (UTC).
func Expression(t time.Time) string {
	return "at(" + t.UTC().Format("2006-01-02T15:04:05") + ")"
}

// Schedule implements events/sqs.Delayer.
func (s *Scheduler) Schedule(ctx context.Context, ev *structs.Evaluation) error {
	group := s.Group
	if group == "" {
		group = DefaultGroup
	}
	at := FireTime(ev.WaitUntil)
	_, err := s.Client.CreateSchedule(ctx, &scheduler.CreateScheduleInput{
		Name: aws.String(Name(ev.ID)), GroupName: aws.String(group),
		ScheduleExpression: aws.String(Expression(at)), ScheduleExpressionTimezone: aws.String("UTC"),
		FlexibleTimeWindow:    &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		ActionAfterCompletion: types.ActionAfterCompletionDelete,
		Description:           aws.String(fmt.Sprintf("drover eval %s of job %s/%s", ev.ID, ev.Namespace, ev.JobID)),
		Target: &types.Target{
			Arn: aws.String(s.QueueARN), RoleArn: aws.String(s.RoleARN), Input: aws.String(evsqs.Encode(ev)),
			SqsParameters: &types.SqsParameters{MessageGroupId: aws.String(evsqs.GroupID(ev.Namespace, ev.JobID))},
		},
	})
	var conflict *types.ConflictException
	if errors.As(err, &conflict) {
		return nil // already scheduled: same eval, same time
	}
	if err != nil {
		return fmt.Errorf("schedule eval %s at %s: %w", ev.ID, at.Format(time.RFC3339), err)
	}
	if s.Logger != nil {
		s.Logger.Info("delayed evaluation scheduled", zap.String("eval_id", ev.ID), zap.String("job_id", ev.JobID),
			zap.Time("wait_until", ev.WaitUntil), zap.Time("fires_at", at))
	}
	return nil
}
