package awshome_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/drover-sched/drover/acl"
	"github.com/drover-sched/drover/httpapi"
	"github.com/drover-sched/drover/internal/awshome"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

// TestAuthorizerACL: through the API Gateway adapter the api function
// uses, the identity is the one in the authorizer context: the deploy-time
// token is management; a stored token is read again by its accessor on
// every request (revoked: refused at once, whatever API Gateway cached)
// and must match the secret the request carries; a request without the
// authorizer's context is refused.
func TestAuthorizerACL(t *testing.T) {
	ctx := context.Background()
	store, err := embedded.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	svc := &acl.Service{Store: store}
	root := &acl.Identity{ACL: acl.ManagementACL()}
	if _, err := svc.UpsertPolicy(ctx, root, &structs.ACLPolicy{Name: "readonly", Rules: `namespace "*" { policy = "read" }`}); err != nil {
		t.Fatal(err)
	}
	tok, secret, err := svc.CreateToken(ctx, root, &acl.TokenSpec{Name: "ro", Policies: []string{"readonly"}})
	if err != nil {
		t.Fatal(err)
	}
	h := httpadapter.NewV2(httpapi.New(httpapi.Config{State: store, ACL: awshome.AuthorizerACL{Service: svc}}))
	call := func(method, path, secret string, authz map[string]any) (int, string) {
		t.Helper()
		ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: path, RouteKey: "ANY /{proxy+}",
			Headers:        map[string]string{"x-nomad-token": secret},
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}}}
		if authz != nil {
			ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: authz}
		}
		resp, err := h.ProxyWithContext(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, strings.TrimSpace(resp.Body)
	}
	deploy := acl.AuthorizerContext(acl.DeployToken())
	if code, out := call("GET", "/v1/acl/token/self", "boot", deploy); code != 200 || !strings.Contains(out, acl.DeployTokenAccessor) {
		t.Fatalf("deploy-time token: %d %s", code, out)
	}
	ctxTok := acl.AuthorizerContext(tok)
	if code, out := call("GET", "/v1/jobs", secret, ctxTok); code != 200 {
		t.Fatalf("read-only list: %d %s", code, out)
	}
	if code, out := call("DELETE", "/v1/job/web", secret, ctxTok); code != 403 || out != "Permission denied" {
		t.Fatalf("read-only write: %d %s", code, out)
	}
	if code, out := call("GET", "/v1/jobs", "another-secret", ctxTok); code != 403 || out != "ACL token not found" {
		t.Fatalf("a context whose token is not the request's: %d %s", code, out)
	}
	if code, out := call("GET", "/v1/jobs", secret, nil); code != 403 || out != "Permission denied" {
		t.Fatalf("no authorizer context: %d %s", code, out)
	}
	if _, err := svc.DeleteToken(ctx, root, tok.AccessorID); err != nil {
		t.Fatal(err)
	}
	if code, out := call("GET", "/v1/jobs", secret, ctxTok); code != 403 || out != "ACL token not found" {
		t.Fatalf("revoked token, cached authorizer answer: %d %s", code, out)
	}
}
