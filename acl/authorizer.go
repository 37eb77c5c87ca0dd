package acl

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// TokenLookup finds a token by its secret's hash (storage/dynamodb: one
// strongly consistent GetItem of TOKEN#<hash>); an unknown hash is
// storage.ErrNotFound.
type TokenLookup interface {
	ACLTokenBySecretHash(ctx context.Context, hash string) (*structs.ACLToken, error)
}

// Authorizer is the AWS home's API Gateway Lambda authorizer (HTTP API,
// payload 2.0, simple responses): it resolves X-Nomad-Token to a token
// (stored by its hash, or the bootstrap token given at deploy as its hash,
// a management token) and passes the token's identity to the api function
// in the authorizer context (AuthorizerContext), which enforces the
// capability table. API Gateway caches the answer per token for the
// authorizer's result TTL (template.yaml's ReauthorizeEvery).
type Authorizer struct {
	Tokens TokenLookup
	// BootstrapHash is the hash of the token given at deploy (may be
	// empty).
	BootstrapHash string
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *zap.Logger
}

// Check returns the token secret names, or nil when it names none (empty,
// unknown or expired). A failed lookup is an error.
func (a *Authorizer) Check(ctx context.Context, secret string) (*structs.ACLToken, error) {
	if secret == "" {
		return nil, nil
	}
	h := Hash(secret)
	if a.BootstrapHash != "" && subtle.ConstantTimeCompare([]byte(h), []byte(strings.ToLower(a.BootstrapHash))) == 1 {
		return DeployToken(), nil
	}
	if a.Tokens == nil {
		return nil, nil
	}
	tok, err := a.Tokens.ACLTokenBySecretHash(ctx, h)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	if tok.IsExpired(now) {
		return nil, nil
	}
	return tok, nil
}

// Authorize is the Lambda handler. An error makes API Gateway answer 500,
// so lookup failures are returned, not hidden as a deny.
func (a *Authorizer) Authorize(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
	secret := ""
	for k, v := range req.Headers {
		if strings.EqualFold(k, "X-Nomad-Token") {
			secret = v
		}
	}
	tok, err := a.Check(ctx, secret)
	if err != nil {
		return events.APIGatewayV2CustomAuthorizerSimpleResponse{}, err
	}
	if tok == nil {
		if a.Logger != nil {
			a.Logger.Info("request denied: missing, unknown or expired X-Nomad-Token", zap.String("route", req.RouteKey))
		}
		return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: false}, nil
	}
	return events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: true, Context: AuthorizerContext(tok)}, nil
}

// Keys of the authorizer context (all values strings, as API Gateway
// passes them on in requestContext.authorizer.lambda).
const (
	CtxAccessor = "accessor"
	CtxType     = "type"
	CtxName     = "name"
	CtxPolicies = "policies"
	CtxExpires  = "expires"
)

// AuthorizerContext is a token's identity as the authorizer passes it:
// accessor ID, type, name, policies (comma-separated) and expiration time
// (RFC 3339, empty for none).
func AuthorizerContext(tok *structs.ACLToken) map[string]any {
	exp := ""
	if tok.ExpirationTime != nil {
		exp = tok.ExpirationTime.UTC().Format(time.RFC3339Nano)
	}
	return map[string]any{CtxAccessor: tok.AccessorID, CtxType: tok.Type, CtxName: tok.Name,
		CtxPolicies: strings.Join(tok.Policies, ","), CtxExpires: exp}
}

// ContextToken reads back what AuthorizerContext wrote: the token as the
// authorizer saw it (without its secret hash). ok is false when the
// context carries no accessor.
func ContextToken(m map[string]any) (tok *structs.ACLToken, ok bool) {
	str := func(k string) string { s, _ := m[k].(string); return s }
	if str(CtxAccessor) == "" {
		return nil, false
	}
	tok = &structs.ACLToken{AccessorID: str(CtxAccessor), Type: str(CtxType), Name: str(CtxName)}
	if p := str(CtxPolicies); p != "" {
		tok.Policies = strings.Split(p, ",")
	}
	if e := str(CtxExpires); e != "" {
		if t, err := time.Parse(time.RFC3339Nano, e); err == nil {
			tok.ExpirationTime = &t
		}
	}
	return tok, true
}
