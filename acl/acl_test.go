package acl_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/drover-sched/drover/acl"
)

type tokens map[string]*acl.Token

func (t tokens) ACLToken(_ context.Context, hash string) (*acl.Token, error) {
	if tok, ok := t[hash]; ok {
		return tok, nil
	}
	return nil, acl.ErrNoToken
}

type failing struct{}

func (failing) ACLToken(context.Context, string) (*acl.Token, error) {
	return nil, errors.New("table unreachable")
}

// TestAuthorizer: the bootstrap token (given as its hash) and stored
// tokens (looked up by hash) pass; anything else is denied; a lookup
// failure is an error (API Gateway answers 500), not a silent deny.
func TestAuthorizer(t *testing.T) {
	stored := tokens{acl.Hash("ops-token"): {Name: "ops", Type: "management"}}
	a := &acl.Authorizer{Tokens: stored, BootstrapHash: acl.Hash("boot")}
	for secret, want := range map[string]bool{"boot": true, "ops-token": true, "": false, "nope": false, acl.Hash("boot"): false} {
		resp, err := a.Authorize(context.Background(), events.APIGatewayV2CustomAuthorizerV2Request{Headers: map[string]string{"x-nomad-token": secret}})
		if err != nil || resp.IsAuthorized != want {
			t.Errorf("token %q: authorized %v (%v), want %v", secret, resp.IsAuthorized, err, want)
		}
	}
	if len(acl.Hash("x")) != 64 {
		t.Fatal("hash is hex SHA-256")
	}
	a.Tokens = failing{}
	if _, err := a.Authorize(context.Background(), events.APIGatewayV2CustomAuthorizerV2Request{Headers: map[string]string{"X-Nomad-Token": "other"}}); err == nil {
		t.Fatal("a failed lookup must be an error")
	}
}
