package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// TestOnAllocNodeFallsBackToTheNodeOn501: an API that cannot forward (the
// AWS home) answers 501; the call then goes to the node's HTTPAddr with
// the same token.
func TestOnAllocNodeFallsBackToTheNodeOn501(t *testing.T) {
	var nodeToken string
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nodeToken = r.Header.Get("X-Nomad-Token")
		w.Header().Set("X-Nomad-Index", "1")
		_, _ = w.Write([]byte(`{"Memory":{"Total":42}}`))
	}))
	defer node.Close()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "1")
		switch {
		case r.URL.Path == "/v1/node/n1":
			_, _ = w.Write([]byte(`{"ID":"n1","Status":"ready","HTTPAddr":"` + strings.TrimPrefix(node.URL, "http://") + `"}`))
		case r.URL.Path == "/v1/client/stats" && r.URL.Query().Get("node_id") == "n1":
			http.Error(w, "this agent cannot forward", http.StatusNotImplemented)
		case r.URL.Path == "/v1/client/stats":
			http.Error(w, "bad", http.StatusBadRequest)
		}
	}))
	defer server.Close()
	cl, err := api.NewClient(&api.Config{Address: server.URL, SecretID: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	var hs *api.HostStats
	err = onAllocNode(cl, "n1", func(c *api.Client) (err error) {
		hs, err = c.Nodes().Stats("n1", nil)
		return err
	})
	if err != nil || hs.Memory.Total != 42 || nodeToken != "tok" {
		t.Fatalf("fallback: %+v %v (token %q)", hs, err, nodeToken)
	}
	// Other errors are the answer.
	err = onAllocNode(cl, "n1", func(c *api.Client) error { _, err := c.Nodes().Stats("", nil); return err })
	if err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("a 400 was retried on the node: %v", err)
	}
}
