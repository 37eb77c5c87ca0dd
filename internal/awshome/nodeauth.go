package awshome

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"
)

// IAMNodeAuth is the API's httpapi.NodeAuthorizer on AWS: node-agent
// routes are IAM-authenticated by API Gateway (SigV4), and the caller must
// be the node it names. A node's ID is its caller's aws:userid (for an EC2
// instance role: "<role id>:<instance id>"), the same value the node-agent
// policy's dynamodb:LeadingKeys condition uses, so one identity binds both.
func IAMNodeAuth(r *http.Request, nodeID string) error {
	rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	if !ok || rc.Authorizer == nil || rc.Authorizer.IAM == nil {
		return errors.New("node-agent routes need IAM (SigV4) authentication")
	}
	if caller := rc.Authorizer.IAM.UserID; caller != nodeID {
		return fmt.Errorf("caller %q is not node %q", caller, nodeID)
	}
	return nil
}
