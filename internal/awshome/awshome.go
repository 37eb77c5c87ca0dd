// Package awshome assembles drover's AWS home from the environment: the
// DynamoDB store, the SQS FIFO eval queue with EventBridge Scheduler for
// delayed evals, the evaluate service and the control-plane services. The
// Lambda functions' mains are a few lines around it.
//
// Environment (set by template.yaml and infra/):
//
//	DROVER_TABLE               DynamoDB table (default "drover")
//	DROVER_QUEUE_URL           the FIFO eval queue's URL
//	DROVER_QUEUE_ARN           its ARN (the schedules' target)
//	DROVER_SCHEDULER_ROLE_ARN  the role EventBridge Scheduler assumes to send to the queue
//	DROVER_SCHEDULE_GROUP      schedule group (default "drover")
//	DROVER_DELIVERY_LIMIT      deliveries before an eval is failed (default 3)
//	DROVER_PENDING_AFTER       the sweeper re-sends evals pending longer than this (default 2m)
//	DROVER_HEARTBEAT_TTL       heartbeat TTL handed to node agents (default 3m; agents heartbeat twice per TTL)
//	DROVER_HEARTBEAT_GRACE     a node silent for its TTL plus this is down or disconnected (default 30s)
//	DROVER_LOG_LEVEL           debug, info (default), warn, error
//	DROVER_BOOTSTRAP_TOKEN_HASH  hex SHA-256 of the bootstrap X-Nomad-Token (authorizer)
//	DROVER_NODE_ROLE_ARNS      comma-separated IAM role ARNs allowed on the node-agent
//	                           routes (api; none set: every node-agent request is refused)
//	AWS_ENDPOINT_URL           a local endpoint (kumo, LocalStack), read by the SDK
package awshome

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	awssched "github.com/aws/aws-sdk-go-v2/service/scheduler"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/drover-sched/drover/acl"
	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/events/schedule"
	evsqs "github.com/drover-sched/drover/events/sqs"
	"github.com/drover-sched/drover/httpapi"
	"github.com/drover-sched/drover/placement"
	"github.com/drover-sched/drover/reconcile"
	"github.com/drover-sched/drover/scheduler"
	"github.com/drover-sched/drover/storage"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

// Home is the AWS home's parts.
type Home struct {
	AWS       aws.Config
	Store     *ddb.Store
	SQS       *awssqs.Client
	QueueURL  string
	Queue     *evsqs.Queue
	Evaluator *scheduler.Evaluator
	// Nodes is the evaluator's node cache: it lives as long as the
	// function's container, so a warm container's evaluations read the
	// nodes table index instead of every node (ddb.NodeCache).
	Nodes   *ddb.NodeCache
	Service *controlplane.Service
	Log     *zap.Logger
	// DeliveryLimit and PendingAfter are from the environment.
	DeliveryLimit int
	PendingAfter  time.Duration
	// GCEvery is how often the sweeper collects garbage (default 15 min).
	GCEvery time.Duration
	// HeartbeatTTL is handed to node agents (DROVER_HEARTBEAT_TTL, default
	// DefaultHeartbeatTTL); HeartbeatGrace is added to it before a silent
	// node is handled as Nomad handles a missed heartbeat
	// (DROVER_HEARTBEAT_GRACE, default DefaultHeartbeatGrace).
	HeartbeatTTL   time.Duration
	HeartbeatGrace time.Duration
	// NodeRoles are the IAM roles allowed on the node-agent routes
	// (DROVER_NODE_ROLE_ARNS).
	NodeRoles *NodeRoles
}

// FromEnv builds the home from the environment; opts change the AWS
// configuration before any client is made from it (tests add SDK
// middleware).
func FromEnv(ctx context.Context, opts ...func(*aws.Config)) (*Home, error) {
	log, err := logger(os.Getenv("DROVER_LOG_LEVEL"))
	if err != nil {
		return nil, err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	for _, o := range opts {
		o(&cfg)
	}
	h := &Home{AWS: cfg, Log: log, QueueURL: os.Getenv("DROVER_QUEUE_URL"), DeliveryLimit: evsqs.DefaultDeliveryLimit, PendingAfter: 2 * time.Minute, GCEvery: 15 * time.Minute}
	if v := os.Getenv("DROVER_DELIVERY_LIMIT"); v != "" {
		if h.DeliveryLimit, err = strconv.Atoi(v); err != nil || h.DeliveryLimit < 1 {
			return nil, fmt.Errorf("DROVER_DELIVERY_LIMIT %q: want a positive number", v)
		}
	}
	if v := os.Getenv("DROVER_PENDING_AFTER"); v != "" {
		if h.PendingAfter, err = time.ParseDuration(v); err != nil {
			return nil, fmt.Errorf("DROVER_PENDING_AFTER %q: %w", v, err)
		}
	}
	for _, d := range []struct {
		env string
		v   *time.Duration
		def time.Duration
	}{{"DROVER_HEARTBEAT_TTL", &h.HeartbeatTTL, DefaultHeartbeatTTL}, {"DROVER_HEARTBEAT_GRACE", &h.HeartbeatGrace, DefaultHeartbeatGrace}} {
		*d.v = d.def
		if v := os.Getenv(d.env); v != "" {
			if *d.v, err = time.ParseDuration(v); err != nil || *d.v < 0 {
				return nil, fmt.Errorf("%s %q: want a duration such as 3m", d.env, v)
			}
		}
	}
	if h.NodeRoles, err = ParseNodeRoles(os.Getenv("DROVER_NODE_ROLE_ARNS")); err != nil {
		return nil, fmt.Errorf("DROVER_NODE_ROLE_ARNS: %w", err)
	}
	h.Store = ddb.New(ddb.NewClient(cfg), ddb.Config{Table: envOr("DROVER_TABLE", ddb.DefaultTable), Logger: log.Named("store")})
	h.SQS = awssqs.NewFromConfig(cfg)
	h.Queue = &evsqs.Queue{
		Producer: &evsqs.Producer{Client: h.SQS, QueueURL: h.QueueURL, Logger: log.Named("queue")},
		Delayer: &schedule.Scheduler{Client: awssched.NewFromConfig(cfg), Group: envOr("DROVER_SCHEDULE_GROUP", schedule.DefaultGroup),
			QueueARN: os.Getenv("DROVER_QUEUE_ARN"), RoleARN: os.Getenv("DROVER_SCHEDULER_ROLE_ARN"), Logger: log.Named("schedule")},
	}
	h.Nodes = ddb.NewNodeCache(h.Store, ddb.NodeCacheConfig{})
	h.Evaluator = NewEvaluator(h.Store, h.Nodes, h.Queue, log.Named("scheduler"))
	h.Service = controlplane.New(controlplane.Config{Store: h.Store, Queue: h.Queue, Logger: log.Named("control"), Planner: h.Evaluator,
		HeartbeatTTL: h.HeartbeatTTL})
	return h, nil
}

// NewEvaluator wires the AWS home's evaluate service: it reads and
// commits through the node cache nodes (on store) and sends follow-ups to
// queue (the SQS queue with Scheduler for delayed evals; the chaos suite's
// harness queue). Disconnected clients are supported as in the embedded
// home: the allocs of a group with max_client_disconnect (disconnect {
// lost_after }) on a disconnected node become unknown, not lost.
func NewEvaluator(store *ddb.Store, nodes *ddb.NodeCache, queue scheduler.Queue, log *zap.Logger) *scheduler.Evaluator {
	return &scheduler.Evaluator{State: nodes, Queue: queue, Reconcile: reconcile.Reconcile, Update: placement.UpdateType,
		RescheduleTracker: reconcile.NextRescheduleTracker, SupportsDisconnectedClients: true,
		Config: &scheduler.CachedConfig{Source: store}, Logger: log}
}

// The AWS home's heartbeat defaults. Each request is paid for: an agent
// heartbeats twice per TTL (every 90 s; controlplane/awscp's Pacer) and
// the sweeper, which runs every minute, handles a node silent for TTL plus
// grace as a missed heartbeat, so a node that dies is marked down (or
// disconnected) 2 to 4.5 minutes after its last heartbeat. See the
// README's cost section for what this costs per node.
const (
	DefaultHeartbeatTTL   = 3 * time.Minute
	DefaultHeartbeatGrace = 30 * time.Second
)

// EvaluateHandler is the evaluate function's SQS batch handler.
func (h *Home) EvaluateHandler() *evsqs.Handler {
	return &evsqs.Handler{Evaluator: h.Evaluator, State: h.Store, Queue: h.Queue, Client: h.SQS, QueueURL: h.QueueURL,
		DeliveryLimit: h.DeliveryLimit, Logger: h.Log.Named("evaluate")}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// logger is a JSON zap logger on stderr (CloudWatch Logs reads it).
func logger(level string) (*zap.Logger, error) {
	lvl := zapcore.InfoLevel
	if level != "" {
		if err := lvl.UnmarshalText([]byte(level)); err != nil {
			return nil, fmt.Errorf("DROVER_LOG_LEVEL %q: %w", level, err)
		}
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(os.Stderr), lvl)), nil
}

// Authorizer is the API's X-Nomad-Token authorizer; DROVER_BOOTSTRAP_TOKEN_HASH
// is the hex SHA-256 of the token given at deploy.
func (h *Home) Authorizer() *acl.Authorizer {
	return &acl.Authorizer{Tokens: h.Store, BootstrapHash: os.Getenv("DROVER_BOOTSTRAP_TOKEN_HASH"), Logger: h.Log.Named("acl")}
}

// ACL is the api function's ACL system (AuthorizerACL). The bootstrap
// reset of the embedded home (a file on the server) has no equivalent
// here: the deploy parameter BootstrapTokenHash is a management token, so
// redeploying with a new hash is how access is recovered.
func (h *Home) ACL() AuthorizerACL { return AuthorizerACL{&acl.Service{Store: h.Store}} }

// MaxResponseBytes bounds an API answer below Lambda's 6 MB synchronous
// response limit (less room for headers and the response envelope).
const MaxResponseBytes = 6_000_000

// MaxWait caps blocking queries below API Gateway's 30 s integration
// timeout.
const MaxWait = 25 * time.Second

// API is the HTTP API the api function serves: the same handlers as the
// dev agent, without a Watcher (blocking queries poll the table indexes).
func (h *Home) API() http.Handler {
	return httpapi.New(httpapi.Config{State: h.Store, Jobs: h.Service, Services: h.Store, MaxWait: MaxWait, PollInterval: time.Second,
		MaxResponseBytes: MaxResponseBytes,
		NodeAgents:       h.Service, NodeAuth: h.NodeRoles.Authorize, Operator: h.Service, Logger: h.Log.Named("http"),
		Plans: h.Service, Scaler: h.Service, Launcher: h.Service, Allocs: h.Service, Namespaces: h.Service, Scheduler: h.Service, ACL: h.ACL(),
		Agent: httpapi.AgentInfo{Name: "drover-lambda", Region: envOr("DROVER_REGION", "global"), Datacenter: "dc1", Version: Version, Server: true}})
}

// SweepResult is what one sweeper run did.
type SweepResult struct {
	Resent    int
	NodesDown int
	NodesBack int
	// NodesRedone counts the nodes whose last status change's reactions
	// were found pending and done again.
	NodesRedone int               `json:",omitempty"`
	Collected   *storage.GCResult `json:",omitempty"`
	Errors      []string          `json:",omitempty"`
}

// Sweep is the AWS home's timers, run every minute by a schedule: evals
// pending longer than PendingAfter are sent again (no lost evaluation);
// node liveness from the heartbeat items the agents write (a node silent
// for its TTL plus HeartbeatGrace is handled as Nomad handles a missed
// heartbeat, one heard from again is ready again); the reactions of a
// node's status change that a sweep (or the API) which died after the
// status write left undone, which the node's ReactionsPending mark shows
// (controlplane.Service.RedoNodeReactions); deployment deadlines and
// auto-promotion; drains (when a node drains); and, every GCEvery,
// garbage collection. Its reads of an idle cluster are few and eventually
// consistent where they only choose what to look at.
func (h *Home) Sweep(ctx context.Context) (*SweepResult, error) {
	now := time.Now()
	res := &SweepResult{}
	var errs []error
	// A re-send needs its own dedup ID: the eval's own was used within
	// the FIFO queue's five-minute window when the eval was first sent.
	n, err := scheduler.SweepPending(ctx, h.Store, h.Queue.Resender(now), h.PendingAfter, now, h.Log.Named("sweeper"))
	res.Resent = n
	errs = append(errs, err)
	live, err := h.Store.NodesLiveness(ctx)
	errs = append(errs, err)
	draining := false
	for _, l := range live {
		draining = draining || l.Drain
		if l.ReactionsPending != 0 {
			// Confirmed on a strongly consistent read of the node.
			errs = append(errs, h.Service.RedoNodeReactions(ctx, l.NodeID))
			res.NodesRedone++
		}
		if !l.Heard {
			continue
		}
		alive := l.Alive(now, h.HeartbeatGrace)
		if alive == l.Serving() {
			continue
		}
		// The listing is eventually consistent: confirm before acting.
		at, ttl, heard, err := h.Store.LastHeartbeat(ctx, l.NodeID)
		node, nerr := h.Store.Node(ctx, l.NodeID)
		if err != nil || nerr != nil {
			errs = append(errs, err, nerr)
			continue
		}
		l = ddb.NodeLiveness{NodeID: node.ID, Status: node.Status, HeartbeatAt: at, TTL: ttl, Heard: heard}
		alive = l.Alive(now, h.HeartbeatGrace)
		switch {
		case !alive && l.Serving():
			errs = append(errs, h.Service.NodeMissedHeartbeat(ctx, node.ID))
			res.NodesDown++
		case alive && (node.Status == structs.NodeStatusDown || node.Status == structs.NodeStatusDisconnected):
			_, err := h.Service.Heartbeat(ctx, node.ID)
			errs = append(errs, err)
			res.NodesBack++
		}
	}
	errs = append(errs, h.Service.CheckDeployments(ctx))
	if draining {
		errs = append(errs, h.Service.RunDrainer(ctx))
	}
	if every := int64(h.GCEvery / time.Minute); every > 0 && (now.Unix()/60)%every == 0 {
		res.Collected, err = h.Service.GarbageCollect(ctx, time.Hour)
		errs = append(errs, err)
	}
	for _, e := range errs {
		if e != nil {
			res.Errors = append(res.Errors, e.Error())
		}
	}
	if len(res.Errors) > 0 {
		h.Log.Warn("sweep finished with errors", zap.Strings("errors", res.Errors))
	}
	return res, nil
}

// Version is the control plane's version on AWS.
const Version = "0.1.0"
