package awshome_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssched "github.com/aws/aws-sdk-go-v2/service/scheduler"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/controlplane/awscp"
	"github.com/drover-sched/drover/internal/awshome"
	"github.com/drover-sched/drover/internal/awstest"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

// Prices used for the cost figures besides DynamoDB's (us-east-1, arm64).
const (
	lambdaPerMillionRequests = 0.20
	lambdaPerGBSecond        = 0.0000133334
	logsPerGB                = 0.50
	// sweepSeconds is an assumed billed duration of an idle sweep at
	// 256 MB (a handful of DynamoDB round trips); not measurable here.
	sweepSeconds = 0.15
	// reportLineBytes is what Lambda logs per invocation (START, END,
	// REPORT lines).
	reportLineBytes = 350
)

var (
	year  = 365.25 * 24 * time.Hour
	month = year / 12
)

// TestCostFigures measures the DynamoDB request units of an idle node, of
// one placement (registration, evaluation, plan, the agent's fetch and
// its first status report) and of an idle control plane (a sweep, a
// garbage collection), prices them on demand and checks design §7's cost
// targets: an idle node ≤ $1 per year, placements in bulk ≤ $5 per million
// including their first status report, an idle control plane ≤ $0.50 per
// month. The README's cost section is this test's output (go test -run
// TestCostFigures -v ./internal/awshome/).
func TestCostFigures(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(t)
	table := awstest.Name("drover-cost")
	if err := ddb.CreateTable(ctx, ddb.NewClient(cfg), table); err != nil {
		t.Fatal(err)
	}
	queueURL, arn := awstest.FIFOQueue(t, awssqs.NewFromConfig(cfg), awstest.Name("evals"))
	group := awstest.Name("drover")
	awstest.ScheduleGroup(t, awssched.NewFromConfig(cfg), group)
	for k, v := range map[string]string{"DROVER_TABLE": table, "DROVER_QUEUE_URL": queueURL, "DROVER_QUEUE_ARN": arn,
		"DROVER_SCHEDULE_GROUP": group, "DROVER_LOG_LEVEL": "error"} {
		t.Setenv(k, v)
	}
	meter := awstest.NewMeter("g1pk", "g2pk")
	h, err := awshome.FromEnv(ctx, meter.ApplyConfig)
	if err != nil {
		t.Fatal(err)
	}
	h.GCEvery = 0 // collected below, on its own
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sweep := func() {
		res, err := h.Sweep(ctx)
		check(err)
		if len(res.Errors) > 0 {
			t.Fatalf("sweep: %v", res.Errors)
		}
	}

	// An idle control plane: nothing registered.
	sweepIdle := meter.Measure(sweep)
	gcIdle := meter.Measure(func() { _, err := h.Service.GarbageCollect(ctx, time.Hour); check(err) })

	// An idle node: what its agent does, and what it adds to a sweep.
	node := &structs.Node{ID: "i-0abc", Name: "i-0abc", Datacenter: "dc1", NodePool: "default", Attributes: map[string]string{"kernel.name": "linux"},
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 8000}, Memory: structs.NodeMemoryResources{MemoryMB: 8192},
			Disk: structs.NodeDiskResources{DiskMB: 10000}}, Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}}
	ttl, err := h.Service.RegisterNode(ctx, node)
	check(err)
	check(h.Store.Heartbeat(ctx, node.ID, ttl))
	poll := meter.Measure(func() { _, err := h.Store.AgentAssignmentIndex(ctx, node.ID); check(err) })
	beat := meter.Measure(func() { check(h.Store.Heartbeat(ctx, node.ID, ttl)) })
	perNodeSweep := meter.Measure(sweep).Sub(sweepIdle)

	// One placement: job run (count 1), its evaluation through the
	// evaluate handler, the agent's fetch, its first status report.
	job := &structs.Job{Region: "global", Namespace: "default", ID: "web", Name: "web", Type: structs.JobTypeService, Priority: 50, NodePool: "default",
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 1, EphemeralDisk: &structs.EphemeralDisk{SizeMB: 10},
			Tasks: []*structs.Task{{Name: "server", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sleep", "args": []any{"100"}},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
	register := meter.Measure(func() {
		_, err := h.Service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job})
		check(err)
	})
	out, err := h.SQS.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
	check(err)
	if len(out.Messages) != 1 {
		t.Fatalf("registration sent %d messages", len(out.Messages))
	}
	m := out.Messages[0]
	evaluate := meter.Measure(func() {
		resp, err := h.EvaluateHandler().Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: aws.ToString(m.MessageId),
			ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body), Attributes: m.Attributes}}})
		check(err)
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("evaluation failed: %+v", resp)
		}
	})
	var allocs []*structs.Allocation
	fetch := meter.Measure(func() {
		_, err := h.Store.AgentAssignmentIndex(ctx, node.ID)
		check(err)
		allocs, _, err = h.Store.AgentAssignments(ctx, node.ID)
		check(err)
	})
	if len(allocs) != 1 {
		t.Fatalf("%d allocs assigned", len(allocs))
	}
	report := meter.Measure(func() {
		check(h.Service.UpdateAllocs(ctx, node.ID, []*structs.Allocation{{ID: allocs[0].ID, ClientStatus: structs.AllocClientStatusRunning,
			TaskStates: map[string]*structs.TaskState{"server": {State: structs.TaskStateRunning, Events: []*structs.TaskEvent{
				{Type: structs.TaskReceived, Time: 1}, {Type: structs.TaskStarted, Time: 2}}}}}}))
	})

	// A placement in bulk: a job of 40 (one plan chunk on the node), one
	// report for all of them, as the agent batches its reports.
	big := job.Copy()
	big.ID, big.Name, big.TaskGroups[0].Count = "bulk", "bulk", 40
	bulkRegister := meter.Measure(func() {
		_, err := h.Service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: big})
		check(err)
	})
	out, err = h.SQS.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	check(err)
	if len(out.Messages) != 1 {
		t.Fatalf("registration sent %d messages", len(out.Messages))
	}
	m = out.Messages[0]
	bulkEvaluate := meter.Measure(func() {
		resp, err := h.EvaluateHandler().Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: aws.ToString(m.MessageId),
			ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body)}}})
		check(err)
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("evaluation failed: %+v", resp)
		}
	})
	bulkFetch := meter.Measure(func() {
		allocs, _, err = h.Store.AgentAssignments(ctx, node.ID)
		check(err)
	})
	var reports []*structs.Allocation
	for _, a := range allocs {
		if a.JobID == "bulk" {
			if a.Job == nil {
				t.Fatalf("assignment %s without its job", a.ID)
			}
			reports = append(reports, &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning,
				TaskStates: map[string]*structs.TaskState{"server": {State: structs.TaskStateRunning}}})
		}
	}
	if len(reports) != 40 {
		t.Fatalf("%d allocs of the bulk job", len(reports))
	}
	bulkReport := meter.Measure(func() { check(h.Service.UpdateAllocs(ctx, node.ID, reports)) })
	bulk := bulkRegister.Add(bulkEvaluate).Add(bulkFetch).Add(bulkReport)

	// The arithmetic.
	polls := float64(year / awscp.PollInterval)
	beats := float64(year / (h.HeartbeatTTL / awscp.HeartbeatsPerTTL))
	sweepsYear, sweepsMonth := float64(year/time.Minute), float64(month/time.Minute)
	gcsMonth := float64(month / (15 * time.Minute))
	nodeYear := polls*poll.Dollars() + beats*beat.Dollars() + sweepsYear*perNodeSweep.Dollars()
	placement := register.Add(evaluate).Add(fetch).Add(report)
	cpDynamo := sweepsMonth*sweepIdle.Dollars() + gcsMonth*gcIdle.Dollars()
	cpLambda := sweepsMonth * (lambdaPerMillionRequests/1e6 + 0.25*sweepSeconds*lambdaPerGBSecond)
	cpLogs := sweepsMonth * reportLineBytes / 1e9 * logsPerGB
	var b strings.Builder
	fmt.Fprintf(&b, "prices: DynamoDB on demand $%.3f per million WRU, $%.3f per million RRU (us-east-1); units counted by DynamoDB's rules from the items (emulator: %s)\n",
		awstest.PricePerMillionWRU, awstest.PricePerMillionRRU, awstest.Emulator())
	fmt.Fprintf(&b, "idle node: poll %s every %s, heartbeat %s every %s, sweeper's share %s per minute\n",
		poll, awscp.PollInterval, beat, h.HeartbeatTTL/awscp.HeartbeatsPerTTL, perNodeSweep)
	fmt.Fprintf(&b, "  per year: %.0f polls × $%.8f + %.0f heartbeats × $%.8f + %.0f sweeps × $%.8f = $%.3f\n",
		polls, poll.Dollars(), beats, beat.Dollars(), sweepsYear, perNodeSweep.Dollars(), nodeYear)
	fmt.Fprintf(&b, "one placement: register %s; evaluate %s; agent fetch %s; first report %s\n", register, evaluate, fetch, report)
	fmt.Fprintf(&b, "  total %s = $%.7f, $%.2f per million placements\n", placement, placement.Dollars(), placement.Dollars()*1e6)
	fmt.Fprintf(&b, "40 placements of one job on one node: register %s; evaluate %s; agent fetch %s; one report of the 40 %s\n",
		bulkRegister, bulkEvaluate, bulkFetch, bulkReport)
	fmt.Fprintf(&b, "  total %s = %.1f RRU + %.1f WRU per placement, $%.2f per million placements\n",
		bulk, bulk.Read/40, bulk.Write/40, bulk.Dollars()/40*1e6)
	fmt.Fprintf(&b, "idle control plane: sweep %s per minute, GC %s per 15 minutes\n", sweepIdle, gcIdle)
	fmt.Fprintf(&b, "  per month: DynamoDB %.0f × $%.8f + %.0f × $%.8f = $%.4f; sweeper Lambda %.0f × ($%.2f/M + 0.25 GB × %.2f s × $%.10f) = $%.4f; its logs $%.4f; total $%.4f\n",
		sweepsMonth, sweepIdle.Dollars(), gcsMonth, gcIdle.Dollars(), cpDynamo, sweepsMonth, lambdaPerMillionRequests, sweepSeconds, lambdaPerGBSecond, cpLambda, cpLogs,
		cpDynamo+cpLambda+cpLogs)
	if r := meter.Reported(); r.Read+r.Write > 0 {
		fmt.Fprintf(&b, "consumed capacity DynamoDB reported for all of it: %.1f RRU + %.1f WRU (counted: %s)\n", r.Read, r.Write, meter.Total())
	}
	t.Log("\n" + b.String())
	if nodeYear > 1 {
		t.Errorf("an idle node costs $%.3f per year in DynamoDB requests; the target is at most $1", nodeYear)
	}
	if perMillion := bulk.Dollars() / 40 * 1e6; perMillion > 5 {
		t.Errorf("placements in bulk cost $%.2f per million (with their first status report); the target is at most $5", perMillion)
	}
	if total := cpDynamo + cpLambda + cpLogs; total > 0.5 {
		t.Errorf("an idle control plane costs $%.3f per month; the target is at most $0.50", total)
	}
}
