package awshome

import (
	"net/http"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/drover-sched/drover/acl"
)

// AuthorizerACL is the api function's ACL system: the identity is the one
// the token authorizer (functions/authorizer) passed in the request
// context, and the token is read again by its accessor on every request,
// so a revoked token stops at once even while API Gateway still holds
// the authorizer's cached answer (ReauthorizeEvery). The deploy-time
// bootstrap token (BootstrapTokenHash) is a management token that is not
// in the table; replacing it takes effect within the authorizer's cache
// TTL. The capability table and every check are the embedded home's
// (httpapi, acl).
type AuthorizerACL struct{ *acl.Service }

// Identify implements httpapi.ACLs.
func (a AuthorizerACL) Identify(r *http.Request) (*acl.Identity, error) {
	rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	if !ok || rc.Authorizer == nil || rc.Authorizer.Lambda == nil {
		// Every user route is behind the authorizer: a request without
		// its context did not come through it.
		return nil, acl.ErrPermissionDenied
	}
	tok, ok := acl.ContextToken(rc.Authorizer.Lambda)
	if !ok {
		return nil, acl.ErrPermissionDenied
	}
	secret := acl.SecretOf(r)
	if tok.AccessorID == acl.DeployTokenAccessor && tok.IsManagement() {
		return &acl.Identity{Token: acl.DeployToken(), Secret: secret, ACL: acl.ManagementACL()}, nil
	}
	return a.ResolveAccessor(r.Context(), tok.AccessorID, secret)
}
