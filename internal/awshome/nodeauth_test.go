package awshome_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/drover-sched/drover/httpapi"
	"github.com/drover-sched/drover/internal/awshome"
	"github.com/drover-sched/drover/structs"
)

// nodeAgents answers the node-agent routes with fixed values.
type nodeAgents struct{}

func (nodeAgents) RegisterNode(context.Context, *structs.Node) (time.Duration, error) {
	return time.Second, nil
}
func (nodeAgents) Heartbeat(context.Context, string) (time.Duration, error) { return time.Second, nil }
func (nodeAgents) AssignmentIndex(context.Context, string) (uint64, error)  { return 7, nil }
func (nodeAgents) Assignments(context.Context, string) ([]*structs.Allocation, uint64, error) {
	return nil, 7, nil
}
func (nodeAgents) UpdateAllocs(context.Context, string, []*structs.Allocation) error { return nil }
func (nodeAgents) PreviousAlloc(context.Context, string, string) (*structs.Allocation, error) {
	return nil, nil
}

// TestNodeRolesOnNodeRoutes: through the HTTP API and the API Gateway
// adapter the api function uses, a node-agent route answers only a SigV4
// caller that is a session of a configured node role (or a listed IAM
// user) AND the node it names; a caller of any other role, user or account
// gets 403, as does an unsigned request and every request when no role is
// configured.
func TestNodeRolesOnNodeRoutes(t *testing.T) {
	const nodeID = "AROANODEROLE:i-0abc"
	serve := func(roles string) func(iam *events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription, node string) (int, string) {
		nr, err := awshome.ParseNodeRoles(roles)
		if err != nil {
			t.Fatal(err)
		}
		h := httpadapter.NewV2(httpapi.New(httpapi.Config{NodeAgents: nodeAgents{}, NodeAuth: nr.Authorize}))
		return func(iam *events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription, node string) (int, string) {
			path := "/v1/nodeagent/" + url.PathEscape(node) + "/assignment-index"
			ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: path, RouteKey: "ANY /v1/nodeagent/{proxy+}",
				RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: path}}}
			if iam != nil {
				ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: iam}
			}
			resp, err := h.ProxyWithContext(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			return resp.StatusCode, resp.Body
		}
	}
	caller := func(arn, userID string) *events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription {
		return &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: arn, UserID: userID, AccountID: "123456789012"}
	}
	call := serve("arn:aws:iam::123456789012:role/fleet/drover-node, arn:aws:iam::123456789012:user/lab-box")
	for _, c := range []struct {
		name   string
		iam    *events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription
		node   string
		status int
	}{
		{"a session of the node role, its own node", caller("arn:aws:sts::123456789012:assumed-role/drover-node/i-0abc", nodeID), nodeID, http.StatusOK},
		{"a listed IAM user, its own node", caller("arn:aws:iam::123456789012:user/lab-box", "AIDALABBOX"), "AIDALABBOX", http.StatusOK},
		{"a session of another role of the account", caller("arn:aws:sts::123456789012:assumed-role/ci-runner/i-0abc", nodeID), nodeID, http.StatusForbidden},
		{"a role whose name extends the node role's", caller("arn:aws:sts::123456789012:assumed-role/drover-node-x/i-0abc", nodeID), nodeID, http.StatusForbidden},
		{"the node role's name in another account", caller("arn:aws:sts::210987654321:assumed-role/drover-node/i-0abc", nodeID), nodeID, http.StatusForbidden},
		{"an unlisted IAM user", caller("arn:aws:iam::123456789012:user/intruder", "AIDAINTRUDER"), "AIDAINTRUDER", http.StatusForbidden},
		{"the node role, another node", caller("arn:aws:sts::123456789012:assumed-role/drover-node/i-0abc", nodeID), "AROANODEROLE:i-other", http.StatusForbidden},
		{"unsigned", nil, nodeID, http.StatusForbidden},
	} {
		status, body := call(c.iam, c.node)
		if status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, status, body, c.status)
		}
		if c.status == http.StatusForbidden && !strings.Contains(body, "node") {
			t.Errorf("%s: refusal says %q", c.name, body)
		}
	}
	none := serve("")
	if status, body := none(caller("arn:aws:sts::123456789012:assumed-role/drover-node/i-0abc", nodeID), nodeID); status != http.StatusForbidden || !strings.Contains(body, "DROVER_NODE_ROLE_ARNS") {
		t.Errorf("no node roles configured: %d %s", status, body)
	}
}

// TestParseNodeRoles: DROVER_NODE_ROLE_ARNS takes IAM role and user ARNs
// (paths included); anything else is refused by name.
func TestParseNodeRoles(t *testing.T) {
	nr, err := awshome.ParseNodeRoles("arn:aws:iam::123456789012:role/a/b/drover-node,,arn:aws-cn:iam::123456789012:role/n")
	if err != nil || nr.Len() != 2 {
		t.Fatalf("valid list: %v %v", nr, err)
	}
	for _, bad := range []string{"drover-node", "arn:aws:sts::123456789012:assumed-role/drover-node/s",
		"arn:aws:iam::123456789012:policy/p", "arn:aws:iam::12345:role/r", "*"} {
		if _, err := awshome.ParseNodeRoles(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	var nilRoles *awshome.NodeRoles
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	if err := nilRoles.Authorize(r, "n"); !errors.Is(err, awshome.ErrNodeForbidden) {
		t.Errorf("unsigned request: %v", err)
	}
}
