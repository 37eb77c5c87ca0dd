package awshome_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssched "github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/events/schedule"
	evsqs "github.com/drover-sched/drover/events/sqs"
	"github.com/drover-sched/drover/internal/awstest"
	"github.com/drover-sched/drover/structs"
)

// TestPeriodicOnAWS: on the AWS home a periodic parent's next launch is an
// EventBridge Scheduler one-time schedule (named for the launch eval,
// at() the launch minute, targeting the eval queue in the parent's message
// group); delivering it launches the child <parent>/periodic-<unix> in
// DynamoDB and schedules the launch after; a second delivery of the same
// launch (at-least-once) launches nothing more and schedules nothing new.
func TestPeriodicOnAWS(t *testing.T) {
	ctx := context.Background()
	h, group := homeOnEmulator(t, "drover-periodic", map[string]string{"DROVER_SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/drover-scheduler"})
	sched := awssched.NewFromConfig(awstest.Config(t))
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h.Evaluator.Now, h.Queue.Now = clock, clock

	job := &structs.Job{Region: "global", Namespace: "default", ID: "nightly", Name: "nightly", Type: structs.JobTypeBatch,
		Priority: 50, NodePool: "default", Datacenters: []string{"*"},
		Periodic: &structs.PeriodicConfig{Enabled: true, Spec: "* * * * *", SpecType: structs.PeriodicSpecCron, TimeZone: "UTC"},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1, Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec",
			Config: map[string]any{"command": "/bin/true"}, Resources: &structs.Resources{CPU: 100, MemoryMB: 32}}}}}}
	reg, err := h.Service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Evaluator.Process(ctx, reg.EvalID); err != nil {
		t.Fatal(err)
	}

	launchEval := func(at time.Time) *structs.Evaluation {
		t.Helper()
		evals, err := h.Store.EvalsByJob(ctx, "default", "nightly")
		if err != nil {
			t.Fatal(err)
		}
		var found []*structs.Evaluation
		for _, e := range evals {
			if e.Status == structs.EvalStatusPending && e.TriggeredBy == structs.EvalTriggerPeriodicJob {
				found = append(found, e)
			}
		}
		if len(found) != 1 || !found[0].WaitUntil.Equal(at) {
			t.Fatalf("pending launches %+v, want one at %s", found, at)
		}
		ev := found[0]
		out, err := sched.GetSchedule(ctx, &awssched.GetScheduleInput{Name: aws.String(schedule.Name(ev.ID)), GroupName: aws.String(group)})
		if err != nil {
			t.Fatalf("the launch at %s has no schedule: %v", at, err)
		}
		if got, want := aws.ToString(out.ScheduleExpression), schedule.Expression(at); got != want {
			t.Fatalf("schedule expression %s, want %s", got, want)
		}
		msg, err := evsqs.Decode(aws.ToString(out.Target.Input))
		if err != nil || msg.EvalID != ev.ID || aws.ToString(out.Target.SqsParameters.MessageGroupId) != evsqs.GroupID("default", "nightly") {
			t.Fatalf("schedule target %+v (%v)", out.Target, err)
		}
		return ev
	}
	first := now.Truncate(time.Minute).Add(time.Minute)
	ev := launchEval(first)

	// The schedule fires at its minute: the launch.
	mu.Lock()
	now = first.Add(2 * time.Second)
	mu.Unlock()
	if err := h.Evaluator.Process(ctx, ev.ID); err != nil {
		t.Fatal(err)
	}
	childID := structs.PeriodicChildID("nightly", first)
	child, err := h.Store.Job(ctx, "default", childID)
	if err != nil || child.ParentID != "nightly" || child.Periodic != nil {
		t.Fatalf("child %+v %v", child, err)
	}
	launchEval(first.Add(time.Minute))

	// The same launch delivered again, and again after a crash before its
	// eval was acknowledged: one child, one next launch.
	if err := h.Evaluator.Process(ctx, ev.ID); err != nil {
		t.Fatal(err)
	}
	again := ev.Copy()
	again.Status = structs.EvalStatusPending
	if _, err := h.Store.UpsertEvals(ctx, again); err != nil {
		t.Fatal(err)
	}
	if err := h.Evaluator.Process(ctx, ev.ID); err != nil {
		t.Fatal(err)
	}
	kids, err := h.Store.Jobs(ctx, "default", "nightly/")
	if err != nil || len(kids) != 1 || kids[0].ID != childID {
		t.Fatalf("children after a double delivery: %v %v", kids, err)
	}
	launchEval(first.Add(time.Minute))
	evals, _ := h.Store.EvalsByJob(ctx, "default", childID)
	if len(evals) != 1 || !strings.HasPrefix(evals[0].TriggeredBy, "periodic") {
		t.Fatalf("child evals %+v", evals)
	}

	// Dispatch on DynamoDB: the child holds the payload and merged meta;
	// the same idempotency token returns it.
	proc := job.Copy()
	proc.ID, proc.Name, proc.Periodic = "proc", "proc", nil
	proc.ParameterizedJob = &structs.ParameterizedJobConfig{Payload: structs.DispatchPayloadRequired, MetaRequired: []string{"in"}}
	if _, err := h.Service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: proc}); err != nil {
		t.Fatal(err)
	}
	d, err := h.Service.DispatchJob(ctx, &controlplane.DispatchRequest{Namespace: "default", JobID: "proc", Payload: []byte("p"),
		Meta: map[string]string{"in": "x"}, IdempotencyToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	dc, err := h.Store.Job(ctx, "default", d.DispatchedJobID)
	if err != nil || string(dc.Payload) != "p" || dc.Meta["in"] != "x" || !dc.Dispatched {
		t.Fatalf("dispatched child %+v %v", dc, err)
	}
	d2, err := h.Service.DispatchJob(ctx, &controlplane.DispatchRequest{Namespace: "default", JobID: "proc", Payload: []byte("p"),
		Meta: map[string]string{"in": "x"}, IdempotencyToken: "tok"})
	if err != nil || d2.DispatchedJobID != d.DispatchedJobID || d2.EvalID != "" {
		t.Fatalf("second dispatch with the token: %+v %v", d2, err)
	}
}
