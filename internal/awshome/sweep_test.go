package awshome_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssched "github.com/aws/aws-sdk-go-v2/service/scheduler"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/drover-sched/drover/internal/awshome"
	"github.com/drover-sched/drover/internal/awstest"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }

// homeOnEmulator builds the AWS home from the environment its functions
// get, on the test's emulator: a new table (prefix names it), FIFO eval
// queue and schedule group; extra adds or overrides variables; opts
// change the AWS configuration (SDK middleware). It returns the home and
// the schedule group's name.
func homeOnEmulator(t *testing.T, prefix string, extra map[string]string, opts ...func(*aws.Config)) (*awshome.Home, string) {
	t.Helper()
	ctx := context.Background()
	cfg := awstest.Config(t)
	table := awstest.Name(prefix)
	if err := ddb.CreateTable(ctx, ddb.NewClient(cfg), table); err != nil {
		t.Fatal(err)
	}
	url, arn := awstest.FIFOQueue(t, awssqs.NewFromConfig(cfg), awstest.Name("evals"))
	group := awstest.Name("drover")
	awstest.ScheduleGroup(t, awssched.NewFromConfig(cfg), group)
	env := map[string]string{"DROVER_TABLE": table, "DROVER_QUEUE_URL": url, "DROVER_QUEUE_ARN": arn,
		"DROVER_SCHEDULE_GROUP": group, "DROVER_LOG_LEVEL": "error"}
	for k, v := range extra {
		env[k] = v
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	h, err := awshome.FromEnv(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h, group
}

// TestSweepNodeLiveness: the API hands node agents the AWS heartbeat TTL;
// the sweeper marks a node whose heartbeat item is older than its TTL plus
// the grace as Nomad marks a missed heartbeat (not before), a node heard
// from again ready, from the heartbeat items agents write on AWS; and it
// runs the drainer when a node drains.
func TestSweepNodeLiveness(t *testing.T) {
	ctx := context.Background()
	h, _ := homeOnEmulator(t, "drover-sweep", nil)
	node := &structs.Node{ID: "n1", Name: "n1", Datacenter: "dc1", NodePool: "default",
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 1000}, Memory: structs.NodeMemoryResources{MemoryMB: 1000}}}
	ttl, err := h.Service.RegisterNode(ctx, node)
	if err != nil || ttl != awshome.DefaultHeartbeatTTL {
		t.Fatalf("registration handed TTL %s (%v), want %s", ttl, err, awshome.DefaultHeartbeatTTL)
	}
	status := func() string {
		n, err := h.Store.Node(ctx, "n1")
		if err != nil {
			t.Fatal(err)
		}
		return n.Status
	}
	if err := h.Store.Heartbeat(ctx, "n1", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if res, err := h.Sweep(ctx); err != nil || res.NodesDown != 0 || status() != structs.NodeStatusReady {
		t.Fatalf("silent past its TTL but within the grace: %+v %v, node %s", res, err, status())
	}
	h.HeartbeatGrace = 0
	res, err := h.Sweep(ctx)
	if err != nil || res.NodesDown != 1 || status() != structs.NodeStatusDown {
		t.Fatalf("stale heartbeat: %+v %v, node %s", res, err, status())
	}
	if err := h.Store.Heartbeat(ctx, "n1", time.Minute); err != nil {
		t.Fatal(err)
	}
	res, err = h.Sweep(ctx)
	if err != nil || res.NodesBack != 1 || status() != structs.NodeStatusReady {
		t.Fatalf("fresh heartbeat: %+v %v, node %s", res, err, status())
	}
	if res, _ := h.Sweep(ctx); res.NodesDown+res.NodesBack != 0 || len(res.Errors) != 0 {
		t.Fatalf("a steady node changed: %+v", res)
	}
	// A drain of a node without allocs ends at the next sweep.
	if _, err := h.Store.UpdateNodeDrain(ctx, "n1", &structs.DrainStrategy{}, false); err != nil {
		t.Fatal(err)
	}
	if res, err := h.Sweep(ctx); err != nil || len(res.Errors) != 0 {
		t.Fatalf("sweep with a draining node: %+v %v", res, err)
	}
	if n, _ := h.Store.Node(ctx, "n1"); n.Drain {
		t.Fatal("the sweep did not run the drainer for a draining node")
	}
}
