package acl_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/drover-sched/drover/acl"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/storage/embedded"
	"github.com/drover-sched/drover/structs"
)

var ctx = context.Background()

func newService(t *testing.T) (*acl.Service, *embedded.Store) {
	t.Helper()
	s, err := embedded.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &acl.Service{Store: s}, s
}

func badField(t *testing.T, err error, field, substr string) {
	t.Helper()
	var bad *acl.BadRequestError
	if !errors.As(err, &bad) || bad.Field != field || !strings.Contains(err.Error(), substr) {
		t.Fatalf("want a bad request on %s (%q), got %v", field, substr, err)
	}
}

// TestBootstrapOnceAndReset: the first bootstrap creates a management
// token whose secret is shown once and stored only hashed; a second is
// refused naming the reset index; the reset index lets one more through.
func TestBootstrapOnceAndReset(t *testing.T) {
	svc, store := newService(t)
	var reset uint64
	svc.ResetIndex = func() uint64 { return reset }
	tok, secret, err := svc.Bootstrap(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !tok.IsManagement() || secret == "" || tok.SecretHash != acl.Hash(secret) || strings.Contains(tok.SecretHash, secret) {
		t.Fatalf("bootstrap token: %+v", tok)
	}
	id, err := svc.Resolve(ctx, secret)
	if err != nil || !id.IsManagement() || id.Token.AccessorID != tok.AccessorID {
		t.Fatalf("the bootstrap secret resolves to %+v, %v", id, err)
	}
	idx, _ := store.ACLBootstrapIndex(ctx)
	_, _, err = svc.Bootstrap(ctx, "")
	badField(t, err, "", "ACL bootstrap already done (reset index: ")
	if !strings.Contains(err.Error(), "reset index: "+itoa(idx)) {
		t.Fatalf("the refusal names index %d: %v", idx, err)
	}
	reset = idx + 7
	_, _, err = svc.Bootstrap(ctx, "")
	badField(t, err, "", "Invalid bootstrap reset index (specified "+itoa(idx+7))
	reset = idx
	chosen := "0f9a1a4e-2a0b-4b7e-9b5f-1b2c3d4e5f60"
	tok2, secret2, err := svc.Bootstrap(ctx, chosen)
	if err != nil || secret2 != chosen || tok2.AccessorID == tok.AccessorID {
		t.Fatalf("bootstrap after the reset: %+v %q %v", tok2, secret2, err)
	}
	// The reset index is used up: the same file allows no third one.
	_, _, err = svc.Bootstrap(ctx, "")
	badField(t, err, "", "Invalid bootstrap reset index")
	_, _, err = svc.Bootstrap(ctx, "not-a-uuid")
	badField(t, err, "BootstrapSecret", "must be a UUID")
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// TestTokensAndPolicies: management writes policies and tokens; a client
// token resolves to its policies' rights, sees only its own policies and
// token, and can do nothing else; revoked and expired tokens stop at once;
// bad input names the field and changes nothing.
func TestTokensAndPolicies(t *testing.T) {
	svc, store := newService(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	svc.Now = func() time.Time { return now }
	root := &acl.Identity{Token: &structs.ACLToken{Type: structs.ACLManagementTokenType}, ACL: acl.ManagementACL()}

	_, err := svc.UpsertPolicy(ctx, root, &structs.ACLPolicy{Name: "readonly", Rules: "namespace \"*\" {\n  policy = \"reed\"\n}"})
	badField(t, err, "Rules", "line 2, column 12")
	if _, err := store.ACLPolicy(ctx, "readonly"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a refused policy was written: %v", err)
	}
	_, err = svc.UpsertPolicy(ctx, root, &structs.ACLPolicy{Name: "read only", Rules: `node { policy = "read" }`})
	badField(t, err, "Name", "not a valid policy name")
	_, err = svc.UpsertPolicy(ctx, root, &structs.ACLPolicy{Name: "x", Description: strings.Repeat("d", 257), Rules: `node { policy = "read" }`})
	badField(t, err, "Description", "longer than 256")
	for name, rules := range map[string]string{
		"readonly": `namespace "*" { policy = "read" }`, "ops": `node { policy = "write" }`, "other": `agent { policy = "read" }`,
	} {
		if _, err := svc.UpsertPolicy(ctx, root, &structs.ACLPolicy{Name: name, Rules: rules}); err != nil {
			t.Fatal(err)
		}
	}

	tok, secret, err := svc.CreateToken(ctx, root, &acl.TokenSpec{Name: "dash", Policies: []string{"readonly", "ops", "readonly"}, ExpirationTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Type != structs.ACLClientTokenType || len(tok.Policies) != 2 || tok.ExpirationTime == nil || !tok.ExpirationTime.Equal(now.Add(time.Hour)) {
		t.Fatalf("client token: %+v", tok)
	}
	id, err := svc.Resolve(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if !id.ACL.AllowNamespaceOp("anything", acl.CapReadJob) || id.ACL.AllowNamespaceOp("default", acl.CapSubmitJob) || !id.ACL.AllowNodeWrite() || id.IsManagement() {
		t.Fatalf("client token rights: %+v", id.ACL)
	}
	// A client token sees its own policies and token, nothing more.
	ps, err := svc.Policies(ctx, id, "")
	if err != nil || len(ps) != 2 || ps[0].Name != "ops" || ps[1].Name != "readonly" {
		t.Fatalf("a client token's policies: %+v %v", ps, err)
	}
	if _, err := svc.Policy(ctx, id, "other"); !errors.Is(err, acl.ErrPermissionDenied) {
		t.Fatalf("another policy: %v", err)
	}
	if _, err := svc.Token(ctx, id, tok.AccessorID); err != nil {
		t.Fatalf("its own token: %v", err)
	}
	for what, err := range map[string]error{
		"list tokens":  second(svc.Tokens(ctx, id, "")),
		"read root's":  second(svc.Token(ctx, id, "someone-else")),
		"write policy": second(svc.UpsertPolicy(ctx, id, &structs.ACLPolicy{Name: "mine", Rules: `node { policy = "write" }`})),
		"delete token": second(svc.DeleteToken(ctx, id, tok.AccessorID)),
		"create token": func() error { _, _, err := svc.CreateToken(ctx, id, &acl.TokenSpec{Type: "management"}); return err }(),
	} {
		if !errors.Is(err, acl.ErrPermissionDenied) {
			t.Errorf("a client token may %s: %v", what, err)
		}
	}

	// Bad tokens name the field; nothing is written.
	before, _ := store.ACLTokens(ctx, "")
	for field, spec := range map[string]*acl.TokenSpec{
		"Policies":      {Name: "x"},
		"Type":          {Type: "admin", Policies: []string{"ops"}},
		"Roles":         {Policies: []string{"ops"}, Roles: []string{"r"}},
		"ExpirationTTL": {Policies: []string{"ops"}, ExpirationTTL: 48 * time.Hour},
		"Name":          {Name: strings.Repeat("n", 257), Policies: []string{"ops"}},
	} {
		_, _, err := svc.CreateToken(ctx, root, spec)
		badField(t, err, field, "")
	}
	_, _, err = svc.CreateToken(ctx, root, &acl.TokenSpec{Type: structs.ACLManagementTokenType, Policies: []string{"ops"}})
	badField(t, err, "Policies", "a management token cannot have policies")
	short := now.Add(10 * time.Second)
	_, _, err = svc.CreateToken(ctx, root, &acl.TokenSpec{Policies: []string{"ops"}, ExpirationTime: &short})
	badField(t, err, "ExpirationTime", "less than 1m0s")
	after, _ := store.ACLTokens(ctx, "")
	if len(after) != len(before) {
		t.Fatalf("refused tokens were written: %d → %d", len(before), len(after))
	}

	// Updates change name, type and policies, never the expiration.
	_, err = svc.UpdateToken(ctx, root, &acl.TokenSpec{AccessorID: tok.AccessorID, Policies: []string{"ops"}, ExpirationTTL: 2 * time.Hour})
	badField(t, err, "ExpirationTTL", "cannot be changed")
	upd, err := svc.UpdateToken(ctx, root, &acl.TokenSpec{AccessorID: tok.AccessorID, Name: "dash2", Policies: []string{"other"}, ExpirationTTL: time.Hour})
	if err != nil || upd.Name != "dash2" || upd.SecretHash != tok.SecretHash {
		t.Fatalf("update: %+v %v", upd, err)
	}
	if id, _ = svc.Resolve(ctx, secret); id.ACL.AllowNodeRead() || !id.ACL.AllowAgentRead() {
		t.Fatal("an update's new policies do not apply at once")
	}

	// Expired and revoked tokens stop working.
	now = now.Add(2 * time.Hour)
	if _, err := svc.Resolve(ctx, secret); !errors.Is(err, acl.ErrTokenExpired) {
		t.Fatalf("expired token: %v", err)
	}
	now = now.Add(-2 * time.Hour)
	if _, err := svc.DeleteToken(ctx, root, tok.AccessorID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Resolve(ctx, secret); !errors.Is(err, acl.ErrTokenNotFound) {
		t.Fatalf("revoked token: %v", err)
	}
	if _, err := svc.ResolveAccessor(ctx, tok.AccessorID, secret); !errors.Is(err, acl.ErrTokenNotFound) {
		t.Fatalf("revoked token by accessor: %v", err)
	}
	if _, err := svc.Resolve(ctx, "no-such-secret"); !errors.Is(err, acl.ErrTokenNotFound) {
		t.Fatalf("unknown secret: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

// TestAnonymous: without a token the anonymous policy applies when it
// exists; without it nothing is allowed.
func TestAnonymous(t *testing.T) {
	svc, _ := newService(t)
	id, err := svc.Resolve(ctx, "")
	if err != nil || id.Token.AccessorID != "anonymous" || id.ACL.AllowNamespaceOp("default", acl.CapListJobs) {
		t.Fatalf("anonymous without a policy: %+v %v", id, err)
	}
	root := &acl.Identity{ACL: acl.ManagementACL()}
	if _, err := svc.UpsertPolicy(ctx, root, &structs.ACLPolicy{Name: acl.AnonymousPolicy, Rules: `namespace "default" { policy = "read" }`}); err != nil {
		t.Fatal(err)
	}
	id, _ = svc.Resolve(ctx, "")
	if !id.ACL.AllowNamespaceOp("default", acl.CapListJobs) || id.ACL.AllowNamespaceOp("default", acl.CapSubmitJob) {
		t.Fatal("the anonymous policy does not apply to requests without a token")
	}
	if p, err := svc.Policy(ctx, &acl.Identity{ACL: acl.Compile(nil)}, acl.AnonymousPolicy); err != nil || p.Name != acl.AnonymousPolicy {
		t.Fatalf("anyone may read the anonymous policy: %v", err)
	}
}

// TestAuthorizer: the AWS authorizer passes a stored token's identity
// (accessor, type, policies, expiry) and the deploy-time bootstrap token
// as management; unknown, missing and expired tokens are denied; a
// failed lookup is an error (API Gateway answers 500), not a silent deny.
func TestAuthorizer(t *testing.T) {
	svc, store := newService(t)
	root := &acl.Identity{ACL: acl.ManagementACL()}
	tok, secret, err := svc.CreateToken(ctx, root, &acl.TokenSpec{Name: "ci", Policies: []string{"a", "b"}, ExpirationTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a := &acl.Authorizer{Tokens: store, BootstrapHash: acl.Hash("boot"), Now: func() time.Time { return now }}
	ask := func(secret string) events.APIGatewayV2CustomAuthorizerSimpleResponse {
		t.Helper()
		resp, err := a.Authorize(ctx, events.APIGatewayV2CustomAuthorizerV2Request{Headers: map[string]string{"x-nomad-token": secret}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := ask(secret)
	got, ok := acl.ContextToken(resp.Context)
	if !resp.IsAuthorized || !ok || got.AccessorID != tok.AccessorID || got.Type != "client" || strings.Join(got.Policies, ",") != "a,b" ||
		got.ExpirationTime == nil || !got.ExpirationTime.Equal(*tok.ExpirationTime) {
		t.Fatalf("stored token: %+v → %+v", resp, got)
	}
	if resp := ask("boot"); !resp.IsAuthorized || resp.Context[acl.CtxType] != "management" || resp.Context[acl.CtxAccessor] != acl.DeployTokenAccessor {
		t.Fatalf("bootstrap token: %+v", resp)
	}
	for _, bad := range []string{"", "nope", acl.Hash("boot")} {
		if ask(bad).IsAuthorized {
			t.Errorf("token %q authorized", bad)
		}
	}
	now = now.Add(2 * time.Hour)
	if ask(secret).IsAuthorized {
		t.Error("an expired token is authorized")
	}
	a.Tokens = failing{}
	if _, err := a.Authorize(ctx, events.APIGatewayV2CustomAuthorizerV2Request{Headers: map[string]string{"X-Nomad-Token": "other"}}); err == nil {
		t.Fatal("a failed lookup must be an error")
	}
}

type failing struct{}

func (failing) ACLTokenBySecretHash(context.Context, string) (*structs.ACLToken, error) {
	return nil, errors.New("table unreachable")
}
