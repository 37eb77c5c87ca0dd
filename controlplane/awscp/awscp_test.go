package awscp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"go.uber.org/zap/zaptest"

	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/controlplane/awscp"
	"github.com/drover-sched/drover/controlplane/cpclient"
	"github.com/drover-sched/drover/httpapi"
	"github.com/drover-sched/drover/internal/awstest"
	"github.com/drover-sched/drover/nodeagent"
	"github.com/drover-sched/drover/placement"
	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/scheduler"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

const supervisorEnv = "DROVER_AWSCP_TEST_SUPERVISOR"

func TestMain(m *testing.M) {
	if os.Getenv(supervisorEnv) == "1" {
		os.Exit(nodeagent.SupervisorMain(os.Args[1:]))
	}
	os.Exit(awstest.Main(m))
}

// confinement is SDK middleware standing in for IAM (kumo has none): it
// fails every DynamoDB request of the agent that the node-agent policy
// would deny — a key outside NODE#<its id>, an index, an update touching
// other attributes than the heartbeat's, any other operation.
type confinement struct {
	nodeID     string
	mu         sync.Mutex
	violations []string
	calls      map[string]int
}

var setNames = regexp.MustCompile(`([A-Za-z#][A-Za-z0-9_#]*)\s*=`)

func (c *confinement) check(params any) error {
	pk := "NODE#" + c.nodeID
	keyOK := func(k map[string]types.AttributeValue) bool {
		v, ok := k["PK"].(*types.AttributeValueMemberS)
		return ok && v.Value == pk
	}
	switch in := params.(type) {
	case *awsddb.GetItemInput:
		if keyOK(in.Key) {
			return c.ok("GetItem " + in.Key["SK"].(*types.AttributeValueMemberS).Value)
		}
	case *awsddb.QueryInput:
		v, ok := in.ExpressionAttributeValues[":pk"].(*types.AttributeValueMemberS)
		if ok && v.Value == pk && in.IndexName == nil && strings.HasPrefix(aws.ToString(in.KeyConditionExpression), "PK = :pk") {
			return c.ok("Query")
		}
	case *awsddb.UpdateItemInput:
		expr := aws.ToString(in.UpdateExpression)
		allowed := keyOK(in.Key) && strings.HasPrefix(expr, "SET ") && in.ConditionExpression == nil
		for _, m := range setNames.FindAllStringSubmatch(expr, -1) {
			if m[1] != "hbAt" && m[1] != "hbTTL" {
				allowed = false
			}
		}
		if allowed {
			return c.ok("UpdateItem HB")
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v := fmt.Sprintf("%T %+v", params, params)
	c.violations = append(c.violations, v)
	return fmt.Errorf("AccessDenied (confinement): %s", v)
}

func (c *confinement) ok(what string) error {
	c.mu.Lock()
	c.calls[what]++
	c.mu.Unlock()
	return nil
}

func (c *confinement) apply(o *awsddb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("confine", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if err := c.check(in.Parameters); err != nil {
				return middleware.InitializeOutput{}, middleware.Metadata{}, err
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
	})
}

func (c *confinement) snapshot() (map[string]int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := map[string]int{}
	for k, v := range c.calls {
		calls[k] = v
	}
	return calls, append([]string(nil), c.violations...)
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestAgentConfinedToItsNode runs a real node agent in AWS mode through a
// job's life (register, place, run real processes, stop) with its
// DynamoDB client wrapped in the confinement middleware: it never touches
// another node's items or attributes the policy does not grant, and while
// idle it polls with one small read.
func TestAgentConfinedToItsNode(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(t)
	table := awstest.Name("drover-agent")
	if err := ddb.CreateTable(ctx, ddb.NewClient(cfg), table); err != nil {
		t.Fatal(err)
	}
	log := zaptest.NewLogger(t)
	server := ddb.New(ddb.NewClient(cfg), ddb.Config{Table: table})
	svc := controlplane.New(controlplane.Config{Store: server, Logger: log.Named("control"), HeartbeatTTL: 2 * time.Second})
	ev := &scheduler.Evaluator{State: server, Reconcile: reconcile.Reconcile, Update: placement.UpdateType,
		RescheduleTracker: reconcile.NextRescheduleTracker, Logger: log.Named("scheduler")}

	nodeID, err := awscp.NodeID(ctx, cfg)
	if err != nil || nodeID == "" {
		t.Fatalf("node ID from the caller identity: %q %v", nodeID, err)
	}
	signed := 0
	var mu sync.Mutex
	api := httptest.NewServer(httpapi.New(httpapi.Config{State: server, Jobs: svc, NodeAgents: svc, Logger: log.Named("http"),
		NodeAuth: func(r *http.Request, id string) error {
			// API Gateway's IAM authorizer: a SigV4-signed request from
			// the identity whose aws:userid is the node.
			if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
				return fmt.Errorf("not signed")
			}
			if id != nodeID {
				return fmt.Errorf("caller %q is not node %q", nodeID, id)
			}
			mu.Lock()
			signed++
			mu.Unlock()
			return nil
		}}))
	defer api.Close()

	conf := &confinement{nodeID: nodeID, calls: map[string]int{}}
	client, err := cpclient.New([]string{api.URL})
	if err != nil {
		t.Fatal(err)
	}
	client.Sign = awscp.Signer(cfg)
	cp := &awscp.ControlPlane{API: client, Store: ddb.New(ddb.NewClient(cfg, conf.apply), ddb.Config{Table: table})}

	dir := t.TempDir()
	exe, _ := os.Executable()
	agent, err := nodeagent.New(cp, nodeagent.Config{DataDir: dir, NodeID: nodeID, NodeName: "aws-node", EnabledDrivers: []string{nodeagent.DriverRawExec},
		PollInterval: 100 * time.Millisecond, SupervisorCommand: []string{exe},
		SupervisorEnv: []string{supervisorEnv + "=1", "GORACE=atexit_sleep_ms=0"}, Logger: log.Named("client")})
	if err != nil {
		t.Fatal(err)
	}
	if agent.NodeID() != nodeID {
		t.Fatalf("agent node ID %q, identity %q", agent.NodeID(), nodeID)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- agent.Run(runCtx) }()
	defer func() {
		stop()
		<-done
	}()
	waitFor(t, 20*time.Second, "the node registered", func() bool { _, err := server.Node(ctx, nodeID); return err == nil })

	script := filepath.Join(dir, "task.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nwhile true; do sleep 1; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	job := &structs.Job{Region: "global", Namespace: "default", ID: "web", Name: "web", Type: structs.JobTypeService, Priority: 50,
		NodePool: "default", Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 2, EphemeralDisk: &structs.EphemeralDisk{SizeMB: 10},
			RestartPolicy: &structs.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Second, Mode: structs.RestartPolicyModeFail},
			Tasks: []*structs.Task{{Name: "server", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sh", "args": []any{script}},
				Resources: &structs.Resources{CPU: 50, MemoryMB: 32}, KillTimeout: time.Second, KillSignal: "SIGTERM"}}}}}
	res, err := svc.RegisterJob(ctx, &controlplane.RegisterRequest{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Process(ctx, res.EvalID); err != nil {
		t.Fatal(err)
	}
	status := func(want string) func() bool {
		return func() bool {
			allocs, err := server.AllocsByJob(ctx, "default", "web")
			if err != nil || len(allocs) != 2 {
				return false
			}
			for _, a := range allocs {
				if a.ClientStatus != want {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, 30*time.Second, "two allocs running on the AWS-mode agent", status(structs.AllocClientStatusRunning))

	// Idle: only the index poll and heartbeats.
	before, _ := conf.snapshot()
	time.Sleep(time.Second)
	after, _ := conf.snapshot()
	for k, n := range after {
		if d := n - before[k]; d > 0 && k != "GetItem IDX" && k != "UpdateItem HB" {
			t.Errorf("idle agent made %d %s calls: an idle poll must be one small read", d, k)
		}
	}
	if after["GetItem IDX"]-before["GetItem IDX"] < 3 {
		t.Errorf("idle agent polled its index %d times in 1 s at a 100 ms interval", after["GetItem IDX"]-before["GetItem IDX"])
	}

	stopRes, err := svc.DeregisterJob(ctx, "default", "web", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Process(ctx, stopRes.EvalID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "both allocs complete after the stop", status(structs.AllocClientStatusComplete))

	calls, violations := conf.snapshot()
	if len(violations) > 0 {
		t.Fatalf("the agent made %d requests its policy would deny: %v", len(violations), violations)
	}
	mu.Lock()
	defer mu.Unlock()
	if signed == 0 || calls["Query"] == 0 || calls["UpdateItem HB"] == 0 {
		t.Fatalf("the agent did not use both paths: %d signed API calls, DynamoDB calls %v", signed, calls)
	}
	// The middleware is no rubber stamp: another partition is refused.
	if _, err := cp.Store.Node(ctx, "another-node"); err == nil || !strings.Contains(err.Error(), "confinement") {
		t.Fatalf("a read of another node's item was not refused: %v", err)
	}
	if _, err := cp.Store.Job(ctx, "default", "web"); err == nil {
		t.Fatal("a read of a job partition was not refused")
	}
	t.Logf("agent DynamoDB calls: %v; signed API calls: %d", calls, signed)
}
