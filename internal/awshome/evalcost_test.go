package awshome_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssched "github.com/aws/aws-sdk-go-v2/service/scheduler"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/internal/awshome"
	"github.com/drover-sched/drover/internal/awstest"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

// evalCostNodes are the fleet sizes TestEvalCostPerFleetSize measures:
// 100 and 1,000 nodes (moto, which writes one transaction at a time and
// slowly: 10 and 100); DROVER_EVAL_COST_NODES (comma-separated) replaces
// them (the README's figures: 100,1000,5000).
func evalCostNodes(t *testing.T) []int {
	v := os.Getenv("DROVER_EVAL_COST_NODES")
	if v == "" {
		return awstest.OnMoto([]int{100, 1000}, []int{10, 100})
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			t.Fatalf("DROVER_EVAL_COST_NODES: %q is not a node count", s)
		}
		out = append(out, n)
	}
	return out
}

// bulkCount is the count of the larger job TestEvalCostPerFleetSize
// evaluates: 100 (moto, slow at transactions: 30).
func bulkCount() int { return awstest.OnMoto(100, 30) }

// evalCost is what one fleet size's evaluations cost.
type evalCost struct {
	nodes             int
	first, warm, bulk awstest.Units
	// warmOn, bulkOn are the nodes the job of 10 and the larger one were placed
	// on: the commit reads each once (1 RRU) and writes its counters.
	warmOn, bulkOn int
	loads          int
}

// TestEvalCostPerFleetSize measures the DynamoDB request units of an
// evaluation through the evaluate handler of one warm container (one
// Home: its node cache) on fleets of 100 and 1,000 nodes (moto: 10 and 100), the nodes
// written directly in the store: the first evaluation loads every node,
// later ones read the nodes table index and their job, so a job of 10
// and a job of 100 (moto: 30) cost the same units whatever the fleet (read units
// within 10%: the plan's nodes differ with the sample). Run with
// DROVER_EVAL_COST_NODES=100,1000,5000 -v for the README's figures.
func TestEvalCostPerFleetSize(t *testing.T) {
	var costs []evalCost
	for _, n := range evalCostNodes(t) {
		costs = append(costs, measureEvalCost(t, n))
	}
	bulk := float64(bulkCount())
	var b strings.Builder
	fmt.Fprintf(&b, "units counted by DynamoDB's rules from the items (emulator: %s)\n", awstest.Emulator())
	for _, c := range costs {
		fmt.Fprintf(&b, "%5d nodes: first evaluation (loads the node cache) %s; a job of 10: %s on %d nodes (%.2f RRU + %.2f WRU per placement); a job of %.0f: %s on %d nodes (%.2f RRU + %.2f WRU per placement); node loads %d\n",
			c.nodes, c.first, c.warm, c.warmOn, c.warm.Read/10, c.warm.Write/10, bulk, c.bulk, c.bulkOn, c.bulk.Read/bulk, c.bulk.Write/bulk, c.loads)
	}
	t.Log("\n" + b.String())
	base := costs[0]
	for _, c := range costs[1:] {
		// Besides the one read of each node the plan places on (the
		// sample spreads a job over a few nodes more or less), the reads
		// must be the same whatever the fleet.
		for _, m := range []struct {
			name           string
			base, this     awstest.Units
			baseOn, thisOn int
		}{{"a job of 10", base.warm, c.warm, base.warmOn, c.warmOn}, {fmt.Sprintf("a job of %.0f", bulk), base.bulk, c.bulk, base.bulkOn, c.bulkOn}} {
			if this, was := m.this.Read-float64(m.thisOn), m.base.Read-float64(m.baseOn); this > was*1.1+1 {
				t.Errorf("%s on %d nodes reads %.1f RRU besides its %d nodes, on %d nodes %.1f: an evaluation's reads grow with the fleet",
					m.name, c.nodes, this, m.thisOn, base.nodes, was)
			}
		}
		if c.loads != 1 {
			t.Errorf("%d nodes: the node cache loaded every node %d times over three evaluations, want once", c.nodes, c.loads)
		}
	}
	if last := costs[len(costs)-1]; len(costs) > 1 && last.first.Read < base.first.Read*2 {
		t.Errorf("the first evaluation reads %.1f RRU on %d nodes and %.1f on %d: it should load every node",
			last.first.Read, last.nodes, base.first.Read, base.nodes)
	}
}

func measureEvalCost(t *testing.T, nodes int) evalCost {
	ctx := context.Background()
	cfg := awstest.Config(t)
	table := awstest.Name("drover-evalcost")
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
	// The nodes, written directly in the store (no agents), 16 at a time
	// (moto answers concurrent transactions with errors: one at a time).
	var wg sync.WaitGroup
	errs := make(chan error, nodes)
	sem := make(chan struct{}, awstest.OnMoto(16, 1))
	for i := 0; i < nodes; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			id := fmt.Sprintf("i-%06d", i)
			_, err := h.Store.UpsertNode(ctx, &structs.Node{ID: id, Name: id, Datacenter: "dc1", NodePool: "default",
				Attributes: map[string]string{"kernel.name": "linux"},
				NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 8000}, Memory: structs.NodeMemoryResources{MemoryMB: 8192},
					Disk: structs.NodeDiskResources{DiskMB: 10000}}, Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}}})
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	evaluate := func(id string, count int) (awstest.Units, int) {
		t.Helper()
		job := &structs.Job{Region: "global", Namespace: "default", ID: id, Name: id, Type: structs.JobTypeService, Priority: 50, NodePool: "default",
			Datacenters: []string{"dc1"},
			TaskGroups: []*structs.TaskGroup{{Name: "web", Count: count, EphemeralDisk: &structs.EphemeralDisk{SizeMB: 10},
				Tasks: []*structs.Task{{Name: "server", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sleep", "args": []any{"100"}},
					Resources: &structs.Resources{CPU: 100, MemoryMB: 64}}}}}}
		if _, err := h.Service.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job}); err != nil {
			t.Fatal(err)
		}
		out, err := h.SQS.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) != 1 {
			t.Fatalf("registration of %s sent %d messages", id, len(out.Messages))
		}
		m := out.Messages[0]
		units := meter.Measure(func() {
			resp, err := h.EvaluateHandler().Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: aws.ToString(m.MessageId),
				ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body)}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.BatchItemFailures) != 0 {
				t.Fatalf("evaluation of %s failed: %+v", id, resp)
			}
		})
		allocs, err := h.Store.AllocsByJob(ctx, "default", id)
		if err != nil {
			t.Fatal(err)
		}
		if len(allocs) != count {
			t.Fatalf("%s: %d allocs placed, want %d", id, len(allocs), count)
		}
		on := map[string]bool{}
		for _, a := range allocs {
			on[a.NodeID] = true
		}
		return units, len(on)
	}
	c := evalCost{nodes: nodes}
	c.first, _ = evaluate("first", 10)
	c.warm, c.warmOn = evaluate("web", 10)
	c.bulk, c.bulkOn = evaluate("bulk", bulkCount())
	c.loads = h.Nodes.Loads()
	return c
}
