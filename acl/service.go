package acl

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Errors of token resolution and permission checks, with Nomad's messages
// (its HTTP API answers them 403).
var (
	// ErrPermissionDenied: the identity may not do what it asked.
	ErrPermissionDenied = errors.New("Permission denied")
	// ErrTokenNotFound: the request's secret is no token's.
	ErrTokenNotFound = errors.New("ACL token not found")
	// ErrTokenExpired: the token's expiration time has passed.
	ErrTokenExpired = errors.New("ACL token expired")
	// ErrDisabled: an ACL route was called on an agent without ACLs
	// (Nomad answers 400 "ACL support disabled").
	ErrDisabled = errors.New("ACL support disabled")
)

// BadRequestError is an ACL request that breaks a rule: Field names the
// field (Name, Rules, Type, Policies, ExpirationTTL, ...) and Err the rule.
// Nothing was written. A policy's rules that do not parse wrap a
// *PolicyError (line and column).
type BadRequestError struct {
	Field string
	Err   error
}

// Error implements error.
func (e *BadRequestError) Error() string {
	if e.Field == "" {
		return e.Err.Error()
	}
	return e.Field + ": " + e.Err.Error()
}

// Unwrap returns the rule broken.
func (e *BadRequestError) Unwrap() error { return e.Err }

func badf(field, format string, args ...any) error {
	return &BadRequestError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Hash is how a secret (a token's SecretID, a node's secret) is stored and
// compared: hex SHA-256.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Store holds ACL tokens and policies (storage.Store implements it; see
// its methods for the contracts). Unknown names and accessors are
// storage.ErrNotFound; a bootstrap that lost a race is storage.ErrConflict.
type Store interface {
	ACLBootstrapIndex(ctx context.Context) (uint64, error)
	ACLBootstrap(ctx context.Context, token *structs.ACLToken, expectIndex uint64) (*structs.ACLToken, error)
	UpsertACLPolicies(ctx context.Context, policies []*structs.ACLPolicy) (uint64, error)
	ACLPolicy(ctx context.Context, name string) (*structs.ACLPolicy, error)
	ACLPolicies(ctx context.Context, prefix string) ([]*structs.ACLPolicy, error)
	DeleteACLPolicies(ctx context.Context, names []string) (uint64, error)
	UpsertACLTokens(ctx context.Context, tokens []*structs.ACLToken) (uint64, error)
	ACLTokenByAccessor(ctx context.Context, accessorID string) (*structs.ACLToken, error)
	ACLTokenBySecretHash(ctx context.Context, hash string) (*structs.ACLToken, error)
	ACLTokens(ctx context.Context, prefix string) ([]*structs.ACLToken, error)
	DeleteACLTokens(ctx context.Context, accessorIDs []string) (uint64, error)
}

// AnonymousPolicy is the policy that applies to requests without a token,
// when it exists (Nomad's anonymous policy).
const AnonymousPolicy = "anonymous"

// AnonymousToken is the identity of requests without a token, Nomad's.
func AnonymousToken() *structs.ACLToken {
	return &structs.ACLToken{AccessorID: "anonymous", Name: "Anonymous Token", Type: structs.ACLClientTokenType,
		Policies: []string{AnonymousPolicy}, Global: true}
}

// DeployTokenAccessor is the accessor ID shown for the AWS home's
// bootstrap token, given at deploy as its hash (a management token that is
// not stored in the table).
const DeployTokenAccessor = "deployment-bootstrap"

// Identity is who a request comes from: its token (AnonymousToken without
// one), the secret it presented, and what the token may do.
type Identity struct {
	Token  *structs.ACLToken
	Secret string
	ACL    *ACL
}

// IsManagement reports whether the identity may do everything.
func (i *Identity) IsManagement() bool { return i != nil && i.ACL.IsManagement() }

// HasPolicy reports whether the identity's token lists policy name.
func (i *Identity) HasPolicy(name string) bool {
	return i != nil && i.Token != nil && slices.Contains(i.Token.Policies, name)
}

type identityKey struct{}

// WithIdentity returns ctx carrying the request's identity.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity WithIdentity put in ctx.
func IdentityFrom(ctx context.Context) (*Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(*Identity)
	return id, ok && id != nil
}

// Nomad's bounds on a token's expiration (its default
// acl.token_min_expiration_ttl and token_max_expiration_ttl).
const (
	DefaultMinExpirationTTL = time.Minute
	DefaultMaxExpirationTTL = 24 * time.Hour
)

// Service is ACL tokens and policies with Nomad's rules. The same code
// serves both homes: the embedded server resolves X-Nomad-Token itself
// (Resolve), the AWS home's api function resolves the identity the
// authorizer passed (ResolveAccessor).
type Service struct {
	Store Store
	// BootstrapHash, when set, is the hash of a management token given at
	// deploy (the AWS home's BootstrapTokenHash): it is never stored.
	BootstrapHash string
	// ResetIndex returns the bootstrap reset index an operator set (Nomad's
	// <data-dir>/server/acl-bootstrap-reset file), 0 when none. Nil: no
	// reset mechanism.
	ResetIndex func() uint64
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MinTTL and MaxTTL bound token expirations (defaults Nomad's: 1 min
	// and 24 h).
	MinTTL, MaxTTL time.Duration

	mu    sync.Mutex
	rules map[string]compiledPolicy
}

type compiledPolicy struct {
	modifyIndex uint64
	rules       *Rules
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Resolve returns the identity of a request that presented secret ("" for
// none: the anonymous identity). An unknown secret is ErrTokenNotFound, an
// expired token ErrTokenExpired; a failed lookup is returned as is.
func (s *Service) Resolve(ctx context.Context, secret string) (*Identity, error) {
	if secret == "" {
		return s.IdentityFor(ctx, AnonymousToken(), "")
	}
	h := Hash(secret)
	if s.BootstrapHash != "" && subtle.ConstantTimeCompare([]byte(h), []byte(strings.ToLower(s.BootstrapHash))) == 1 {
		return &Identity{Token: DeployToken(), Secret: secret, ACL: ManagementACL()}, nil
	}
	tok, err := s.Store.ACLTokenBySecretHash(ctx, h)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, ErrTokenNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("look up ACL token: %w", err)
	}
	return s.checkedIdentity(ctx, tok, secret)
}

// ResolveAccessor returns the identity of the token with accessor ID
// accessor, read again from the store (a token deleted since the AWS
// authorizer allowed it is ErrTokenNotFound at once), with the secret the
// request presented.
func (s *Service) ResolveAccessor(ctx context.Context, accessor, secret string) (*Identity, error) {
	tok, err := s.Store.ACLTokenByAccessor(ctx, accessor)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, ErrTokenNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("look up ACL token: %w", err)
	}
	if secret != "" && subtle.ConstantTimeCompare([]byte(Hash(secret)), []byte(tok.SecretHash)) != 1 {
		return nil, ErrTokenNotFound
	}
	return s.checkedIdentity(ctx, tok, secret)
}

// DeployToken is the AWS home's deploy-time bootstrap token as the API
// shows it.
func DeployToken() *structs.ACLToken {
	return &structs.ACLToken{AccessorID: DeployTokenAccessor, Name: "Bootstrap Token (deployment parameter)",
		Type: structs.ACLManagementTokenType, Global: true}
}

func (s *Service) checkedIdentity(ctx context.Context, tok *structs.ACLToken, secret string) (*Identity, error) {
	if tok.IsExpired(s.now()) {
		return nil, ErrTokenExpired
	}
	return s.IdentityFor(ctx, tok, secret)
}

// IdentityFor compiles a token's policies into its identity. Policies that
// do not exist grant nothing, as in Nomad.
func (s *Service) IdentityFor(ctx context.Context, tok *structs.ACLToken, secret string) (*Identity, error) {
	if tok.IsManagement() {
		return &Identity{Token: tok, Secret: secret, ACL: ManagementACL()}, nil
	}
	var rules []*Rules
	for _, name := range tok.Policies {
		p, err := s.Store.ACLPolicy(ctx, name)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read ACL policy %s: %w", name, err)
		}
		r, err := s.compiled(p)
		if err != nil {
			return nil, fmt.Errorf("ACL policy %s: %w", name, err)
		}
		rules = append(rules, r)
	}
	return &Identity{Token: tok, Secret: secret, ACL: Compile(rules)}, nil
}

// compiled parses a stored policy's rules, once per modify index.
func (s *Service) compiled(p *structs.ACLPolicy) (*Rules, error) {
	s.mu.Lock()
	c, ok := s.rules[p.Name]
	s.mu.Unlock()
	if ok && c.modifyIndex == p.ModifyIndex {
		return c.rules, nil
	}
	r, err := ParseRules(p.Rules)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.rules == nil {
		s.rules = map[string]compiledPolicy{}
	}
	s.rules[p.Name] = compiledPolicy{modifyIndex: p.ModifyIndex, rules: r}
	s.mu.Unlock()
	return r, nil
}

// Bootstrap creates the initial management token, once, as Nomad's ACL
// bootstrap: again only when the operator set the reset index (ResetIndex)
// to the index of the last bootstrap, which the refusal names. secret, when
// given, is the new token's SecretID (a UUID, as Nomad requires); else one
// is generated. The token is returned with its SecretID (shown only now).
func (s *Service) Bootstrap(ctx context.Context, secret string) (*structs.ACLToken, string, error) {
	if secret != "" {
		if _, err := uuid.Parse(secret); err != nil {
			return nil, "", badf("BootstrapSecret", "invalid acl token: the secret must be a UUID")
		}
	} else {
		secret = uuid.NewString()
	}
	idx, err := s.Store.ACLBootstrapIndex(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("read ACL bootstrap state: %w", err)
	}
	if idx != 0 {
		var reset uint64
		if s.ResetIndex != nil {
			reset = s.ResetIndex()
		}
		switch {
		case reset == 0:
			return nil, "", badf("", "ACL bootstrap already done (reset index: %d)", idx)
		case reset != idx:
			return nil, "", badf("", "Invalid bootstrap reset index (specified %d, reset index: %d)", reset, idx)
		}
	}
	tok := &structs.ACLToken{AccessorID: uuid.NewString(), SecretHash: Hash(secret), Name: "Bootstrap Token",
		Type: structs.ACLManagementTokenType, Global: true, CreateTime: s.now()}
	out, err := s.Store.ACLBootstrap(ctx, tok, idx)
	if errors.Is(err, storage.ErrConflict) {
		return nil, "", badf("", "ACL bootstrap already done (another bootstrap won the race)")
	}
	if err != nil {
		return nil, "", fmt.Errorf("bootstrap ACLs: %w", err)
	}
	return out, secret, nil
}

var validPolicyName = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)

// maxDescription is Nomad's bound on a policy's description.
const maxDescription = 256

// maxTokenName is Nomad's bound on a token's name.
const maxTokenName = 256

// UpsertPolicy creates or replaces a policy (management only), after
// checking its name, description and rules.
func (s *Service) UpsertPolicy(ctx context.Context, caller *Identity, p *structs.ACLPolicy) (uint64, error) {
	if !caller.IsManagement() {
		return 0, ErrPermissionDenied
	}
	if !validPolicyName.MatchString(p.Name) {
		return 0, badf("Name", "%q is not a valid policy name: 1 to 128 letters, digits and '-'", p.Name)
	}
	if len(p.Description) > maxDescription {
		return 0, badf("Description", "longer than %d characters", maxDescription)
	}
	if _, err := ParseRules(p.Rules); err != nil {
		return 0, &BadRequestError{Field: "Rules", Err: err}
	}
	idx, err := s.Store.UpsertACLPolicies(ctx, []*structs.ACLPolicy{p})
	if err != nil {
		return 0, fmt.Errorf("write ACL policy %s: %w", p.Name, err)
	}
	return idx, nil
}

// DeletePolicy removes a policy (management only); ErrNotFound if absent.
func (s *Service) DeletePolicy(ctx context.Context, caller *Identity, name string) (uint64, error) {
	if !caller.IsManagement() {
		return 0, ErrPermissionDenied
	}
	return s.Store.DeleteACLPolicies(ctx, []string{name})
}

// Policy returns a policy to a management token, to a token that lists
// it, and the anonymous policy to anyone, as Nomad.
func (s *Service) Policy(ctx context.Context, caller *Identity, name string) (*structs.ACLPolicy, error) {
	if name != AnonymousPolicy && !caller.IsManagement() && !caller.HasPolicy(name) {
		return nil, ErrPermissionDenied
	}
	return s.Store.ACLPolicy(ctx, name)
}

// Policies lists the policies (by name prefix) a caller may read: all for
// a management token, else the token's own.
func (s *Service) Policies(ctx context.Context, caller *Identity, prefix string) ([]*structs.ACLPolicy, error) {
	all, err := s.Store.ACLPolicies(ctx, prefix)
	if err != nil || caller.IsManagement() {
		return all, err
	}
	out := all[:0:0]
	for _, p := range all {
		if caller.HasPolicy(p.Name) {
			out = append(out, p)
		}
	}
	return out, nil
}

// TokenSpec is a token as a create or update request gives it (Nomad's
// ACLToken fields a client sets).
type TokenSpec struct {
	AccessorID     string
	Name           string
	Type           string
	Policies       []string
	Roles          []string
	Global         bool
	ExpirationTime *time.Time
	ExpirationTTL  time.Duration
}

// CreateToken creates a client or management token (management only) and
// returns it with its new SecretID, shown only now.
func (s *Service) CreateToken(ctx context.Context, caller *Identity, spec *TokenSpec) (*structs.ACLToken, string, error) {
	if !caller.IsManagement() {
		return nil, "", ErrPermissionDenied
	}
	if spec.AccessorID != "" {
		return nil, "", badf("AccessorID", "must be empty when creating a token (it is generated)")
	}
	if spec.Type == "" {
		spec.Type = structs.ACLClientTokenType
	}
	secret := uuid.NewString()
	tok := &structs.ACLToken{AccessorID: uuid.NewString(), SecretHash: Hash(secret), Name: spec.Name, Type: spec.Type,
		Policies: dedupe(spec.Policies), Global: spec.Global, CreateTime: s.now(), ExpirationTTL: spec.ExpirationTTL}
	if spec.ExpirationTime != nil {
		t := spec.ExpirationTime.UTC()
		tok.ExpirationTime = &t
	} else if spec.ExpirationTTL != 0 {
		t := tok.CreateTime.Add(spec.ExpirationTTL)
		tok.ExpirationTime = &t
	}
	if err := s.validateToken(tok, spec, nil); err != nil {
		return nil, "", err
	}
	if _, err := s.Store.UpsertACLTokens(ctx, []*structs.ACLToken{tok}); err != nil {
		return nil, "", fmt.Errorf("write ACL token: %w", err)
	}
	out, err := s.Store.ACLTokenByAccessor(ctx, tok.AccessorID)
	if err != nil {
		return nil, "", fmt.Errorf("read back ACL token: %w", err)
	}
	return out, secret, nil
}

// UpdateToken changes a token's name, type and policies (management
// only); its expiration and global flag cannot change, as in Nomad.
func (s *Service) UpdateToken(ctx context.Context, caller *Identity, spec *TokenSpec) (*structs.ACLToken, error) {
	if !caller.IsManagement() {
		return nil, ErrPermissionDenied
	}
	old, err := s.Store.ACLTokenByAccessor(ctx, spec.AccessorID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, badf("AccessorID", "cannot find token %s", spec.AccessorID)
	}
	if err != nil {
		return nil, err
	}
	tok := old.Copy()
	tok.Name, tok.Type, tok.Policies = spec.Name, spec.Type, dedupe(spec.Policies)
	if tok.Type == "" {
		tok.Type = old.Type
	}
	if err := s.validateToken(tok, spec, old); err != nil {
		return nil, err
	}
	if _, err := s.Store.UpsertACLTokens(ctx, []*structs.ACLToken{tok}); err != nil {
		return nil, fmt.Errorf("write ACL token %s: %w", tok.AccessorID, err)
	}
	return s.Store.ACLTokenByAccessor(ctx, tok.AccessorID)
}

func (s *Service) validateToken(tok *structs.ACLToken, spec *TokenSpec, old *structs.ACLToken) error {
	if len(tok.Name) > maxTokenName {
		return badf("Name", "longer than %d characters", maxTokenName)
	}
	if len(spec.Roles) > 0 {
		return badf("Roles", "drover has no ACL roles; list the token's policies in Policies")
	}
	switch tok.Type {
	case structs.ACLClientTokenType:
		if len(tok.Policies) == 0 {
			return badf("Policies", "a client token needs at least one policy")
		}
	case structs.ACLManagementTokenType:
		if len(tok.Policies) != 0 {
			return badf("Policies", "a management token cannot have policies (it may do everything)")
		}
	default:
		return badf("Type", "%q is not a token type: client or management", tok.Type)
	}
	for _, p := range tok.Policies {
		if !validPolicyName.MatchString(p) {
			return badf("Policies", "%q is not a valid policy name", p)
		}
	}
	if old != nil {
		switch {
		case spec.Global != old.Global:
			return badf("Global", "cannot be changed on an existing token")
		case spec.ExpirationTTL != old.ExpirationTTL:
			return badf("ExpirationTTL", "cannot be changed on an existing token")
		case spec.ExpirationTime != nil && (old.ExpirationTime == nil || !spec.ExpirationTime.Equal(*old.ExpirationTime)):
			return badf("ExpirationTime", "cannot be changed on an existing token")
		}
		return nil
	}
	if tok.ExpirationTTL < 0 {
		return badf("ExpirationTTL", "%s is negative", tok.ExpirationTTL)
	}
	if tok.ExpirationTime != nil {
		minTTL, maxTTL := s.MinTTL, s.MaxTTL
		if minTTL == 0 {
			minTTL = DefaultMinExpirationTTL
		}
		if maxTTL == 0 {
			maxTTL = DefaultMaxExpirationTTL
		}
		field := "ExpirationTime"
		if spec.ExpirationTime == nil {
			field = "ExpirationTTL"
		}
		in := tok.ExpirationTime.Sub(tok.CreateTime)
		switch {
		case in < 0:
			return badf(field, "the expiration time is before the creation time")
		case in > maxTTL:
			return badf(field, "expiration cannot be more than %s in the future (was %s)", maxTTL, in.Round(time.Second))
		case in < minTTL:
			return badf(field, "expiration cannot be less than %s in the future (was %s)", minTTL, in.Round(time.Second))
		}
	}
	return nil
}

func dedupe(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Token returns a token to a management token or to the token itself
// (Nomad: a token may read its own accessor).
func (s *Service) Token(ctx context.Context, caller *Identity, accessor string) (*structs.ACLToken, error) {
	if !caller.IsManagement() && (caller == nil || caller.Token == nil || caller.Token.AccessorID != accessor) {
		return nil, ErrPermissionDenied
	}
	return s.Store.ACLTokenByAccessor(ctx, accessor)
}

// Tokens lists tokens by accessor prefix (management only).
func (s *Service) Tokens(ctx context.Context, caller *Identity, prefix string) ([]*structs.ACLToken, error) {
	if !caller.IsManagement() {
		return nil, ErrPermissionDenied
	}
	return s.Store.ACLTokens(ctx, prefix)
}

// DeleteToken revokes a token (management only): requests with its secret
// fail at once. ErrNotFound if absent.
func (s *Service) DeleteToken(ctx context.Context, caller *Identity, accessor string) (uint64, error) {
	if !caller.IsManagement() {
		return 0, ErrPermissionDenied
	}
	return s.Store.DeleteACLTokens(ctx, []string{accessor})
}

// SecretOf returns the secret a request presents: X-Nomad-Token, else an
// "Authorization: Bearer" header, as Nomad's HTTP API reads them.
func SecretOf(r *http.Request) string {
	if s := r.Header.Get("X-Nomad-Token"); s != "" {
		return s
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	return ""
}

// Identify resolves the request's secret (SecretOf), as the embedded
// server does for every request.
func (s *Service) Identify(r *http.Request) (*Identity, error) {
	return s.Resolve(r.Context(), SecretOf(r))
}
