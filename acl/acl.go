// Package acl checks Nomad's X-Nomad-Token on the AWS home: tokens are
// stored hashed (SHA-256 of the secret; the secret itself is never
// stored), and the bootstrap token is given at deploy time as its hash.
// The API Gateway Lambda authorizer (functions/authorizer) calls
// Authorizer.Authorize.
package acl

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"go.uber.org/zap"
)

// Hash is how a token secret is stored and compared: hex SHA-256.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Token is a stored ACL token (its secret's hash, never the secret).
type Token struct {
	Hash string
	Name string
	// Type is "management" (drover has no policies yet: every valid token
	// may do everything, as Nomad's management tokens).
	Type string
}

// ErrNoToken is returned by a TokenStore for an unknown hash.
var ErrNoToken = errors.New("acl: no such token")

// TokenStore looks tokens up by hash (storage/dynamodb).
type TokenStore interface {
	ACLToken(ctx context.Context, hash string) (*Token, error)
}

// Authorizer decides API Gateway authorizer requests.
type Authorizer struct {
	Tokens TokenStore
	// BootstrapHash is the hash of the token given at deploy (may be
	// empty).
	BootstrapHash string
	Logger        *zap.Logger
}

// Check reports whether secret is a valid token, and its name.
func (a *Authorizer) Check(ctx context.Context, secret string) (bool, string, error) {
	if secret == "" {
		return false, "", nil
	}
	h := Hash(secret)
	if a.BootstrapHash != "" && subtle.ConstantTimeCompare([]byte(h), []byte(strings.ToLower(a.BootstrapHash))) == 1 {
		return true, "bootstrap", nil
	}
	if a.Tokens == nil {
		return false, "", nil
	}
	tok, err := a.Tokens.ACLToken(ctx, h)
	if errors.Is(err, ErrNoToken) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	return true, tok.Name, nil
}

// Authorize is the HTTP API Lambda authorizer (payload 2.0, simple
// responses): it reads X-Nomad-Token and allows the request only for a
// valid token. An error makes API Gateway answer 500, so lookup failures
// are returned, not hidden as a deny.
func (a *Authorizer) Authorize(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
	secret := ""
	for k, v := range req.Headers {
		if strings.EqualFold(k, "X-Nomad-Token") {
			secret = v
		}
	}
	ok, name, err := a.Check(ctx, secret)
	if err != nil {
		return events.APIGatewayV2CustomAuthorizerSimpleResponse{}, err
	}
	if a.Logger != nil && !ok {
		a.Logger.Info("request denied: missing or unknown X-Nomad-Token", zap.String("route", req.RouteKey))
	}
	resp := events.APIGatewayV2CustomAuthorizerSimpleResponse{IsAuthorized: ok}
	if ok {
		resp.Context = map[string]any{"token": name}
	}
	return resp, nil
}
