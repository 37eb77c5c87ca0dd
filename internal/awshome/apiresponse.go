package awshome

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
	"go.uber.org/zap"
)

// MaxPayloadBytes is what the api function may answer: Lambda refuses a
// synchronous response payload above 6 MB (6,291,556 bytes) and API
// Gateway then answers 500 with no explanation. The payload is the JSON of
// the API Gateway response, whose body is base64 when it is binary (gzip
// adds a third again); a margin is kept. httpapi already refuses a read
// whose answer passes MaxResponseBytes; this is the last check, on every
// route, of what would really be sent.
const MaxPayloadBytes = 6_291_556 - 64<<10

// APIHandler is the API Gateway (HTTP API, payload 2.0) handler around h:
// httpadapter turns the event into a net/http request and back, and a
// response whose payload would exceed limit bytes (0: MaxPayloadBytes)
// after compression and base64 is replaced by a 400 that says so and what
// to do (page with per_page and next_token, narrow with prefix, accept
// gzip), as httpapi answers a read over MaxResponseBytes, rather than
// failing the invocation.
func APIHandler(h http.Handler, limit int, log *zap.Logger) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if limit <= 0 {
		limit = MaxPayloadBytes
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
		log.Warn("response too large for Lambda; answered 400", zap.String("method", req.RequestContext.HTTP.Method),
			zap.String("path", req.RawPath), zap.Int("bytes", n), zap.Int("limit", limit))
		return tooLarge(n, limit), nil
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

func tooLarge(n, limit int) events.APIGatewayV2HTTPResponse {
	msg := fmt.Sprintf("response too large: %d bytes as the api function would send it, above the %d bytes AWS Lambda lets a function answer; "+
		"ask for less: pages with ?per_page= and ?next_token=, a narrower listing with ?prefix= or ?filter=, or send Accept-Encoding: gzip\n", n, limit)
	return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusBadRequest, Headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"}, Body: msg}
}
