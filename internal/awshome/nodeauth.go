package awshome

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"
)

// ErrNodeForbidden is wrapped by every refusal of NodeRoles.Authorize (the
// API answers 403).
var ErrNodeForbidden = errors.New("forbidden on node-agent routes")

// NodeRoles is the API's httpapi.NodeAuthorizer on AWS. Node-agent routes
// are IAM-authenticated by API Gateway (SigV4), which puts the caller's
// identity in the request context (requestContext.authorizer.iam). A
// request passes only when
//
//   - the caller is one of the configured node roles: a session of a
//     listed role (arn:<partition>:sts::<account>:assumed-role/<name>/<session>
//     for arn:<partition>:iam::<account>:role/<path><name>; the session ARN
//     carries no role path, and role names are unique in an account), or a
//     listed IAM user ARN exactly; and
//   - the caller is the node it names: a node's ID is its caller's
//     aws:userid (for an EC2 instance role: "<role id>:<instance id>"), the
//     value the node-agent policy's dynamodb:LeadingKeys condition uses, so
//     one identity binds both.
//
// Without the first rule any principal of the account allowed
// execute-api:Invoke could register a node under its own user ID and read
// the job specs assigned to it. An empty NodeRoles refuses every request.
type NodeRoles struct {
	principals []nodePrincipal
}

type nodePrincipal struct {
	arn string
	// role: partition, account and name of an IAM role; empty for a user
	// ARN, which is matched exactly.
	partition, account, role string
}

// iamPrincipalARN is an IAM role or user ARN: partition, account, kind,
// path and name.
var iamPrincipalARN = regexp.MustCompile(`^arn:(aws[a-z-]*):iam::(\d{12}):(role|user)/(?:[\x21-\x7e]*/)?([\w+=,.@-]{1,64})$`)

// ParseNodeRoles reads a comma-separated list of IAM role (or user) ARNs,
// as DROVER_NODE_ROLE_ARNS holds it. Blank entries are ignored; anything
// that is not an IAM role or user ARN is an error naming it.
func ParseNodeRoles(list string) (*NodeRoles, error) {
	n := &NodeRoles{}
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		m := iamPrincipalARN.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("node role %q: want an IAM role ARN (arn:aws:iam::<account>:role/<name>) or IAM user ARN", s)
		}
		p := nodePrincipal{arn: s}
		if m[3] == "role" {
			p.partition, p.account, p.role = m[1], m[2], m[4]
		}
		n.principals = append(n.principals, p)
	}
	return n, nil
}

// Len is the number of configured node roles.
func (n *NodeRoles) Len() int { return len(n.principals) }

// allows reports whether callerARN (the SigV4 caller's ARN) is one of the
// node roles.
func (n *NodeRoles) allows(callerARN string) bool {
	for _, p := range n.principals {
		if p.role == "" {
			if callerARN == p.arn {
				return true
			}
			continue
		}
		prefix := fmt.Sprintf("arn:%s:sts::%s:assumed-role/%s/", p.partition, p.account, p.role)
		if session, ok := strings.CutPrefix(callerARN, prefix); ok && session != "" && !strings.Contains(session, "/") {
			return true
		}
	}
	return false
}

// Authorize implements httpapi.NodeAuthorizer (see NodeRoles). Every
// refusal wraps ErrNodeForbidden.
func (n *NodeRoles) Authorize(r *http.Request, nodeID string) error {
	rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	if !ok || rc.Authorizer == nil || rc.Authorizer.IAM == nil {
		return fmt.Errorf("%w: node-agent routes need IAM (SigV4) authentication", ErrNodeForbidden)
	}
	iam := rc.Authorizer.IAM
	if n == nil || len(n.principals) == 0 {
		return fmt.Errorf("%w: no node roles configured (DROVER_NODE_ROLE_ARNS)", ErrNodeForbidden)
	}
	if !n.allows(iam.UserARN) {
		return fmt.Errorf("%w: caller %q is not one of the node roles", ErrNodeForbidden, iam.UserARN)
	}
	if iam.UserID != nodeID {
		return fmt.Errorf("%w: caller %q is not node %q", ErrNodeForbidden, iam.UserID, nodeID)
	}
	return nil
}
