package awshome_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/drover-sched/drover/internal/awshome"
)

// TestAPIHandlerResponseLimit: the api function's adapter answers a 400
// naming the limit and the way out when a response would exceed what
// Lambda may return, after gzip and base64; smaller responses, and large
// ones that gzip brings under the limit, pass unchanged.
func TestAPIHandlerResponseLimit(t *testing.T) {
	random := make([]byte, 5<<20) // incompressible: 5 MiB, 6.7 MiB once base64
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	text := bytes.Repeat([]byte(`{"ID":"a-job","Status":"running"},`), 300_000) // 10 MB of JSON, a few hundred KB gzipped
	mux := http.NewServeMux()
	serve := func(body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Nomad-Index", "42")
			if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				w.Header().Set("Content-Encoding", "gzip")
				zw := gzip.NewWriter(w)
				_, _ = zw.Write(body)
				_ = zw.Close()
				return
			}
			_, _ = w.Write(body)
		}
	}
	mux.HandleFunc("/random", serve(random))
	mux.HandleFunc("/text", serve(text))
	mux.HandleFunc("/small", serve([]byte("[]")))
	h := awshome.APIHandler(mux, 0, nil)
	call := func(path string, gz bool) events.APIGatewayV2HTTPResponse {
		t.Helper()
		req := events.APIGatewayV2HTTPRequest{Version: "2.0", RawPath: path, Headers: map[string]string{},
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: path}}}
		if gz {
			req.Headers["accept-encoding"] = "gzip"
		}
		resp, err := h(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp
	}
	for _, gz := range []bool{false, true} {
		resp := call("/random", gz)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Body, fmt.Sprintf("%d bytes AWS Lambda", awshome.MaxPayloadBytes)) ||
			!strings.Contains(resp.Body, "per_page") {
			t.Fatalf("incompressible 5 MiB (gzip %t): %d %q %v", gz, resp.StatusCode, resp.Body, resp.Headers)
		}
	}
	if resp := call("/text", false); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("10 MB of JSON without gzip: %d", resp.StatusCode)
	}
	resp := call("/text", true)
	if resp.StatusCode != http.StatusOK || !resp.IsBase64Encoded {
		t.Fatalf("10 MB of JSON gzipped: %d base64 %t", resp.StatusCode, resp.IsBase64Encoded)
	}
	raw, err := base64.StdEncoding.DecodeString(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(zr); !bytes.Equal(got, text) {
		t.Fatalf("gzipped body changed: %d bytes", len(got))
	}
	if resp := call("/small", false); resp.StatusCode != http.StatusOK || resp.Body != "[]" {
		t.Fatalf("small: %d %q", resp.StatusCode, resp.Body)
	}
}
