package schedule_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssched "github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/drover-sched/drover/events/schedule"
	"github.com/drover-sched/drover/internal/awstest"
	"github.com/drover-sched/drover/structs"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// TestFireTime: the next whole minute at or after the wait-until, never
// earlier (Scheduler fires anywhere within the minute of its at() time).
func TestFireTime(t *testing.T) {
	base := time.Date(2026, 3, 1, 10, 4, 0, 0, time.UTC)
	for _, tc := range []struct{ in, want time.Time }{
		{base, base},
		{base.Add(time.Nanosecond), base.Add(time.Minute)},
		{base.Add(59 * time.Second), base.Add(time.Minute)},
		{base.In(time.FixedZone("CET", 3600)).Add(30 * time.Second), base.Add(time.Minute)},
	} {
		if got := schedule.FireTime(tc.in); !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("FireTime(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if x := schedule.Expression(base); x != "at(2026-03-01T10:04:00)" {
		t.Fatalf("expression %q", x)
	}
}

// TestScheduleIdempotent: creating a delayed eval's schedule twice is one
// schedule (ConflictException absorbed), named after the eval.
func TestScheduleIdempotent(t *testing.T) {
	client := awssched.NewFromConfig(awstest.Config(t))
	group := awstest.Name("drover")
	awstest.ScheduleGroup(t, client, group)
	s := &schedule.Scheduler{Client: client, Group: group, QueueARN: "arn:aws:sqs:us-east-1:000000000000:evals.fifo", RoleARN: "arn:aws:iam::000000000000:role/s"}
	ev := &structs.Evaluation{ID: structs.GenerateUUID(), Namespace: "default", JobID: "web", WaitUntil: time.Now().Add(time.Hour)}
	for i := 0; i < 2; i++ {
		if err := s.Schedule(context.Background(), ev); err != nil {
			t.Fatalf("schedule #%d: %v", i+1, err)
		}
	}
	out, err := client.ListSchedules(context.Background(), &awssched.ListSchedulesInput{GroupName: aws.String(group)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sc := range out.Schedules {
		if aws.ToString(sc.Name) == schedule.Name(ev.ID) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d schedules for one eval", n)
	}
}
