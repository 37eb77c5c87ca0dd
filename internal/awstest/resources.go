package awstest

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// FIFOQueue creates a FIFO eval queue as the templates declare it
// (content-based deduplication, a visibility timeout above the evaluate
// function's timeout) and returns its URL and ARN.
func FIFOQueue(t testing.TB, client *sqs.Client, name string) (url, arn string) {
	t.Helper()
	ctx := context.Background()
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + ".fifo"), Attributes: map[string]string{
		"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "180",
	}})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("queue ARN of %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl), attrs.Attributes["QueueArn"]
}

// ScheduleGroup creates an EventBridge Scheduler group (idempotent).
func ScheduleGroup(t testing.TB, client *scheduler.Client, name string) {
	t.Helper()
	_, err := client.CreateScheduleGroup(context.Background(), &scheduler.CreateScheduleGroupInput{Name: aws.String(name)})
	var conflict *schedtypes.ConflictException
	if err != nil && !errors.As(err, &conflict) {
		t.Fatalf("create schedule group %s: %v", name, err)
	}
}
