package awshome_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/drover-sched/drover/internal/awshome"
)

// TestIAMNodeAuth: through the same API Gateway adapter the api function
// uses, a node-agent request passes only when the caller's IAM identity
// (aws:userid) is the node it names, and never without IAM.
func TestIAMNodeAuth(t *testing.T) {
	h := httpadapter.NewV2(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := awshome.IAMNodeAuth(r, r.URL.Query().Get("node")); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	call := func(node string, iam *events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription) int {
		ev := events.APIGatewayV2HTTPRequest{RawPath: "/v1/nodeagent/x", RawQueryString: "node=" + node,
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: "/v1/nodeagent/x"}}}
		if iam != nil {
			ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{IAM: iam}
		}
		resp, err := h.ProxyWithContext(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	me := &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserID: "AROAEXAMPLE:i-0abc"}
	if got := call("AROAEXAMPLE:i-0abc", me); got != http.StatusNoContent {
		t.Fatalf("own node: %d", got)
	}
	if got := call("AROAEXAMPLE:i-other", me); got != http.StatusForbidden {
		t.Fatalf("another node: %d", got)
	}
	if got := call("AROAEXAMPLE:i-0abc", nil); got != http.StatusForbidden {
		t.Fatalf("without IAM: %d", got)
	}
}
