package awshome

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	"go.uber.org/zap"
)

// MaxResponseBytes is what the api function may answer: Lambda refuses a
// synchronous response payload above 6 MB (6,291,556 bytes) and API
// Gateway then answers 500 with no explanation. The payload is the JSON of
// the API Gateway response, whose body is base64 when it is binary (gzip
// adds a third again); a margin is kept for the rest of the JSON.
const MaxResponseBytes = 6_000_000

// APIHandler is the API Gateway (HTTP API, payload 2.0) handler around h:
// httpadapter turns the event into a net/http request and back, and a
// response whose payload would exceed limit bytes (0: MaxResponseBytes)
// after compression and base64 is replaced by a 413 that says so and what
// to do (page with per_page and next_token, narrow with prefix, accept
// gzip), rather than failing the invocation.
func APIHandler(h http.Handler, limit int, log *zap.Logger) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if limit <= 0 {
		limit = MaxResponseBytes
	}
	if log == nil {
		log = zap.NewNop()
	}
	adapter := httpadapter.NewV2(h)
	return func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		resp, err := adapter.ProxyWithContext(ctx, req)
		if err != nil {
			return resp, err
		}
		n := payloadSize(resp)
		if n <= limit {
			return resp, nil
		}
		log.Warn("response too large for Lambda; answered 413", zap.String("method", req.RequestContext.HTTP.Method),
			zap.String("path", req.RawPath), zap.Int("bytes", n), zap.Int("limit", limit))
		return tooLarge(n, limit, resp.Headers), nil
	}
}

// payloadSize is the size of resp as the Lambda runtime sends it (JSON,
// HTML not escaped, as aws-lambda-go encodes it).
func payloadSize(resp events.APIGatewayV2HTTPResponse) int {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		return 0
	}
	return buf.Len()
}

func tooLarge(n, limit int, headers map[string]string) events.APIGatewayV2HTTPResponse {
	out := map[string]string{"Content-Type": "text/plain; charset=utf-8"}
	for k, v := range headers { // Nomad's clients want X-Nomad-Index on every answer
		if strings.HasPrefix(strings.ToLower(k), "x-nomad-") {
			out[k] = v
		}
	}
	msg := fmt.Sprintf("response too large: %d bytes as the api function would send it, above the %d bytes AWS Lambda lets a function answer; "+
		"ask for less: page the list with per_page and next_token, narrow it with prefix (or a namespace), or send Accept-Encoding: gzip\n", n, limit)
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusRequestEntityTooLarge, Headers: out, Body: msg}
}
