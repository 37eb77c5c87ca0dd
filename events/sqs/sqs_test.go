package sqs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssched "github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/events/schedule"
	evsqs "github.com/drover-sched/drover/events/sqs"
	"github.com/drover-sched/drover/internal/awshome"
	"github.com/drover-sched/drover/internal/awstest"
	"github.com/drover-sched/drover/scheduler"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

var ctx = context.Background()

// env is the AWS home on the local endpoint: a fresh table, FIFO queue and
// schedule group, wired from the environment as the functions are.
type env struct {
	t        *testing.T
	home     *awshome.Home
	sched    *awssched.Client
	queueURL string
	queueARN string
	group    string
}

func newEnv(t *testing.T) *env {
	cfg := awstest.Config(t)
	e := &env{t: t, sched: awssched.NewFromConfig(cfg), group: awstest.Name("drover")}
	table := awstest.Name("drover-ev")
	if err := ddb.CreateTable(ctx, ddb.NewClient(cfg), table); err != nil {
		t.Fatal(err)
	}
	e.queueURL, e.queueARN = awstest.FIFOQueue(t, awssqs.NewFromConfig(cfg), awstest.Name("evals"))
	awstest.ScheduleGroup(t, e.sched, e.group)
	t.Setenv("DROVER_TABLE", table)
	t.Setenv("DROVER_QUEUE_URL", e.queueURL)
	t.Setenv("DROVER_QUEUE_ARN", e.queueARN)
	t.Setenv("DROVER_SCHEDULER_ROLE_ARN", "arn:aws:iam::000000000000:role/drover-scheduler")
	t.Setenv("DROVER_SCHEDULE_GROUP", e.group)
	t.Setenv("DROVER_LOG_LEVEL", "error")
	h, err := awshome.FromEnv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.home = h
	return e
}

// receive takes up to max messages from the queue as Lambda's event
// source mapping would hand them to the function.
func (e *env) receive(max int32) []events.SQSMessage {
	e.t.Helper()
	out, err := e.home.SQS.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(e.queueURL), MaxNumberOfMessages: max,
		WaitTimeSeconds: 1, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
	if err != nil {
		e.t.Fatal(err)
	}
	var recs []events.SQSMessage
	for _, m := range out.Messages {
		recs = append(recs, events.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle),
			Body: aws.ToString(m.Body), Attributes: m.Attributes, EventSourceARN: e.queueARN, EventSource: "aws:sqs"})
	}
	return recs
}

func (e *env) ack(recs ...events.SQSMessage) {
	for _, r := range recs {
		if _, err := e.home.SQS.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(e.queueURL), ReceiptHandle: aws.String(r.ReceiptHandle)}); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) node(id string) {
	e.t.Helper()
	_, err := e.home.Service.RegisterNode(ctx, &structs.Node{ID: id, Name: id, Datacenter: "dc1", NodePool: "default",
		Attributes:    map[string]string{"kernel.name": "linux"},
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 4000}, Memory: structs.NodeMemoryResources{MemoryMB: 4096}, Disk: structs.NodeDiskResources{DiskMB: 10000}},
		Drivers:       map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}})
	if err != nil {
		e.t.Fatal(err)
	}
}

func job(id string, count int) *structs.Job {
	return &structs.Job{Region: "global", Namespace: "default", ID: id, Name: id, Type: structs.JobTypeService, Priority: 50, NodePool: "default",
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: count, EphemeralDisk: &structs.EphemeralDisk{SizeMB: 10},
			Tasks: []*structs.Task{{Name: "server", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sleep", "args": []any{"100"}},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
}

func pendingEval(jobID string, wait time.Duration) *structs.Evaluation {
	e := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: jobID, Priority: 50, Type: "service",
		TriggeredBy: structs.EvalTriggerRetryFailedAlloc, Status: structs.EvalStatusPending, ModifyIndex: 5}
	if wait > 0 {
		e.WaitUntil = time.Now().Add(wait).UTC().Truncate(time.Millisecond)
	}
	return e
}

// TestEnqueueRoutesDueAndDelayed: an eval due now goes to the FIFO queue
// with the job's message group and eval ID + modify index as dedup ID; a
// delayed one becomes a one-time schedule at the next whole minute at or
// after its wait-until, targeting the queue with the group, deleted after
// it fires; scheduling it again is idempotent.
func TestEnqueueRoutesDueAndDelayed(t *testing.T) {
	e := newEnv(t)
	due, later := pendingEval("web", 0), pendingEval("web", 90*time.Second)
	if err := e.home.Queue.Enqueue(ctx, due, later); err != nil {
		t.Fatal(err)
	}
	recs := e.receive(10)
	if len(recs) != 1 {
		t.Fatalf("%d messages, want the due eval only", len(recs))
	}
	m, err := evsqs.Decode(recs[0].Body)
	if err != nil || m.EvalID != due.ID {
		t.Fatalf("message %+v %v", m, err)
	}
	// kumo does not return these attributes; LocalStack and AWS do.
	if g, ok := recs[0].Attributes["MessageGroupId"]; ok && g != "default/web" {
		t.Fatalf("message group %q", g)
	}
	if d, ok := recs[0].Attributes["MessageDeduplicationId"]; ok && d != due.ID+"-5" {
		t.Fatalf("dedup ID %q", d)
	}
	if g, d := evsqs.GroupID(due.Namespace, due.JobID), evsqs.DedupID(due); g != "default/web" || d != due.ID+"-5" {
		t.Fatalf("group %q dedup %q", g, d)
	}
	got, err := e.sched.GetSchedule(ctx, &awssched.GetScheduleInput{Name: aws.String(schedule.Name(later.ID)), GroupName: aws.String(e.group)})
	if err != nil {
		t.Fatalf("schedule of the delayed eval: %v", err)
	}
	at := schedule.FireTime(later.WaitUntil)
	if at.Before(later.WaitUntil) || at.Second() != 0 || at.Nanosecond() != 0 || at.Sub(later.WaitUntil) >= time.Minute {
		t.Fatalf("fire time %s for wait-until %s", at, later.WaitUntil)
	}
	if x := aws.ToString(got.ScheduleExpression); x != schedule.Expression(at) || !strings.HasPrefix(x, "at(") {
		t.Fatalf("expression %q, want %q", x, schedule.Expression(at))
	}
	if aws.ToString(got.Target.Arn) != e.queueARN || aws.ToString(got.Target.SqsParameters.MessageGroupId) != "default/web" ||
		got.ActionAfterCompletion != schedtypes.ActionAfterCompletionDelete {
		t.Fatalf("schedule target %+v, after completion %s", got.Target, got.ActionAfterCompletion)
	}
	if m, err := evsqs.Decode(aws.ToString(got.Target.Input)); err != nil || m.EvalID != later.ID {
		t.Fatalf("schedule input %q", aws.ToString(got.Target.Input))
	}
	if err := e.home.Queue.Enqueue(ctx, later); err != nil {
		t.Fatalf("scheduling the same eval again: %v", err)
	}
}

// fake evaluator for the handler's batch rule.
type procFunc func(ctx context.Context, evalID string) error

func (f procFunc) Process(ctx context.Context, id string) error { return f(ctx, id) }

// TestHandlerFIFORule: at the first failure the handler reports that
// message and every later one, and processes nothing after it.
func TestHandlerFIFORule(t *testing.T) {
	e := newEnv(t)
	evs := []*structs.Evaluation{pendingEval("a", 0), pendingEval("b", 0), pendingEval("c", 0)}
	if err := e.home.Queue.Producer.Send(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	recs := e.receive(10)
	if len(recs) != 3 {
		t.Fatalf("received %d", len(recs))
	}
	var calls []string
	h := e.home.EvaluateHandler()
	h.Evaluator = procFunc(func(_ context.Context, id string) error {
		calls = append(calls, id)
		m, _ := evsqs.Decode(recs[1].Body)
		if id == m.EvalID {
			return errors.New("injected failure")
		}
		return nil
	})
	resp, err := h.Handle(ctx, events.SQSEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || len(resp.BatchItemFailures) != 2 || resp.BatchItemFailures[0].ItemIdentifier != recs[1].MessageId ||
		resp.BatchItemFailures[1].ItemIdentifier != recs[2].MessageId {
		t.Fatalf("calls %v, failures %+v", calls, resp.BatchItemFailures)
	}
}

// TestRedeliveryNoSecondPlan: a registration's message processed, then
// delivered again: the second delivery finds the eval terminal and
// commits nothing.
func TestRedeliveryNoSecondPlan(t *testing.T) {
	e := newEnv(t)
	e.node("n1")
	res, err := e.home.Service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job("web", 2)})
	if err != nil {
		t.Fatal(err)
	}
	recs := e.receive(10)
	if len(recs) != 1 {
		t.Fatalf("registration sent %d messages", len(recs))
	}
	var commits atomic.Int32
	h := e.home.EvaluateHandler()
	e.home.Evaluator.BeforeCommit = func(context.Context, *structs.Evaluation, int) { commits.Add(1) }
	for i := 0; i < 2; i++ {
		resp, err := h.Handle(ctx, events.SQSEvent{Records: recs})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("delivery %d: %v %+v", i+1, err, resp)
		}
	}
	if commits.Load() != 1 {
		t.Fatalf("%d plans committed for one eval delivered twice", commits.Load())
	}
	allocs, _ := e.home.Store.AllocsByJob(ctx, "default", "web")
	if len(allocs) != 2 {
		t.Fatalf("%d allocs", len(allocs))
	}
	if ev, _ := e.home.Store.Eval(ctx, res.EvalID); ev.Status != structs.EvalStatusComplete {
		t.Fatalf("eval %s", ev.Status)
	}
}

// TestEarlyEvalPutBack: an eval delivered before its wait-until is not run:
// the message is acknowledged and the eval scheduled for its time.
func TestEarlyEvalPutBack(t *testing.T) {
	e := newEnv(t)
	early := pendingEval("web", 70*time.Second)
	if _, err := e.home.Store.UpsertEvals(ctx, early); err != nil {
		t.Fatal(err)
	}
	rec := events.SQSMessage{MessageId: "m1", Body: evsqs.Encode(early), Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
	resp, err := e.home.EvaluateHandler().Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("early eval: %v %+v", err, resp)
	}
	if ev, _ := e.home.Store.Eval(ctx, early.ID); ev.Status != structs.EvalStatusPending {
		t.Fatalf("an early eval ran: %s", ev.Status)
	}
	if _, err := e.sched.GetSchedule(ctx, &awssched.GetScheduleInput{Name: aws.String(schedule.Name(early.ID)), GroupName: aws.String(e.group)}); err != nil {
		t.Fatalf("early eval not put back on a schedule: %v", err)
	}
}

// TestDeliveryLimitFailsEval: at its delivery limit of real attempts a
// failing eval is marked failed with the reason and a delayed follow-up is
// scheduled (design §4.8), and the message is acknowledged (no dead-letter
// queue).
func TestDeliveryLimitFailsEval(t *testing.T) {
	e := newEnv(t)
	ev := pendingEval("web", 0)
	if _, err := e.home.Store.UpsertEvals(ctx, ev); err != nil {
		t.Fatal(err)
	}
	h := e.home.EvaluateHandler()
	h.Evaluator = procFunc(func(context.Context, string) error { return errors.New("store unreachable") })
	rec := events.SQSMessage{MessageId: "m1", Body: evsqs.Encode(ev), Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
	for attempt := 1; attempt < evsqs.DefaultDeliveryLimit; attempt++ {
		if resp, _ := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec}}); len(resp.BatchItemFailures) != 1 {
			t.Fatalf("attempt %d: below the limit a failure is handed back", attempt)
		}
	}
	if resp, _ := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("at the limit the message is acknowledged: %+v", resp)
	}
	failed, _ := e.home.Store.Eval(ctx, ev.ID)
	if failed.Status != structs.EvalStatusFailed || !strings.Contains(failed.StatusDescription, "store unreachable") || failed.NextEval == "" {
		t.Fatalf("failed eval: %s %q next %q", failed.Status, failed.StatusDescription, failed.NextEval)
	}
	if _, err := e.sched.GetSchedule(ctx, &awssched.GetScheduleInput{Name: aws.String(schedule.Name(failed.NextEval)), GroupName: aws.String(e.group)}); err != nil {
		t.Fatalf("follow-up not scheduled: %v", err)
	}
}

// TestHandBacksAreNotAttempts: a message handed back unprocessed again and
// again (the later message of batches whose first one failed) has a high
// ApproximateReceiveCount, yet its eval has had no attempt: its first real
// failure is handed back, not failed, and only the third fails it.
func TestHandBacksAreNotAttempts(t *testing.T) {
	e := newEnv(t)
	b := pendingEval("b", 0)
	if _, err := e.home.Store.UpsertEvals(ctx, b); err != nil {
		t.Fatal(err)
	}
	processed := map[string]int{}
	h := e.home.EvaluateHandler()
	h.Evaluator = procFunc(func(_ context.Context, id string) error {
		processed[id]++
		return errors.New("injected failure")
	})
	rb := events.SQSMessage{MessageId: "mb", Body: evsqs.Encode(b), Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
	for i := 1; i <= 5; i++ {
		a := pendingEval(fmt.Sprintf("a%d", i), 0) // a failing eval of another job ahead of b
		if _, err := e.home.Store.UpsertEvals(ctx, a); err != nil {
			t.Fatal(err)
		}
		ra := events.SQSMessage{MessageId: "ma", Body: evsqs.Encode(a), Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
		rb.Attributes["ApproximateReceiveCount"] = fmt.Sprint(i)
		resp, _ := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{ra, rb}})
		if len(resp.BatchItemFailures) != 2 {
			t.Fatalf("batch %d: %+v", i, resp)
		}
	}
	if processed[b.ID] != 0 {
		t.Fatalf("b was processed %d times behind a failing message", processed[b.ID])
	}
	rb.Attributes["ApproximateReceiveCount"] = "6"
	for attempt := 1; attempt <= evsqs.DefaultDeliveryLimit; attempt++ {
		resp, _ := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rb}})
		ev, _ := e.home.Store.Eval(ctx, b.ID)
		if attempt < evsqs.DefaultDeliveryLimit && (len(resp.BatchItemFailures) != 1 || ev.Status != structs.EvalStatusPending) {
			t.Fatalf("real attempt %d of b (received 6 times): %+v, eval %s; want handed back", attempt, resp, ev.Status)
		}
		if attempt == evsqs.DefaultDeliveryLimit && (len(resp.BatchItemFailures) != 0 || ev.Status != structs.EvalStatusFailed) {
			t.Fatalf("real attempt %d of b: %+v, eval %s; want failed", attempt, resp, ev.Status)
		}
	}
	if processed[b.ID] != evsqs.DefaultDeliveryLimit {
		t.Fatalf("b processed %d times", processed[b.ID])
	}
}

// TestUnfinishedAttemptsFailEval: an eval whose evaluations started as
// often as the delivery limit allows and never finished (the function
// timed out or crashed each time) is failed, with that reason and a
// follow-up, by the next delivery, without evaluating it again.
func TestUnfinishedAttemptsFailEval(t *testing.T) {
	e := newEnv(t)
	ev := pendingEval("web", 0)
	if _, err := e.home.Store.UpsertEvals(ctx, ev); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < evsqs.DefaultDeliveryLimit; i++ { // three invocations died mid-evaluation
		if _, err := e.home.Store.StartEvalAttempt(ctx, ev.Namespace, ev.JobID, ev.ID); err != nil {
			t.Fatal(err)
		}
	}
	h := e.home.EvaluateHandler()
	h.Evaluator = procFunc(func(context.Context, string) error {
		t.Error("an eval past its attempts was evaluated again")
		return nil
	})
	rec := events.SQSMessage{MessageId: "m1", Body: evsqs.Encode(ev), Attributes: map[string]string{"ApproximateReceiveCount": "4"}}
	if resp, _ := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{rec}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the failed eval's message must be acknowledged: %+v", resp)
	}
	failed, _ := e.home.Store.Eval(ctx, ev.ID)
	if failed.Status != structs.EvalStatusFailed || !strings.Contains(failed.StatusDescription, "3 attempts started and none finished") || failed.NextEval == "" {
		t.Fatalf("eval: %s %q next %q", failed.Status, failed.StatusDescription, failed.NextEval)
	}
	if _, err := e.sched.GetSchedule(ctx, &awssched.GetScheduleInput{Name: aws.String(schedule.Name(failed.NextEval)), GroupName: aws.String(e.group)}); err != nil {
		t.Fatalf("follow-up not scheduled: %v", err)
	}
}

// TestHandlerHandsBackWhatItCannotFinish: when the first evaluation of a
// batch uses up the invocation's time, the handler starts no other: the
// rest of the batch is handed back at once (visible again, no attempt
// counted), and an evaluation's context ends StopMargin before the
// deadline.
func TestHandlerHandsBackWhatItCannotFinish(t *testing.T) {
	e := newEnv(t)
	evs := []*structs.Evaluation{pendingEval("a", 0), pendingEval("b", 0), pendingEval("c", 0)}
	if _, err := e.home.Store.UpsertEvals(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	if err := e.home.Queue.Producer.Send(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	recs := e.receive(10)
	if len(recs) != 3 {
		t.Fatalf("received %d", len(recs))
	}
	deadline := time.Now().Add(time.Minute)
	ictx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	clock := time.Now()
	h := e.home.EvaluateHandler()
	h.Now = func() time.Time { return clock }
	var calls []string
	h.Evaluator = procFunc(func(pctx context.Context, id string) error {
		calls = append(calls, id)
		if dl, ok := pctx.Deadline(); !ok || !dl.Equal(deadline.Add(-evsqs.DefaultStopMargin)) {
			t.Errorf("evaluation context deadline %v, want %v", dl, deadline.Add(-evsqs.DefaultStopMargin))
		}
		clock = deadline.Add(-evsqs.DefaultStartMargin + time.Second) // the evaluation took most of the time
		return nil
	})
	resp, err := h.Handle(ictx, events.SQSEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(rs []events.SQSMessage) (out []string) {
		for _, r := range rs {
			out = append(out, r.MessageId)
		}
		return out
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if len(calls) != 1 || strings.Join(failed, ",") != strings.Join(ids(recs[1:]), ",") {
		t.Fatalf("evaluated %v, handed back %v; want the first evaluated and the other two handed back", calls, failed)
	}
	e.ack(recs[0])
	again := e.receive(10)
	if strings.Join(ids(again), ",") == "" || len(again) != 2 {
		t.Fatalf("handed-back messages visible again: %d, want 2", len(again))
	}
	for _, ev := range evs[1:] {
		if n, err := e.home.Store.StartEvalAttempt(ctx, ev.Namespace, ev.JobID, ev.ID); err != nil || n != 1 {
			t.Fatalf("eval %s handed back unstarted has attempts before this one: %d %v", ev.JobID, n-1, err)
		}
	}
}

// TestFollowUpFiredByPump: a delayed follow-up becomes a schedule; the
// pump (playing EventBridge Scheduler) fires it into the queue; the
// evaluate handler then runs the eval.
func TestFollowUpFiredByPump(t *testing.T) {
	e := newEnv(t)
	e.node("n1")
	if _, err := e.home.Service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job("web", 1)}); err != nil {
		t.Fatal(err)
	}
	first := e.receive(10)
	if resp, _ := e.home.EvaluateHandler().Handle(ctx, events.SQSEvent{Records: first}); len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp)
	}
	e.ack(first...)
	follow := pendingEval("web", 2*time.Second)
	if _, err := e.home.Store.UpsertEvals(ctx, follow); err != nil {
		t.Fatal(err)
	}
	stored, _ := e.home.Store.Eval(ctx, follow.ID)
	if err := e.home.Queue.Enqueue(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if recs := e.receive(10); len(recs) != 0 {
		t.Fatalf("a delayed eval reached the queue before its schedule fired: %d", len(recs))
	}
	got, err := e.sched.GetSchedule(ctx, &awssched.GetScheduleInput{Name: aws.String(schedule.Name(follow.ID)), GroupName: aws.String(e.group)})
	if err != nil || aws.ToString(got.ScheduleExpression) != schedule.Expression(schedule.FireTime(follow.WaitUntil)) {
		t.Fatalf("schedule: %v %v", got, err)
	}
	bin, err := awstest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	pump := exec.Command(bin, "pump", "-once", "-fire-early", "2m", "-queue-url", e.queueURL, "-schedule-group", e.group)
	out, err := pump.CombinedOutput()
	if err != nil {
		t.Fatalf("pump: %v\n%s", err, out)
	}
	t.Logf("pump: %s", out)
	time.Sleep(time.Until(follow.WaitUntil))
	recs := e.receive(10)
	if len(recs) != 1 {
		t.Fatalf("after the pump fired the schedule: %d messages", len(recs))
	}
	if resp, _ := e.home.EvaluateHandler().Handle(ctx, events.SQSEvent{Records: recs}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("fired eval: %+v", resp)
	}
	if ev, _ := e.home.Store.Eval(ctx, follow.ID); ev.Status != structs.EvalStatusComplete && ev.Status != structs.EvalStatusCanceled {
		t.Fatalf("fired eval did not run: %s", ev.Status)
	}
	if _, err := e.sched.GetSchedule(ctx, &awssched.GetScheduleInput{Name: aws.String(schedule.Name(follow.ID)), GroupName: aws.String(e.group)}); err == nil {
		t.Fatal("a fired one-time schedule must be deleted")
	}
}

// TestSweeperResendsUnsentEval: an eval written but never sent (the API
// process died between the write and the send) is re-sent by the pending
// sweep and then evaluated: no lost evaluation.
func TestSweeperResendsUnsentEval(t *testing.T) {
	e := newEnv(t)
	e.node("n1")
	svc := controlplane.New(controlplane.Config{Store: e.home.Store}) // no queue: the send never happens
	res, err := svc.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job("web", 1)})
	if err != nil {
		t.Fatal(err)
	}
	if recs := e.receive(10); len(recs) != 0 {
		t.Fatal("nothing was sent")
	}
	n, err := scheduler.SweepPending(ctx, e.home.Store, e.home.Queue, 0, time.Now(), nil)
	if err != nil || n != 1 {
		t.Fatalf("sweep re-sent %d: %v", n, err)
	}
	recs := e.receive(10)
	if len(recs) != 1 {
		t.Fatalf("%d messages after the sweep", len(recs))
	}
	if resp, _ := e.home.EvaluateHandler().Handle(ctx, events.SQSEvent{Records: recs}); len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp)
	}
	if ev, _ := e.home.Store.Eval(ctx, res.EvalID); ev.Status != structs.EvalStatusComplete {
		t.Fatalf("swept eval: %s", ev.Status)
	}
	if n, _ := scheduler.SweepPending(ctx, e.home.Store, e.home.Queue, 0, time.Now(), nil); n != 0 {
		t.Fatalf("a second sweep re-sent %d evals", n)
	}
}

// TestSweepResendsWithinDedupWindow: an eval whose message is in flight
// (received, its evaluation stuck) is re-sent by the sweeper with a
// deduplication ID of its own, so SQS FIFO does not drop it within its
// five-minute window (moto deduplicates against messages in the queue as
// SQS does: with the eval's own ID the re-send would be dropped; kumo does
// not deduplicate, so there the sent IDs show it).
func TestSweepResendsWithinDedupWindow(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var dedupIDs []string
	e.home.Queue.Producer.Client = awssqs.NewFromConfig(awstest.Config(t), func(o *awssqs.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("dedup-ids", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if b, ok := in.Parameters.(*awssqs.SendMessageBatchInput); ok {
					mu.Lock()
					for _, en := range b.Entries {
						dedupIDs = append(dedupIDs, aws.ToString(en.MessageDeduplicationId))
					}
					mu.Unlock()
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		})
	})
	ev := pendingEval("web", 0)
	if _, err := e.home.Store.UpsertEvals(ctx, ev); err != nil {
		t.Fatal(err)
	}
	stored, err := e.home.Store.Eval(ctx, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.home.Queue.Enqueue(ctx, stored); err != nil {
		t.Fatal(err)
	}
	first := e.receive(10)
	if len(first) != 1 {
		t.Fatalf("first send: %d messages", len(first))
	}
	e.home.PendingAfter = 0
	res, err := e.home.Sweep(ctx)
	if err != nil || res.Resent != 1 {
		t.Fatalf("sweep: %+v %v", res, err)
	}
	e.ack(first...)
	recs := e.receive(10)
	if len(recs) != 1 {
		t.Fatalf("the sweeper's re-send while the first message was in flight: %d messages, want 1 (dropped as a duplicate?)", len(recs))
	}
	if m, err := evsqs.Decode(recs[0].Body); err != nil || m.EvalID != ev.ID {
		t.Fatalf("re-sent message %+v %v", m, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dedupIDs) != 2 || dedupIDs[0] != evsqs.DedupID(stored) || dedupIDs[1] == dedupIDs[0] {
		t.Fatalf("dedup IDs sent %q: the re-send must not reuse the eval's %q", dedupIDs, evsqs.DedupID(stored))
	}
}
