package httpapi

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drover-sched/drover/acl"
)

// How a client agent's own listener trusts a request. Two kinds reach it:
//
//   - Forwarded by a server (server + client mode): the server has already
//     authorized the user, and signs what it forwards with its forward key
//     (Ed25519): X-Drover-Forward-Node names the node, X-Drover-Forward-At
//     the Unix second, X-Drover-Forward-Signature signs the method, the
//     request URI, the node ID and that second. The node fetches the
//     server's public key from GET /v1/nodeagent/forward-key and accepts a
//     signature within ForwardMaxSkew, for itself only. The user's token is
//     not forwarded.
//   - Direct (Nomad's Go client and CLI try the node's HTTPAddr first; on
//     AWS it is the only way): the request's X-Nomad-Token is resolved by
//     the control plane (GET /v1/acl/token/self, then the token's own
//     policies), and the node checks the capability the route declares
//     (ClientRouteCapabilities) in the allocation's namespace, as Nomad's
//     client does; a control plane without ACLs ("ACL support disabled")
//     admits a token whose replayed read of the alloc (or the node, for
//     host stats) answers 2xx. The verdict is kept TokenCheckTTL.

// Headers of a forwarded request.
const (
	HeaderForwardNode      = "X-Drover-Forward-Node"
	HeaderForwardAt        = "X-Drover-Forward-At"
	HeaderForwardSignature = "X-Drover-Forward-Signature"
)

// ForwardMaxSkew is how far a forwarded request's time may be from the
// node's clock.
const ForwardMaxSkew = time.Minute

// TokenCheckTTL is how long a direct request's token verdict is kept.
const TokenCheckTTL = 30 * time.Second

var (
	errUnauthenticated = errors.New("request refused")
	errAuthUnavailable = errors.New("cannot check the request's token now")
)

// ForwardSigner signs requests a server forwards to client agents.
type ForwardSigner struct {
	key ed25519.PrivateKey
	now func() time.Time
}

// NewForwardSigner returns a signer with the Ed25519 key of seed (32
// bytes).
func NewForwardSigner(seed []byte) (*ForwardSigner, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("forward key: %d bytes, want %d", len(seed), ed25519.SeedSize)
	}
	return &ForwardSigner{key: ed25519.NewKeyFromSeed(seed), now: time.Now}, nil
}

// NewForwardKeySeed returns a fresh random seed for NewForwardSigner.
func NewForwardKeySeed() ([]byte, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return nil, err
	}
	return seed, nil
}

// PublicKey is the key nodes verify with.
func (s *ForwardSigner) PublicKey() ed25519.PublicKey { return s.key.Public().(ed25519.PublicKey) }

// Sign adds the forward headers for nodeID to r.
func (s *ForwardSigner) Sign(r *http.Request, nodeID string) {
	at := strconv.FormatInt(s.now().Unix(), 10)
	r.Header.Set(HeaderForwardNode, nodeID)
	r.Header.Set(HeaderForwardAt, at)
	r.Header.Set(HeaderForwardSignature, base64.StdEncoding.EncodeToString(ed25519.Sign(s.key, forwardMessage(r, nodeID, at))))
}

func forwardMessage(r *http.Request, nodeID, at string) []byte {
	return []byte("drover-forward-v1\n" + r.Method + "\n" + r.URL.RequestURI() + "\n" + nodeID + "\n" + at)
}

// ForwardKeyResponse answers GET /v1/nodeagent/forward-key.
type ForwardKeyResponse struct {
	// PublicKey is the server's Ed25519 forward key, base64.
	PublicKey string
}

// ClientAuth is how a client agent's listener trusts requests (see the
// top of this file).
type ClientAuth struct {
	// NodeID is this client's node.
	NodeID string
	// ForwardKey returns the server's public forward key; nil: forwarded
	// requests are not accepted (the AWS home has no server to forward).
	ForwardKey func(ctx context.Context) (ed25519.PublicKey, error)
	// APIAddress is the control plane's HTTP API ("http://host:port" or
	// the AWS API's URL), where direct requests' tokens are checked.
	APIAddress string
	// HTTPClient makes the token checks (default: 10 s timeout).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
	// AllocNamespace returns the namespace of an alloc of this node (the
	// node agent's); nil: it is read from the control plane with the
	// request's token.
	AllocNamespace func(ctx context.Context, allocID string) (string, error)

	mu      sync.Mutex
	pub     ed25519.PublicKey
	verdict map[string]tokenVerdict
}

type tokenVerdict struct {
	err   error
	until time.Time
}

func (a *ClientAuth) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// authenticateClient admits a request to a client agent's listener (a
// no-op without ClientAuth).
func (s *Server) authenticateClient(r *http.Request, allocID string) error {
	if s.cfg.ClientAuth == nil {
		return nil
	}
	return s.cfg.ClientAuth.Authenticate(r, allocID)
}

// Authenticate admits r: a valid server signature for this node, or a
// token the control plane accepts for allocID ("" for node routes).
func (a *ClientAuth) Authenticate(r *http.Request, allocID string) error {
	if r.Header.Get(HeaderForwardSignature) != "" {
		return a.verifyForward(r)
	}
	return a.checkToken(r.Context(), acl.SecretOf(r), allocID, ClientRouteCapabilities[r.Pattern])
}

func (a *ClientAuth) verifyForward(r *http.Request) error {
	if a.ForwardKey == nil {
		return fmt.Errorf("%w: this client accepts no forwarded requests", errUnauthenticated)
	}
	node, at := r.Header.Get(HeaderForwardNode), r.Header.Get(HeaderForwardAt)
	if node != a.NodeID {
		return fmt.Errorf("%w: forwarded for node %q, this is node %s", errUnauthenticated, node, a.NodeID)
	}
	sec, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: bad %s", errUnauthenticated, HeaderForwardAt)
	}
	if d := a.now().Sub(time.Unix(sec, 0)); d > ForwardMaxSkew || d < -ForwardMaxSkew {
		return fmt.Errorf("%w: forwarded request is %v old (at most %v)", errUnauthenticated, d.Round(time.Second), ForwardMaxSkew)
	}
	sig, err := base64.StdEncoding.DecodeString(r.Header.Get(HeaderForwardSignature))
	if err != nil {
		return fmt.Errorf("%w: bad %s", errUnauthenticated, HeaderForwardSignature)
	}
	pub, err := a.publicKey(r.Context())
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, forwardMessage(r, node, at), sig) {
		// The server's key may have changed (a new data dir): fetch it
		// once more before refusing.
		a.mu.Lock()
		a.pub = nil
		a.mu.Unlock()
		if pub, err = a.publicKey(r.Context()); err != nil || !ed25519.Verify(pub, forwardMessage(r, node, at), sig) {
			return fmt.Errorf("%w: the forward signature does not verify", errUnauthenticated)
		}
	}
	return nil
}

func (a *ClientAuth) publicKey(ctx context.Context) (ed25519.PublicKey, error) {
	a.mu.Lock()
	pub := a.pub
	a.mu.Unlock()
	if pub != nil {
		return pub, nil
	}
	pub, err := a.ForwardKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: fetch the server's forward key: %v", errAuthUnavailable, err)
	}
	a.mu.Lock()
	a.pub = pub
	a.mu.Unlock()
	return pub, nil
}

// checkToken asks the control plane who token is and checks that it has
// one of caps on the alloc (or node:read for this node).
func (a *ClientAuth) checkToken(ctx context.Context, token, allocID string, caps []string) error {
	if a.APIAddress == "" {
		return fmt.Errorf("%w: direct requests are not accepted by this client; go through a server", errUnauthenticated)
	}
	path := "/v1/node/" + url.PathEscape(a.NodeID)
	if allocID != "" {
		path = "/v1/allocation/" + url.PathEscape(allocID)
	}
	sum := sha256.Sum256([]byte(token + "\x00" + path + "\x00" + strings.Join(caps, ",")))
	key := hex.EncodeToString(sum[:])
	now := a.now()
	a.mu.Lock()
	if v, ok := a.verdict[key]; ok && now.Before(v.until) {
		a.mu.Unlock()
		return v.err
	}
	a.mu.Unlock()
	err := a.checkCapability(ctx, token, allocID, path, caps)
	if errors.Is(err, errAuthUnavailable) {
		return err // not kept: ask again next time
	}
	a.mu.Lock()
	if a.verdict == nil || len(a.verdict) > 10000 {
		a.verdict = map[string]tokenVerdict{}
	}
	a.verdict[key] = tokenVerdict{err: err, until: now.Add(TokenCheckTTL)}
	a.mu.Unlock()
	return err
}

// checkCapability resolves token with the control plane and checks caps.
func (a *ClientAuth) checkCapability(ctx context.Context, token, allocID, path string, caps []string) error {
	code, body, err := a.get(ctx, token, "/v1/acl/token/self")
	switch {
	case err != nil:
		return err
	case code == http.StatusNotFound, code == http.StatusBadRequest && strings.Contains(body, acl.ErrDisabled.Error()):
		return a.replayRead(ctx, token, path) // a control plane without ACLs
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fmt.Errorf("%w: the control plane refused the request's token (%d)", errUnauthenticated, code)
	case code != http.StatusOK:
		return fmt.Errorf("%w: the control plane answered %d to the token lookup", errAuthUnavailable, code)
	}
	var tok struct {
		Type     string
		Policies []string
	}
	if err := json.Unmarshal([]byte(body), &tok); err != nil {
		return fmt.Errorf("%w: decode the token: %v", errAuthUnavailable, err)
	}
	if tok.Type == "management" {
		return nil
	}
	var rules []*acl.Rules
	for _, name := range tok.Policies {
		code, body, err := a.get(ctx, token, "/v1/acl/policy/"+url.PathEscape(name))
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			continue // gone, or not readable: it grants nothing here
		}
		var p struct{ Rules string }
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			return fmt.Errorf("%w: decode policy %s: %v", errAuthUnavailable, name, err)
		}
		r, err := acl.ParseRules(p.Rules)
		if err != nil {
			continue
		}
		rules = append(rules, r)
	}
	granted := acl.Compile(rules)
	if len(caps) == 1 && caps[0] == "node:read" {
		if !granted.AllowNodeRead() {
			return fmt.Errorf("%w: Permission denied (node:read)", errUnauthenticated)
		}
		return nil
	}
	ns, err := a.allocNamespace(ctx, token, allocID)
	if err != nil {
		return err
	}
	if !granted.AllowNamespaceAnyOf(ns, caps...) {
		return fmt.Errorf("%w: Permission denied (%s in namespace %s)", errUnauthenticated, strings.Join(caps, " or "), ns)
	}
	return nil
}

func (a *ClientAuth) allocNamespace(ctx context.Context, token, allocID string) (string, error) {
	if a.AllocNamespace != nil {
		ns, err := a.AllocNamespace(ctx, allocID)
		if err != nil {
			return "", fmt.Errorf("%w: %v", errUnauthenticated, err)
		}
		return ns, nil
	}
	code, body, err := a.get(ctx, token, "/v1/allocation/"+url.PathEscape(allocID))
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("%w: the control plane answered %d for the allocation", errUnauthenticated, code)
	}
	var al struct{ Namespace string }
	if err := json.Unmarshal([]byte(body), &al); err != nil {
		return "", fmt.Errorf("%w: decode the allocation: %v", errAuthUnavailable, err)
	}
	return al.Namespace, nil
}

// get reads path from the control plane with token.
func (a *ClientAuth) get(ctx context.Context, token, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.APIAddress+path, nil)
	if err != nil {
		return 0, "", fmt.Errorf("%w: %v", errAuthUnavailable, err)
	}
	if token != "" {
		req.Header.Set("X-Nomad-Token", token)
	}
	hc := a.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%w: %v", errAuthUnavailable, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), nil
}

func (a *ClientAuth) replayRead(ctx context.Context, token, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.APIAddress+path, nil)
	if err != nil {
		return fmt.Errorf("%w: %v", errAuthUnavailable, err)
	}
	if token != "" {
		req.Header.Set("X-Nomad-Token", token)
	}
	hc := a.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", errAuthUnavailable, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: the control plane refused the request's token (%d)", errUnauthenticated, resp.StatusCode)
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: the control plane does not know %s", errUnauthenticated, path)
	default:
		return fmt.Errorf("%w: the control plane answered %d", errAuthUnavailable, resp.StatusCode)
	}
}

// FetchForwardKey reads a server's public forward key from
// GET <base>/v1/nodeagent/forward-key.
func FetchForwardKey(ctx context.Context, hc *http.Client, base string) (ed25519.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/nodeagent/forward-key", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("forward key: server answered %d: %s", resp.StatusCode, b)
	}
	var out ForwardKeyResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("forward key: %w", err)
	}
	pub, err := base64.StdEncoding.DecodeString(out.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("forward key: not an Ed25519 public key")
	}
	return ed25519.PublicKey(pub), nil
}

// forwardKeyRoute serves GET /v1/nodeagent/forward-key.
func (s *Server) forwardKeyRoute(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, ForwardKeyResponse{PublicKey: base64.StdEncoding.EncodeToString(s.cfg.ForwardSigner.PublicKey())})
}
