package httpapi

import (
	"context"
	"crypto/ed25519"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestClientAuthForwardSignature(t *testing.T) {
	seed, err := NewForwardKeySeed()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := NewForwardSigner(seed)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	signer.now = func() time.Time { return now }
	fetches := 0
	auth := &ClientAuth{NodeID: "n1", Now: func() time.Time { return now },
		ForwardKey: func(context.Context) (ed25519.PublicKey, error) { fetches++; return signer.PublicKey(), nil }}
	req := func(uri string) *http.Request { return httptest.NewRequest(http.MethodGet, uri, nil) }

	ok := req("/v1/client/allocation/a1/stats?task=web")
	signer.Sign(ok, "n1")
	if err := auth.Authenticate(ok, "a1"); err != nil {
		t.Fatalf("signed request refused: %v", err)
	}
	otherNode := req("/v1/client/allocation/a1/stats")
	signer.Sign(otherNode, "n2")
	tampered := req("/v1/client/allocation/a1/stats")
	signer.Sign(tampered, "n1")
	tampered.URL.RawQuery = "task=db"
	stale := req("/v1/client/allocation/a1/stats")
	signer.Sign(stale, "n1")
	wrongKey := req("/v1/client/allocation/a1/stats")
	other, _ := NewForwardKeySeed()
	os, _ := NewForwardSigner(other)
	os.Sign(wrongKey, "n1")
	for name, r := range map[string]*http.Request{"other node": otherNode, "tampered query": tampered, "wrong key": wrongKey} {
		if err := auth.Authenticate(r, "a1"); !errors.Is(err, errUnauthenticated) {
			t.Errorf("%s: %v", name, err)
		}
	}
	now = now.Add(2 * ForwardMaxSkew)
	if err := auth.Authenticate(stale, "a1"); !errors.Is(err, errUnauthenticated) {
		t.Errorf("stale: %v", err)
	}
	if fetches > 3 { // once, plus one re-fetch per signature that did not verify
		t.Errorf("key fetched %d times", fetches)
	}
	if err := (&ClientAuth{NodeID: "n1"}).Authenticate(ok, "a1"); !errors.Is(err, errUnauthenticated) {
		t.Errorf("a client without a forward key accepted a forward: %v", err)
	}
}

func TestClientAuthChecksDirectTokensWithTheControlPlane(t *testing.T) {
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		switch {
		case r.Header.Get("X-Nomad-Token") != "good":
			w.WriteHeader(http.StatusForbidden)
		case r.URL.Path == "/v1/allocation/a1", r.URL.Path == "/v1/node/n1":
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer api.Close()
	auth := &ClientAuth{NodeID: "n1", APIAddress: api.URL}
	with := func(token string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/v1/client/allocation/a1/stats", nil)
		r.Header.Set("X-Nomad-Token", token)
		return r
	}
	if err := auth.Authenticate(with("good"), "a1"); err != nil {
		t.Fatal(err)
	}
	// A control plane without ACL routes (404) has the read replayed.
	if first := calls.Load(); first != 2 {
		t.Errorf("first check made %d calls, want the token lookup and the replayed read", first)
	}
	if err := auth.Authenticate(with("good"), "a1"); err != nil || calls.Load() != 2 {
		t.Errorf("second check: %v after %d calls (want the verdict kept)", err, calls.Load())
	}
	if err := auth.Authenticate(with("good"), ""); err != nil {
		t.Errorf("node route: %v", err)
	}
	if err := auth.Authenticate(with("bad"), "a1"); !errors.Is(err, errUnauthenticated) {
		t.Errorf("bad token: %v", err)
	}
	if err := auth.Authenticate(with("good"), "a2"); !errors.Is(err, errUnauthenticated) {
		t.Errorf("alloc the control plane does not know: %v", err)
	}
	api.Close()
	if err := auth.Authenticate(with("other"), "a1"); !errors.Is(err, errAuthUnavailable) {
		t.Errorf("control plane down: %v", err)
	}
	if err := (&ClientAuth{NodeID: "n1"}).Authenticate(with("good"), "a1"); !errors.Is(err, errUnauthenticated) {
		t.Errorf("no API to check with: %v", err)
	}
}

// TestClientAuthChecksCapabilities: with ACLs on the control plane, a
// direct request is admitted only when the token's policies grant the
// capability its route declares (ClientRouteCapabilities) in the alloc's
// namespace: a read-only token may read stats but not exec; a management
// token may do both; a token of another namespace neither.
func TestClientAuthChecksCapabilities(t *testing.T) {
	tokens := map[string]string{
		"ro":    `{"Type": "client", "Policies": ["readonly"]}`,
		"root":  `{"Type": "management"}`,
		"other": `{"Type": "client", "Policies": ["elsewhere"]}`,
	}
	policies := map[string]string{
		"readonly":  `{"Name": "readonly", "Rules": "namespace \"prod\" { policy = \"read\" }"}`,
		"elsewhere": `{"Name": "elsewhere", "Rules": "namespace \"dev\" { policy = \"write\" }"}`,
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := tokens[r.Header.Get("X-Nomad-Token")]
		switch {
		case !ok:
			w.WriteHeader(http.StatusForbidden)
		case r.URL.Path == "/v1/acl/token/self":
			_, _ = w.Write([]byte(tok))
		case strings.HasPrefix(r.URL.Path, "/v1/acl/policy/"):
			if p, ok := policies[strings.TrimPrefix(r.URL.Path, "/v1/acl/policy/")]; ok {
				_, _ = w.Write([]byte(p))
				return
			}
			w.WriteHeader(http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer api.Close()
	auth := &ClientAuth{NodeID: "n1", APIAddress: api.URL,
		AllocNamespace: func(context.Context, string) (string, error) { return "prod", nil }}
	req := func(token, pattern string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/v1/client/allocation/a1/x", nil)
		r.Header.Set("X-Nomad-Token", token)
		r.Pattern = pattern
		return r
	}
	const stats, exec = "GET /v1/client/allocation/{id}/stats", "GET /v1/client/allocation/{id}/exec"
	for _, c := range []struct {
		token, pattern string
		ok             bool
	}{
		{"ro", stats, true}, {"ro", exec, false}, {"root", exec, true}, {"other", stats, false}, {"other", exec, false},
	} {
		err := auth.Authenticate(req(c.token, c.pattern), "a1")
		if (err == nil) != c.ok {
			t.Errorf("token %s on %s: %v, want allowed %v", c.token, c.pattern, err, c.ok)
		}
		if err != nil && !errors.Is(err, errUnauthenticated) {
			t.Errorf("token %s on %s: refusal %v is not a 403", c.token, c.pattern, err)
		}
	}
}
