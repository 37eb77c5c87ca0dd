package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/drover-sched/drover/controlplane/awscp"
	"github.com/drover-sched/drover/nodeagent"
)

// awsControlPlane builds a client's control plane for the AWS home: the
// API at apiURL (API Gateway, SigV4-signed node-agent routes) and the
// node's own items in the DynamoDB table. The node's ID is the caller's
// aws:userid. Credentials, region and endpoint come from the standard AWS
// environment (instance role on EC2; AWS_ENDPOINT_URL for a local AWS);
// see agentAWSConfig for the region.
func awsControlPlane(ctx context.Context, apiURL, table string) (nodeagent.ControlPlane, string, error) {
	cfg, err := agentAWSConfig(ctx, apiURL)
	if err != nil {
		return nil, "", err
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

// executeAPIHost is API Gateway's default host name: <api id>.execute-api.<region>.amazonaws.com
// (.com.cn in China).
var executeAPIHost = regexp.MustCompile(`^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$`)

// agentAWSConfig is the standard AWS configuration for the node agent.
// Its region is the one the environment or the shared config names;
// without one, the region in the API's default host name (the stack's,
// where its table is too); else, on EC2, the instance's region from the
// instance metadata (which the SDK does not read by itself). With none of
// these it is an error naming AWS_REGION, instead of the SDK's "Missing
// Region" at the first call.
func agentAWSConfig(ctx context.Context, apiURL string) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return cfg, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region != "" {
		return cfg, nil
	}
	if u, err := url.Parse(apiURL); err == nil {
		if m := executeAPIHost.FindStringSubmatch(u.Hostname()); m != nil {
			cfg.Region = m[1]
			return cfg, nil
		}
	}
	if onEC2, err := config.LoadDefaultConfig(ctx, config.WithEC2IMDSRegion()); err == nil && onEC2.Region != "" {
		return onEC2, nil
	}
	return cfg, errors.New("AWS configuration: no region: set AWS_REGION to the region of the stack (the one in its ApiUrl)")
}
