package httpapi

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// forwardState knows allocs and nodes, nothing else (the other State
// methods are not called).
type forwardState struct {
	State
	allocs map[string]*structs.Allocation
	nodes  map[string]*structs.Node
}

func (f *forwardState) Alloc(_ context.Context, id string) (*structs.Allocation, error) {
	if a, ok := f.allocs[id]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("alloc %s: %w", id, storage.ErrNotFound)
}

func (f *forwardState) AllocsByPrefix(_ context.Context, _, prefix string) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	for id, a := range f.allocs {
		if strings.HasPrefix(id, prefix) {
			out = append(out, a)
		}
	}
	return out, nil
}

func (f *forwardState) Node(_ context.Context, id string) (*structs.Node, error) {
	if n, ok := f.nodes[id]; ok {
		return n, nil
	}
	return nil, fmt.Errorf("node %s: %w", id, storage.ErrNotFound)
}

func (f *forwardState) Nodes(_ context.Context, prefix string) ([]*structs.Node, error) {
	var out []*structs.Node
	for id, n := range f.nodes {
		if strings.HasPrefix(id, prefix) {
			out = append(out, n)
		}
	}
	return out, nil
}

func TestServerForwardsClientRoutesToTheAllocsNode(t *testing.T) {
	seed, _ := NewForwardKeySeed()
	signer, _ := NewForwardSigner(seed)
	var got *http.Request
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		_, _ = io.WriteString(w, `{"Timestamp":1}`)
	}))
	defer node.Close()
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	st := &forwardState{
		allocs: map[string]*structs.Allocation{
			"aaaa-1111": {ID: "aaaa-1111", NodeID: "n1"},
			"bbbb-2222": {ID: "bbbb-2222", NodeID: "n2"},
			"cccc-3333": {ID: "cccc-3333", NodeID: "n3"},
		},
		nodes: map[string]*structs.Node{
			"n1": {ID: "n1", Name: "a", HTTPAddr: strings.TrimPrefix(node.URL, "http://"), Status: structs.NodeStatusReady},
			"n2": {ID: "n2", Name: "b", Status: structs.NodeStatusReady},
			"n3": {ID: "n3", Name: "c", HTTPAddr: deadAddr, Status: structs.NodeStatusReady},
		},
	}
	srv := httptest.NewServer(New(Config{State: st, ForwardSigner: signer}))
	defer srv.Close()
	get := func(path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("X-Nomad-Token", "user-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// By prefix: forwarded with the full ID, signed, without the token.
	code, body := get("/v1/client/allocation/aaaa/stats?task=web")
	if code != 200 || body != `{"Timestamp":1}` || got == nil {
		t.Fatalf("forward: %d %s", code, body)
	}
	if got.URL.Path != "/v1/client/allocation/aaaa-1111/stats" || got.URL.RawQuery != "task=web" ||
		got.Header.Get("X-Nomad-Token") != "" || got.Header.Get(HeaderForwardNode) != "n1" {
		t.Errorf("forwarded as %s %s, headers %v", got.URL.Path, got.URL.RawQuery, got.Header)
	}
	if err := (&ClientAuth{NodeID: "n1", ForwardKey: pubKey(signer)}).Authenticate(got, "aaaa-1111"); err != nil {
		t.Errorf("the node would refuse the forward: %v", err)
	}
	if code, _ := get("/v1/client/stats?node_id=n1"); code != 200 || got.URL.Path != "/v1/client/stats" {
		t.Errorf("host stats forward: %d %s", code, got.URL.Path)
	}

	for path, want := range map[string]struct {
		code int
		text string
	}{
		"/v1/client/allocation/zzzz/stats":      {404, "unknown allocation"},
		"/v1/client/allocation/bbbb-2222/stats": {502, "advertises no HTTP address"},
		"/v1/client/allocation/cccc-3333/stats": {502, "node c (n3) at " + deadAddr + " is unreachable"},
		"/v1/client/stats":                      {400, "node_id"},
		"/v1/client/stats?node_id=nope":         {404, ""},
	} {
		if code, body := get(path); code != want.code || !strings.Contains(body, want.text) {
			t.Errorf("%s: %d %s, want %d %q", path, code, body, want.code, want.text)
		}
	}

	// Without a forward key (the AWS home's API): 501 with the address.
	aws := httptest.NewServer(New(Config{State: st}))
	defer aws.Close()
	resp, err := http.Get(aws.URL + "/v1/client/allocation/aaaa-1111/stats")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 501 || !strings.Contains(string(b), st.nodes["n1"].HTTPAddr) {
		t.Errorf("no forward key: %d %s", resp.StatusCode, b)
	}
}

func pubKey(s *ForwardSigner) func(context.Context) (ed25519.PublicKey, error) {
	return func(context.Context) (ed25519.PublicKey, error) { return s.PublicKey(), nil }
}
