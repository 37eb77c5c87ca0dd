package awstest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
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

// warmUp sends one cheap request to each service the tests use; errors
// are ignored (the tests report real ones).
func warmUp(url string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithBaseEndpoint(url), config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for _, f := range []func(){
		func() { _, _ = dynamodb.NewFromConfig(cfg).ListTables(ctx, &dynamodb.ListTablesInput{}) },
		func() { _, _ = sqs.NewFromConfig(cfg).ListQueues(ctx, &sqs.ListQueuesInput{}) },
		func() {
			_, _ = scheduler.NewFromConfig(cfg).ListScheduleGroups(ctx, &scheduler.ListScheduleGroupsInput{})
		},
		func() { _, _ = sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}) },
	} {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	wg.Wait()
}
