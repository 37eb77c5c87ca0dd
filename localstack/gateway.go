package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// gateway plays API Gateway's HTTP API in front of the api function, the
// way template.yaml configures it: user routes go through the X-Nomad-Token
// Lambda authorizer (payload 2.0, simple responses), node-agent routes
// (/v1/nodeagent/...) need a SigV4 Authorization header and get the
// caller's IAM identity in requestContext.authorizer.iam. Local endpoints
// have no IAM, so the signature is not verified: the identity is the one
// given with -iam-userid and -iam-userarn (the aws:userid and ARN API
// Gateway would report for the signer).
//
// As API Gateway does, the authorizer's answer (allow with its context,
// or deny) is cached per identity source (the X-Nomad-Token value) for
// -authorizer-ttl (template.yaml's ReauthorizeEvery; 0 disables the
// cache). Each answer says whether it used a cached authorizer result in
// the header X-Drover-Gateway-Authorizer ("cached" or "invoked"), which
// only this local gateway adds, for tests.
type gateway struct {
	lambda     *lambda.Client
	api        string
	authorizer string
	userID     string
	userARN    string
	ttl        time.Duration
	logf       func(string, ...any)

	mu    sync.Mutex
	cache map[string]cachedAuth
}

// cachedAuth is one authorizer answer kept until expires.
type cachedAuth struct {
	resp    events.APIGatewayV2CustomAuthorizerSimpleResponse
	expires time.Time
}

// authorize returns the authorizer's answer for the identity source,
// from the cache while it is fresh.
func (g *gateway) authorize(ctx context.Context, identity string, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, bool, error) {
	now := time.Now()
	g.mu.Lock()
	c, ok := g.cache[identity]
	g.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.resp, true, nil
	}
	var resp events.APIGatewayV2CustomAuthorizerSimpleResponse
	if err := g.invoke(ctx, g.authorizer, req, &resp); err != nil {
		return resp, false, err
	}
	if g.ttl > 0 {
		g.mu.Lock()
		if g.cache == nil {
			g.cache = map[string]cachedAuth{}
		}
		g.cache[identity] = cachedAuth{resp: resp, expires: now.Add(g.ttl)}
		g.mu.Unlock()
	}
	return resp, false, nil
}

func runGateway(args []string) int {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	endpoint := fs.String("endpoint", os.Getenv("AWS_ENDPOINT_URL"), "AWS endpoint URL")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	api := fs.String("api-function", "", "the api function")
	authorizer := fs.String("authorizer-function", "", "the X-Nomad-Token authorizer function (empty: user routes open)")
	userID := fs.String("iam-userid", "", "aws:userid of SigV4-signed callers (node-agent routes)")
	userARN := fs.String("iam-userarn", "", "ARN of SigV4-signed callers (node-agent routes), e.g. an assumed-role session")
	ttl := fs.Duration("authorizer-ttl", 300*time.Second, "how long the authorizer's answer per token is cached (template.yaml's ReauthorizeEvery; 0: not cached)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		return 1
	}
	if *endpoint != "" {
		cfg.BaseEndpoint = aws.String(*endpoint)
	}
	g := &gateway{lambda: lambda.NewFromConfig(cfg), api: *api, authorizer: *authorizer, userID: *userID, userARN: *userARN, ttl: *ttl,
		logf: log.New(os.Stderr, "gateway: ", log.LstdFlags|log.Lmicroseconds).Printf}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		return 1
	}
	fmt.Println("http://" + ln.Addr().String())
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		return 1
	}
	return 0
}

func (g *gateway) invoke(ctx context.Context, fn string, in, out any) error {
	payload, err := json.Marshal(in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	res, err := g.lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload})
	if err != nil {
		return fmt.Errorf("invoke %s: %w", fn, err)
	}
	if res.FunctionError != nil {
		return fmt.Errorf("function %s: %s: %s", fn, aws.ToString(res.FunctionError), res.Payload)
	}
	return json.Unmarshal(res.Payload, out)
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	headers := map[string]string{}
	for k, v := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	route := "ANY /{proxy+}"
	rc := events.APIGatewayV2HTTPRequestContext{
		DomainName: r.Host, Stage: "$default", RequestID: fmt.Sprint(time.Now().UnixNano()), TimeEpoch: time.Now().UnixMilli(),
		HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, Protocol: r.Proto,
			SourceIP: strings.Split(r.RemoteAddr, ":")[0], UserAgent: r.UserAgent()},
	}
	if strings.HasPrefix(r.URL.Path, "/v1/nodeagent/") {
		route = "ANY /v1/nodeagent/{proxy+}"
		auth := r.Header.Get("Authorization")
		if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") {
			writeGatewayError(w, http.StatusForbidden, "Missing Authentication Token")
			return
		}
		rc.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserID: g.userID, UserARN: g.userARN, AccessKey: accessKey(auth)}}
	} else if g.authorizer != "" {
		if headers["x-nomad-token"] == "" {
			writeGatewayError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		resp, cached, err := g.authorize(r.Context(), headers["x-nomad-token"], events.APIGatewayV2CustomAuthorizerV2Request{Version: "2.0", Type: "REQUEST",
			RouteKey: route, RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery, Headers: headers,
			IdentitySource: []string{headers["x-nomad-token"]}})
		if cached {
			w.Header().Set("X-Drover-Gateway-Authorizer", "cached")
		} else {
			w.Header().Set("X-Drover-Gateway-Authorizer", "invoked")
		}
		if err != nil {
			g.logf("authorizer: %v", err)
			writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
		if !resp.IsAuthorized {
			writeGatewayError(w, http.StatusForbidden, "Forbidden")
			return
		}
		rc.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: resp.Context}
	}
	rc.RouteKey = route
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: route, RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery,
		Headers: headers, RequestContext: rc}
	if len(body) > 0 {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := g.invoke(r.Context(), g.api, ev, &resp); err != nil {
		g.logf("api: %v", err)
		writeGatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	out := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if out, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			writeGatewayError(w, http.StatusBadGateway, "bad function response")
			return
		}
	}
	w.Header().Del("Content-Length")
	if resp.StatusCode == 0 {
		resp.StatusCode = http.StatusOK
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
}

func accessKey(auth string) string {
	i := strings.Index(auth, "Credential=")
	if i < 0 {
		return ""
	}
	rest := auth[i+len("Credential="):]
	return rest[:strings.IndexAny(rest+"/", "/")]
}

func writeGatewayError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = fmt.Fprintf(w, "{\"message\":%q}\n", msg)
}
