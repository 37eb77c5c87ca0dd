// Package awscp is the node agent's control plane on AWS
// (nodeagent.ControlPlane): registration, status reports and previous
// allocs go through the HTTP API's node-agent routes, signed with SigV4
// (cpclient with a signer); heartbeats, the assignment index and the
// assignments are the node's own DynamoDB items, read and written with
// credentials the node-agent policy confines to them. The node's ID is its
// caller identity's aws:userid, which both the policy's LeadingKeys and
// the API's node check use.
package awscp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/drover-sched/drover/controlplane/cpclient"
	"github.com/drover-sched/drover/nodeagent"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
	"github.com/drover-sched/drover/structs"
)

// ControlPlane is nodeagent.ControlPlane on AWS.
type ControlPlane struct {
	API   *cpclient.Client
	Store *ddb.Store
	// ttl is the heartbeat TTL the API handed out at registration.
	ttl time.Duration
}

var (
	_ nodeagent.ControlPlane    = (*ControlPlane)(nil)
	_ nodeagent.Pacer           = (*ControlPlane)(nil)
	_ nodeagent.ServiceRegistry = (*ControlPlane)(nil)
)

// The agent's pace on AWS, where each request is paid for: an idle node
// costs one eventually consistent read per poll (0.5 read units) and one
// write per heartbeat. Polling every 3 s picks a new assignment up 1.5 s
// after it lands at the median; two heartbeats per TTL (the API hands out
// 3 minutes) tolerate one lost heartbeat. The README's cost section has
// the arithmetic.
const (
	PollInterval     = 3 * time.Second
	HeartbeatsPerTTL = 2
)

// PollInterval implements nodeagent.Pacer.
func (c *ControlPlane) PollInterval() time.Duration { return PollInterval }

// HeartbeatsPerTTL implements nodeagent.Pacer.
func (c *ControlPlane) HeartbeatsPerTTL() int { return HeartbeatsPerTTL }

// New builds the control plane: api is the drover API's URL (API
// Gateway), table the DynamoDB table.
func New(cfg aws.Config, api, table string) (*ControlPlane, error) {
	c, err := cpclient.New([]string{api})
	if err != nil {
		return nil, err
	}
	c.Sign = Signer(cfg)
	return &ControlPlane{API: c, Store: ddb.New(ddb.NewClient(cfg), ddb.Config{Table: table})}, nil
}

// Signer signs node-agent requests for API Gateway's IAM authorization
// (SigV4, service execute-api).
func Signer(cfg aws.Config) func(r *http.Request, body []byte) error {
	signer := v4.NewSigner()
	return func(r *http.Request, body []byte) error {
		creds, err := cfg.Credentials.Retrieve(r.Context())
		if err != nil {
			return fmt.Errorf("sign request: credentials: %w", err)
		}
		sum := sha256.Sum256(body)
		return signer.SignHTTP(r.Context(), creds, r, hex.EncodeToString(sum[:]), "execute-api", cfg.Region, time.Now())
	}
}

// NodeID is the node ID of the caller: its aws:userid (for an EC2
// instance role, "<role id>:<instance id>").
func NodeID(ctx context.Context, cfg aws.Config) (string, error) {
	out, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", fmt.Errorf("caller identity: %w", err)
	}
	return aws.ToString(out.UserId), nil
}

// RegisterNode implements nodeagent.ControlPlane (through the API).
func (c *ControlPlane) RegisterNode(ctx context.Context, node *structs.Node) (time.Duration, error) {
	ttl, err := c.API.RegisterNode(ctx, node)
	if err == nil {
		c.ttl = ttl
		// The first heartbeat item, so liveness sees the node at once.
		err = c.Store.Heartbeat(ctx, node.ID, ttl)
	}
	return ttl, err
}

// Heartbeat implements nodeagent.ControlPlane: an UpdateItem of the
// node's own heartbeat item (the sweeper reads it for liveness).
func (c *ControlPlane) Heartbeat(ctx context.Context, nodeID string) (time.Duration, error) {
	ttl := c.ttl
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	if err := c.Store.Heartbeat(ctx, nodeID, ttl); err != nil {
		return 0, err
	}
	return ttl, nil
}

// AssignmentIndex implements nodeagent.ControlPlane: one eventually
// consistent read of an item under 4 KB.
func (c *ControlPlane) AssignmentIndex(ctx context.Context, nodeID string) (uint64, error) {
	return c.Store.AgentAssignmentIndex(ctx, nodeID)
}

// Assignments implements nodeagent.ControlPlane from the node's own items.
func (c *ControlPlane) Assignments(ctx context.Context, nodeID string) ([]*structs.Allocation, uint64, error) {
	return c.Store.AgentAssignments(ctx, nodeID)
}

// UpdateAllocs implements nodeagent.ControlPlane (through the API, which
// does the reactions).
func (c *ControlPlane) UpdateAllocs(ctx context.Context, nodeID string, updates []*structs.Allocation) error {
	return c.API.UpdateAllocs(ctx, nodeID, updates)
}

// PreviousAlloc implements nodeagent.ControlPlane (through the API).
func (c *ControlPlane) PreviousAlloc(ctx context.Context, nodeID, allocID string) (*structs.Allocation, error) {
	return c.API.PreviousAlloc(ctx, nodeID, allocID)
}

// UpsertServiceRegistrations implements nodeagent.ServiceRegistry
// (through the API, as alloc reports).
func (c *ControlPlane) UpsertServiceRegistrations(ctx context.Context, nodeID string, regs []*structs.ServiceRegistration) error {
	return c.API.UpsertServiceRegistrations(ctx, nodeID, regs)
}

// DeleteServiceRegistrations implements nodeagent.ServiceRegistry
// (through the API).
func (c *ControlPlane) DeleteServiceRegistrations(ctx context.Context, nodeID string, ids []string) error {
	return c.API.DeleteServiceRegistrations(ctx, nodeID, ids)
}

// ServiceRegistrations implements nodeagent.ServiceRegistry (through the
// API: registrations are read from every node's allocs, outside the
// node's own partition).
func (c *ControlPlane) ServiceRegistrations(ctx context.Context, nodeID, namespace, name string, minIndex uint64, wait time.Duration) ([]*structs.ServiceRegistration, uint64, error) {
	return c.API.ServiceRegistrations(ctx, nodeID, namespace, name, minIndex, wait)
}
