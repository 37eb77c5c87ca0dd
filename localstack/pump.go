package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// pump plays the two parts of AWS that no local emulator plays: EventBridge
// Scheduler firing one-time schedules into their SQS target, and Lambda's
// SQS event source mapping polling the queue and invoking the function with
// a batch (honouring ReportBatchItemFailures: only messages not reported
// failed are deleted).
type pump struct {
	sqs       *sqs.Client
	sched     *scheduler.Client
	lambda    *lambda.Client
	queueURL  string
	queueARN  string
	function  string
	group     string
	batch     int32
	skew      time.Duration
	invokeTTL time.Duration
	logf      func(format string, args ...any)
}

func runPump(args []string) int {
	fs := flag.NewFlagSet("pump", flag.ContinueOnError)
	endpoint := fs.String("endpoint", os.Getenv("AWS_ENDPOINT_URL"), "AWS endpoint URL (kumo, LocalStack)")
	queueURL := fs.String("queue-url", "", "URL of the eval queue (SQS FIFO)")
	function := fs.String("function", "", "evaluate function to invoke with queue messages (empty: only deliver schedules)")
	group := fs.String("schedule-group", "drover", "EventBridge Scheduler group to fire")
	batch := fs.Int("batch", 5, "messages per invocation (Lambda's BatchSize)")
	interval := fs.Duration("interval", 200*time.Millisecond, "pause between polls")
	skew := fs.Duration("fire-early", 0, "fire schedules whose at() time is at most this far in the future (tests)")
	once := fs.Bool("once", false, "one pass, then exit")
	invokeTimeout := fs.Duration("invoke-timeout", 60*time.Second, "timeout of one Invoke")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *queueURL == "" {
		fmt.Fprintln(os.Stderr, "pump: -queue-url is required")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pump: aws config:", err)
		return 1
	}
	if *endpoint != "" {
		cfg.BaseEndpoint = aws.String(*endpoint)
	}
	p := &pump{
		sqs: sqs.NewFromConfig(cfg), sched: scheduler.NewFromConfig(cfg), lambda: lambda.NewFromConfig(cfg),
		queueURL: *queueURL, function: *function, group: *group, batch: int32(*batch), skew: *skew,
		invokeTTL: *invokeTimeout, logf: log.New(os.Stderr, "pump: ", log.LstdFlags|log.Lmicroseconds).Printf,
	}
	for {
		if err := p.pass(ctx); err != nil && ctx.Err() == nil {
			p.logf("%v", err)
		}
		if *once || ctx.Err() != nil {
			return 0
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(*interval):
		}
	}
}

// pass fires due schedules, then delivers one batch of queue messages.
func (p *pump) pass(ctx context.Context) error {
	if err := p.fireSchedules(ctx); err != nil {
		return err
	}
	if p.function == "" {
		return nil
	}
	return p.deliver(ctx)
}

// fireSchedules sends the input of every due one-time schedule of the group
// to its SQS target and deletes the schedule (ActionAfterCompletion DELETE).
func (p *pump) fireSchedules(ctx context.Context) error {
	out, err := p.sched.ListSchedules(ctx, &scheduler.ListSchedulesInput{GroupName: aws.String(p.group)})
	if err != nil {
		return fmt.Errorf("list schedules of group %s: %w", p.group, err)
	}
	now := time.Now().UTC()
	for _, s := range out.Schedules {
		if s.GroupName != nil && aws.ToString(s.GroupName) != p.group {
			continue // some emulators ignore the group filter
		}
		got, err := p.sched.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: s.Name, GroupName: aws.String(p.group)})
		if err != nil {
			return fmt.Errorf("get schedule %s: %w", aws.ToString(s.Name), err)
		}
		at, err := parseAt(aws.ToString(got.ScheduleExpression), aws.ToString(got.ScheduleExpressionTimezone))
		if err != nil {
			p.logf("schedule %s: %v", aws.ToString(s.Name), err)
			continue
		}
		if at.After(now.Add(p.skew)) || got.Target == nil {
			continue
		}
		queueURL, err := p.queueURLForARN(ctx, aws.ToString(got.Target.Arn))
		if err != nil {
			return err
		}
		in := &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: got.Target.Input}
		if got.Target.SqsParameters != nil && got.Target.SqsParameters.MessageGroupId != nil {
			in.MessageGroupId = got.Target.SqsParameters.MessageGroupId
			// The queue has content-based deduplication; say it explicitly
			// for emulators that do not implement it.
			sum := sha256.Sum256([]byte(aws.ToString(got.Target.Input)))
			in.MessageDeduplicationId = aws.String(hex.EncodeToString(sum[:]))
		}
		if _, err := p.sqs.SendMessage(ctx, in); err != nil {
			return fmt.Errorf("fire schedule %s: %w", aws.ToString(s.Name), err)
		}
		if _, err := p.sched.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: s.Name, GroupName: aws.String(p.group)}); err != nil {
			return fmt.Errorf("delete fired schedule %s: %w", aws.ToString(s.Name), err)
		}
		p.logf("fired schedule %s (at %s)", aws.ToString(s.Name), at.Format(time.RFC3339))
	}
	return nil
}

// parseAt reads "at(yyyy-mm-ddThh:mm:ss)" in the schedule's time zone.
func parseAt(expr, tz string) (time.Time, error) {
	if !strings.HasPrefix(expr, "at(") || !strings.HasSuffix(expr, ")") {
		return time.Time{}, fmt.Errorf("not a one-time schedule: %q", expr)
	}
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil {
			return time.Time{}, fmt.Errorf("time zone %q: %w", tz, err)
		}
		loc = l
	}
	return time.ParseInLocation("2006-01-02T15:04:05", expr[3:len(expr)-1], loc)
}

func (p *pump) queueURLForARN(ctx context.Context, arn string) (string, error) {
	name := arn[strings.LastIndexByte(arn, ':')+1:]
	out, err := p.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("queue URL of %s: %w", arn, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// deliver receives one batch and invokes the function with it, as Lambda's
// event source mapping does; messages the function did not report failed
// are deleted.
func (p *pump) deliver(ctx context.Context) error {
	out, err := p.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(p.queueURL), MaxNumberOfMessages: p.batch, WaitTimeSeconds: 1,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
	})
	if err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	if len(out.Messages) == 0 {
		return nil
	}
	if p.queueARN == "" {
		attrs, err := p.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(p.queueURL),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			return fmt.Errorf("queue ARN: %w", err)
		}
		p.queueARN = attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	}
	ev := events.SQSEvent{}
	for _, m := range out.Messages {
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
			Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes, EventSource: "aws:sqs",
			EventSourceARN: p.queueARN, AWSRegion: "us-east-1",
		})
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	ictx, cancel := context.WithTimeout(ctx, p.invokeTTL)
	defer cancel()
	res, err := p.lambda.Invoke(ictx, &lambda.InvokeInput{FunctionName: aws.String(p.function), Payload: payload})
	if err != nil {
		return fmt.Errorf("invoke %s with %d messages: %w", p.function, len(ev.Records), err)
	}
	if res.FunctionError != nil {
		return fmt.Errorf("function %s failed: %s: %s", p.function, aws.ToString(res.FunctionError), res.Payload)
	}
	var resp events.SQSEventResponse
	if len(res.Payload) > 0 && string(res.Payload) != "null" {
		if err := json.Unmarshal(res.Payload, &resp); err != nil {
			return fmt.Errorf("function %s answered %q: %w", p.function, res.Payload, err)
		}
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	var errs []error
	for _, m := range out.Messages {
		if failed[aws.ToString(m.MessageId)] {
			continue
		}
		if _, err := p.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(p.queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			errs = append(errs, fmt.Errorf("delete message %s: %w", aws.ToString(m.MessageId), err))
		}
	}
	p.logf("delivered %d messages to %s, %d reported failed", len(out.Messages), p.function, len(failed))
	return errors.Join(errs...)
}
