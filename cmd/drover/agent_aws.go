package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/drover-sched/drover/controlplane/awscp"
	"github.com/drover-sched/drover/nodeagent"
)

// awsControlPlane builds a client's control plane for the AWS home: the
// API at apiURL (API Gateway, SigV4-signed node-agent routes) and the
// node's own items in the DynamoDB table. The node's ID is the caller's
// aws:userid. Credentials, region and endpoint come from the standard AWS
// environment (instance role on EC2; AWS_ENDPOINT_URL for a local AWS).
func awsControlPlane(ctx context.Context, apiURL, table string) (nodeagent.ControlPlane, string, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("AWS configuration: %w", err)
	}
	nodeID, err := awscp.NodeID(ctx, cfg)
	if err != nil {
		return nil, "", err
	}
	cp, err := awscp.New(cfg, apiURL, table)
	if err != nil {
		return nil, "", err
	}
	return cp, nodeID, nil
}
