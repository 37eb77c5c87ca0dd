package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/drover-sched/drover/acl"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// Nomad's ACL routes: /v1/acl/bootstrap, policies and tokens. Secrets are
// stored only hashed, so a token's SecretID is in the answer when it is
// created (and bootstrapped), and when the token reads itself (the caller
// presented it); a management token reading another token gets an empty
// SecretID (Nomad shows it: drover cannot).

// ACLTokenResponse is Nomad's ACLToken as the API answers it.
type ACLTokenResponse struct {
	AccessorID     string
	SecretID       string
	Name           string
	Type           string
	Policies       []string
	Roles          []json.RawMessage
	Global         bool
	CreateTime     time.Time
	ExpirationTime *time.Time `json:",omitempty"`
	ExpirationTTL  TTL        `json:",omitempty"`
	CreateIndex    uint64
	ModifyIndex    uint64
}

// TTL is a token's ExpirationTTL on the wire: a Go duration string
// ("1h0m0s"), as Nomad writes it; a number of nanoseconds is read too.
type TTL time.Duration

// MarshalJSON implements json.Marshaler.
func (d TTL) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *TTL) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case string:
		if v == "" {
			*d = 0
			return nil
		}
		p, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("ExpirationTTL: %q is not a duration such as 8h or 30m", v)
		}
		*d = TTL(p)
	case float64:
		*d = TTL(v)
	case nil:
		*d = 0
	default:
		return fmt.Errorf("ExpirationTTL: want a duration such as \"8h\"")
	}
	return nil
}

// ACLTokenListStub is a token in GET /v1/acl/tokens, Nomad's shape.
type ACLTokenListStub struct {
	AccessorID     string
	Name           string
	Type           string
	Policies       []string
	Roles          []json.RawMessage
	Global         bool
	CreateTime     time.Time
	ExpirationTime *time.Time `json:",omitempty"`
	CreateIndex    uint64
	ModifyIndex    uint64
}

// ACLTokenRequest is the body of a token create or update, as Nomad's
// client sends it (other fields it sends are ignored).
type ACLTokenRequest struct {
	AccessorID     string
	Name           string
	Type           string
	Policies       []string
	Roles          []json.RawMessage
	Global         bool
	ExpirationTime *time.Time
	ExpirationTTL  TTL
}

// ACLPolicyRequest is the body of PUT /v1/acl/policy/:name (Nomad's
// ACLPolicy).
type ACLPolicyRequest struct {
	Name        string
	Description string
	Rules       string
	JobACL      json.RawMessage
}

// ACLPolicyListStub is a policy in GET /v1/acl/policies, Nomad's shape.
type ACLPolicyListStub struct {
	Name        string
	Description string
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLBootstrapRequest is the optional body of POST /v1/acl/bootstrap: the
// operator's own secret for the bootstrap token (a UUID).
type ACLBootstrapRequest struct {
	BootstrapSecret string
}

func (s *Server) aclRoutes() {
	m := s.mux
	for _, method := range []string{"PUT", "POST"} {
		m.HandleFunc(method+" /v1/acl/bootstrap", s.aclBootstrap)
		m.HandleFunc(method+" /v1/acl/policy/{name}", s.aclPutPolicy)
		m.HandleFunc(method+" /v1/acl/token", s.aclCreateToken)
		m.HandleFunc(method+" /v1/acl/token/{accessor}", s.aclUpdateToken)
	}
	m.HandleFunc("GET /v1/acl/policies", s.aclListPolicies)
	m.HandleFunc("GET /v1/acl/policy/{name}", s.aclGetPolicy)
	m.HandleFunc("DELETE /v1/acl/policy/{name}", s.aclDeletePolicy)
	m.HandleFunc("GET /v1/acl/tokens", s.aclListTokens)
	m.HandleFunc("GET /v1/acl/token/self", s.aclTokenSelf)
	m.HandleFunc("GET /v1/acl/token/{accessor}", s.aclGetToken)
	m.HandleFunc("DELETE /v1/acl/token/{accessor}", s.aclDeleteToken)
}

// aclCaller is the identity the guard resolved, or ErrDisabled without
// ACLs.
func (s *Server) aclCaller(r *http.Request) (*acl.Identity, error) {
	if s.cfg.ACL == nil {
		return nil, acl.ErrDisabled
	}
	if id, ok := acl.IdentityFrom(r.Context()); ok {
		return id, nil
	}
	return s.cfg.ACL.Identify(r)
}

// maxACLBody bounds ACL request bodies (a policy's rules).
const maxACLBody = 1 << 20

func decodeACLBody(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxACLBody+1))
	if err != nil {
		return badRequestf("read request body: %v", err)
	}
	if len(body) > maxACLBody {
		return badRequestf("request body: larger than %d bytes", maxACLBody)
	}
	if len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequestf("decode request body: %v", err)
	}
	return nil
}

func tokenResponse(t *structs.ACLToken, secret string) *ACLTokenResponse {
	return &ACLTokenResponse{AccessorID: t.AccessorID, SecretID: secret, Name: t.Name, Type: t.Type,
		Policies: nonNil(t.Policies), Roles: []json.RawMessage{}, Global: t.Global, CreateTime: t.CreateTime,
		ExpirationTime: t.ExpirationTime, ExpirationTTL: TTL(t.ExpirationTTL), CreateIndex: t.CreateIndex, ModifyIndex: t.ModifyIndex}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) aclBootstrap(w http.ResponseWriter, r *http.Request) {
	if s.cfg.ACL == nil {
		s.fail(w, r, acl.ErrDisabled)
		return
	}
	var req ACLBootstrapRequest
	if err := decodeACLBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	tok, secret, err := s.cfg.ACL.Bootstrap(r.Context(), req.BootstrapSecret)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, tok.ModifyIndex)
	writeJSON(w, r, http.StatusOK, tokenResponse(tok, secret))
}

func (s *Server) aclPutPolicy(w http.ResponseWriter, r *http.Request) {
	caller, err := s.aclCaller(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req ACLPolicyRequest
	if err := decodeACLBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case req.Name != r.PathValue("name"):
		s.fail(w, r, badRequestf("Name: ACL policy name %q does not match request path %q", req.Name, r.PathValue("name")))
		return
	case len(req.JobACL) > 0 && string(req.JobACL) != "null":
		s.fail(w, r, badRequestf("JobACL: drover has no workload identities; remove JobACL"))
		return
	}
	idx, err := s.cfg.ACL.UpsertPolicy(r.Context(), caller, &structs.ACLPolicy{Name: req.Name, Description: req.Description, Rules: req.Rules})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, idx)
	w.WriteHeader(http.StatusOK)
}

func (s *Server) aclDeletePolicy(w http.ResponseWriter, r *http.Request) {
	caller, err := s.aclCaller(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	idx, err := s.cfg.ACL.DeletePolicy(r.Context(), caller, r.PathValue("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, idx)
	w.WriteHeader(http.StatusOK)
}

func (s *Server) aclGetPolicy(w http.ResponseWriter, r *http.Request) {
	caller, err := s.aclCaller(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableACLPolicies}, func(ctx context.Context) (any, error) {
		return s.cfg.ACL.Policy(ctx, caller, r.PathValue("name"))
	})
}

func (s *Server) aclListPolicies(w http.ResponseWriter, r *http.Request) {
	caller, err := s.aclCaller(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableACLPolicies}, func(ctx context.Context) (any, error) {
		ps, err := s.cfg.ACL.Policies(ctx, caller, r.URL.Query().Get("prefix"))
		if err != nil {
			return nil, err
		}
		out := make([]*ACLPolicyListStub, 0, len(ps))
		for _, p := range ps {
			out = append(out, &ACLPolicyListStub{Name: p.Name, Description: p.Description, CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex})
		}
		return out, nil
	})
}

func (s *Server) tokenSpec(r *http.Request) (*acl.TokenSpec, error) {
	var req ACLTokenRequest
	if err := decodeACLBody(r, &req); err != nil {
		return nil, err
	}
	spec := &acl.TokenSpec{AccessorID: req.AccessorID, Name: req.Name, Type: req.Type, Policies: req.Policies,
		Global: req.Global, ExpirationTime: req.ExpirationTime, ExpirationTTL: time.Duration(req.ExpirationTTL)}
	for _, role := range req.Roles {
		if string(role) != "null" {
			spec.Roles = append(spec.Roles, string(role))
		}
	}
	return spec, nil
}

func (s *Server) aclCreateToken(w http.ResponseWriter, r *http.Request) {
	caller, err := s.aclCaller(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	spec, err := s.tokenSpec(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tok, secret, err := s.cfg.ACL.CreateToken(r.Context(), caller, spec)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, tok.ModifyIndex)
	writeJSON(w, r, http.StatusOK, tokenResponse(tok, secret))
}

func (s *Server) aclUpdateToken(w http.ResponseWriter, r *http.Request) {
	caller, err := s.aclCaller(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	spec, err := s.tokenSpec(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if spec.AccessorID != r.PathValue("accessor") {
		s.fail(w, r, badRequestf("AccessorID: ACL token accessor %q does not match request path %q", spec.AccessorID, r.PathValue("accessor")))
		return
	}
	tok, err := s.cfg.ACL.UpdateToken(r.Context(), caller, spec)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, tok.ModifyIndex)
	writeJSON(w, r, http.StatusOK, tokenResponse(tok, ownSecret(caller, tok)))
}

// ownSecret is the SecretID the answer may carry: the caller's own,
// which it presented.
func ownSecret(caller *acl.Identity, tok *structs.ACLToken) string {
	if caller != nil && caller.Token != nil && caller.Token.AccessorID == tok.AccessorID {
		return caller.Secret
	}
	return ""
}

func (s *Server) aclGetToken(w http.ResponseWriter, r *http.Request) {
	caller, err := s.aclCaller(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableACLTokens}, func(ctx context.Context) (any, error) {
		tok, err := s.cfg.ACL.Token(ctx, caller, r.PathValue("accessor"))
		if errors.Is(err, storage.ErrNotFound) {
			return nil, storage.NotFoundf("ACL token not found")
		}
		if err != nil {
			return nil, err
		}
		return tokenResponse(tok, ownSecret(caller, tok)), nil
	})
}

// aclTokenSelf answers GET /v1/acl/token/self: the caller's token (the
// anonymous token without one), with the secret it presented.
func (s *Server) aclTokenSelf(w http.ResponseWriter, r *http.Request) {
	caller, err := s.aclCaller(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableACLTokens}, func(ctx context.Context) (any, error) {
		return tokenResponse(caller.Token, caller.Secret), nil
	})
}

func (s *Server) aclListTokens(w http.ResponseWriter, r *http.Request) {
	caller, err := s.aclCaller(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	o, err := parsePageOptions(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.query(w, r, []string{storage.TableACLTokens}, func(ctx context.Context) (any, error) {
		toks, err := s.cfg.ACL.Tokens(ctx, caller, r.URL.Query().Get("prefix"))
		if err != nil {
			return nil, err
		}
		stubs := make([]*ACLTokenListStub, 0, len(toks))
		for _, t := range toks {
			stubs = append(stubs, &ACLTokenListStub{AccessorID: t.AccessorID, Name: t.Name, Type: t.Type, Policies: nonNil(t.Policies),
				Roles: []json.RawMessage{}, Global: t.Global, CreateTime: t.CreateTime, ExpirationTime: t.ExpirationTime,
				CreateIndex: t.CreateIndex, ModifyIndex: t.ModifyIndex})
		}
		page, next, err := paginate(stubs, o, func(t *ACLTokenListStub) pageKey { return indexKey(t.CreateIndex, t.AccessorID) }, false)
		return &listPage{items: page, next: next}, err
	})
}

func (s *Server) aclDeleteToken(w http.ResponseWriter, r *http.Request) {
	caller, err := s.aclCaller(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	idx, err := s.cfg.ACL.DeleteToken(r.Context(), caller, r.PathValue("accessor"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setMeta(w, idx)
	w.WriteHeader(http.StatusOK)
}
