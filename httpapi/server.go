// Package httpapi is drover's HTTP API: Nomad's paths and JSON names for
// what drover supports, so that Nomad's CLI and Go API client work against
// it. It is ONE handler set with two adapters: the dev agent serves it with
// net/http, and on AWS the api Lambda function feeds it API Gateway
// requests.
//
// Compatibility details Nomad's clients depend on: every read answers with
// X-Nomad-Index, X-Nomad-KnownLeader and X-Nomad-LastContact; blocking
// queries (?index=N&wait=D) return when the index moves past N or the wait
// ends; ?namespace= (default "default", "*" for all), ?prefix= and
// ?related=true are honoured; responses are gzip-compressed when the
// client accepts it. Errors are a plain-text message with 400 for bad
// input, 404 for unknown IDs, 409 for a failed enforced index.
package httpapi

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/acl"
	"github.com/drover-sched/drover/controlplane"
	"github.com/drover-sched/drover/jobspec"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// State is what the API reads.
type State interface {
	Job(ctx context.Context, namespace, jobID string) (*structs.Job, error)
	JobVersions(ctx context.Context, namespace, jobID string) ([]*structs.Job, error)
	Jobs(ctx context.Context, namespace, prefix string) ([]*structs.Job, error)
	Alloc(ctx context.Context, allocID string) (*structs.Allocation, error)
	AllocsByPrefix(ctx context.Context, namespace, prefix string) ([]*structs.Allocation, error)
	AllocsByJob(ctx context.Context, namespace, jobID string) ([]*structs.Allocation, error)
	AllocsByNode(ctx context.Context, nodeID string) ([]*structs.Allocation, error)
	AllocsByEval(ctx context.Context, evalID string) ([]*structs.Allocation, error)
	Eval(ctx context.Context, evalID string) (*structs.Evaluation, error)
	Evals(ctx context.Context, filter storage.EvalFilter) ([]*structs.Evaluation, error)
	EvalsByJob(ctx context.Context, namespace, jobID string) ([]*structs.Evaluation, error)
	Deployment(ctx context.Context, deploymentID string) (*structs.Deployment, error)
	LatestDeployment(ctx context.Context, namespace, jobID string) (*structs.Deployment, error)
	DeploymentsByJob(ctx context.Context, namespace, jobID string) ([]*structs.Deployment, error)
	Deployments(ctx context.Context, namespace, prefix string) ([]*structs.Deployment, error)
	Node(ctx context.Context, nodeID string) (*structs.Node, error)
	Nodes(ctx context.Context, prefix string) ([]*structs.Node, error)
	JobSubmission(ctx context.Context, namespace, jobID string, version uint64) (*structs.JobSubmission, error)
	Index(ctx context.Context, table string) (uint64, error)
}

// Jobs is what the API asks of the control plane to change jobs.
type Jobs interface {
	RegisterJob(ctx context.Context, req *controlplane.RegisterRequest) (*controlplane.RegisterResponse, error)
	DeregisterJob(ctx context.Context, namespace, jobID string, purge bool) (*controlplane.RegisterResponse, error)
}

// AgentInfo describes the agent serving the API, for /v1/agent/self.
type AgentInfo struct {
	Name       string
	Region     string
	Datacenter string
	Version    string
	HTTPAddr   string
	Server     bool
	Client     bool
	NodeID     string
}

// Config builds a Server.
type Config struct {
	State State
	Jobs  Jobs
	// Watcher, when the store offers one, wakes blocking queries at once;
	// without it they poll every PollInterval.
	Watcher storage.Watcher
	// PollInterval is the blocking-query poll interval without a Watcher
	// (default 1 s).
	PollInterval time.Duration
	// MaxWait caps a blocking query's wait (default 10 min, Nomad's cap;
	// on AWS keep it below API Gateway's 30 s).
	MaxWait time.Duration
	Agent   AgentInfo
	Logger  *zap.Logger
	// NodeAgents, when set, serves the node-agent routes under
	// /v1/nodeagent/ (the server side of `drover agent -client`).
	NodeAgents NodeAgents
	// NodeAuth checks node-agent requests (nil: accept all).
	NodeAuth NodeAuthorizer
	// Services, when set, serves the service registry routes
	// (/v1/services, /v1/service/:name) and, with NodeAgents offering
	// NodeServices, the node agents' registrations.
	Services ServiceRegistry
	// MaxResponseBytes, when set, bounds a read's answer as it leaves the
	// process (gzip-compressed and base64-encoded when the client accepts
	// gzip, as API Gateway carries it): a larger one is refused with a 400
	// that says to page or narrow the query, rather than failing in the
	// Lambda runtime (its synchronous response limit is 6 MB).
	MaxResponseBytes int
	// Operator, when set, serves the operator actions (promote, fail,
	// pause, revert, drain, eligibility, gc).
	Operator Operator
	// Plans, when set, serves PUT /v1/job/:id/plan.
	Plans JobPlanner
	// Scaler, when set, serves POST /v1/job/:id/scale.
	Scaler JobScaler
	// Launcher, when set, serves PUT /v1/job/:id/periodic/force and
	// PUT /v1/job/:id/dispatch.
	Launcher Launcher
	// Allocs, when set, serves PUT /v1/allocation/:id/stop.
	Allocs AllocStopper
	// Namespaces, when set, serves the namespace routes.
	Namespaces Namespaces
	// Scheduler, when set, serves /v1/operator/scheduler/configuration.
	Scheduler SchedulerConfigs
	// ACL, when set, turns Nomad's ACLs on: every route checks what its
	// row of the capability table (capabilities.go) says its caller
	// needs, answering 403 "Permission denied" otherwise; lists are
	// filtered to what the caller may read; the /v1/acl routes work. Nil:
	// ACLs off, as Nomad without acl.enabled (every request allowed, the
	// /v1/acl routes answer 400 "ACL support disabled").
	ACL ACLs
	// NodeSecrets, when set, binds each node to the secret it first
	// registered with (Nomad's node SecretID, sent as X-Nomad-Token) and
	// refuses node-agent requests that do not present it: the
	// self-hosted home. On AWS nodes are IAM identities (NodeAuth).
	NodeSecrets NodeSecrets
	// ForwardSigner, when set, lets a server forward client routes to the
	// node that runs the alloc (signed; see ClientAuth) and serves its
	// public key at GET /v1/nodeagent/forward-key.
	ForwardSigner *ForwardSigner
	// ForwardTLS, when set, is how forwarded client routes reach nodes:
	// over HTTPS, the node's certificate verified and this server's
	// presented (the agents' TLS).
	ForwardTLS *tls.Config
	// ClientAuth, on a client agent's own listener (NewClientServer),
	// admits its requests; nil admits all.
	ClientAuth *ClientAuth
	// Upstream, on a client agent's own listener (NewClientServer),
	// receives every request that is not the node's own (its client
	// routes and /v1/agent/self): the servers' API, as Nomad's client
	// agents forward what they do not answer to their servers, so that
	// the node's address is a whole API for the CLI (`nomad node status
	// -self` on a client). Requests keep their token; the servers check
	// it. Node-agent routes (/v1/nodeagent/) are never passed on. Nil:
	// those requests get 404.
	Upstream http.Handler
}

// Server serves the API.
type Server struct {
	cfg Config
	mux *routeMux
	log *zap.Logger
	// forward is the transport of forwarded client routes.
	forward http.RoundTripper
	// state is the store unfiltered, for the capability checks (cfg.State
	// is filtered by identity when ACLs are on).
	state State
	// client serves the client routes of the node this process runs (set
	// by HandleClient before serving); nil on a server without a node.
	client ClientNode
}

// New returns a Server.
func New(cfg Config) *Server {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 10 * time.Minute
	}
	s := &Server{cfg: cfg, log: cfg.Logger, state: cfg.State}
	if cfg.ForwardTLS != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = cfg.ForwardTLS
		s.forward = t
	}
	s.mux = &routeMux{ServeMux: http.NewServeMux(), s: s}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if cfg.ACL != nil {
		s.cfg.State = aclState{cfg.State}
		if cfg.Namespaces != nil {
			s.cfg.Namespaces = aclNamespaces{cfg.Namespaces}
		}
	}
	s.routes()
	return s
}

// NewClientServer returns the API of a client agent's own listener: only
// Nomad's client routes (/v1/client/...), answered by node, each request
// admitted by cfg.ClientAuth. cfg's State and control-plane fields are not
// used.
func NewClientServer(node ClientNode, cfg Config) *Server {
	cfg.State = nil
	s := &Server{cfg: cfg, log: cfg.Logger, client: node}
	s.mux = &routeMux{ServeMux: http.NewServeMux(), s: s}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	s.clientRoutes()
	s.mux.HandleFunc("GET /v1/agent/self", s.clientAgentSelf)
	return s
}

// clientAgentSelf is /v1/agent/self on a client agent's own listener:
// the node's agent, for a token that may read the node.
func (s *Server) clientAgentSelf(w http.ResponseWriter, r *http.Request) {
	if a := s.cfg.ClientAuth; a != nil && r.Header.Get(HeaderForwardSignature) == "" {
		if err := a.checkToken(r.Context(), acl.SecretOf(r), "", []string{"node:read"}); err != nil {
			s.clientFail(w, r, err)
			return
		}
	}
	s.agentSelf(w, r)
}

// upstream reports whether a client agent's listener passes r on to the
// servers (see Config.Upstream).
func (s *Server) upstream(r *http.Request) bool {
	if s.cfg.Upstream == nil || s.cfg.State != nil {
		return false
	}
	p := r.URL.Path
	switch {
	case !strings.HasPrefix(p, "/v1/"), strings.HasPrefix(p, "/v1/client/"), strings.HasPrefix(p, "/v1/nodeagent/"),
		p == "/v1/agent/self":
		return false
	}
	return true
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.upstream(r) {
		s.cfg.Upstream.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	rw := &statusWriter{ResponseWriter: w}
	var out http.ResponseWriter = rw
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") && r.Header.Get("Upgrade") == "" {
		gz := &gzipWriter{statusWriter: rw}
		defer gz.Close()
		out = gz
	}
	if err := s.checkQuery(r); err != nil {
		s.fail(out, r, err)
	} else {
		s.mux.ServeHTTP(out, r)
	}
	s.log.Debug("http request", zap.String("method", r.Method), zap.String("path", r.URL.Path),
		zap.Int("status", rw.status), zap.Duration("took", time.Since(start)))
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("PUT /v1/jobs", s.registerJob)
	m.HandleFunc("POST /v1/jobs", s.registerJob)
	m.HandleFunc("GET /v1/jobs", s.listJobs)
	m.HandleFunc("GET /v1/job/{id}", s.getJob)
	m.HandleFunc("PUT /v1/job/{id}", s.registerJobAt)
	m.HandleFunc("POST /v1/job/{id}", s.registerJobAt)
	m.HandleFunc("DELETE /v1/job/{id}", s.deregisterJob)
	m.HandleFunc("GET /v1/job/{id}/allocations", s.jobAllocations)
	m.HandleFunc("GET /v1/job/{id}/evaluations", s.jobEvaluations)
	m.HandleFunc("GET /v1/job/{id}/summary", s.jobSummary)
	m.HandleFunc("GET /v1/job/{id}/versions", s.jobVersions)
	m.HandleFunc("GET /v1/job/{id}/deployment", s.jobDeployment)
	m.HandleFunc("GET /v1/job/{id}/deployments", s.jobDeployments)
	m.HandleFunc("GET /v1/job/{id}/submission", s.jobSubmission)
	m.HandleFunc("GET /v1/allocations", s.listAllocations)
	m.HandleFunc("GET /v1/allocation/{id}", s.getAllocation)
	m.HandleFunc("GET /v1/evaluations", s.listEvaluations)
	m.HandleFunc("GET /v1/evaluation/{id}", s.getEvaluation)
	m.HandleFunc("GET /v1/evaluation/{id}/allocations", s.evaluationAllocations)
	m.HandleFunc("GET /v1/deployment/{id}", s.getDeployment)
	m.HandleFunc("GET /v1/nodes", s.listNodes)
	m.HandleFunc("GET /v1/node/{id}", s.getNode)
	m.HandleFunc("GET /v1/node/{id}/allocations", s.nodeAllocations)
	m.HandleFunc("GET /v1/agent/self", s.agentSelf)
	m.HandleFunc("GET /v1/status/leader", s.statusLeader)
	m.HandleFunc("GET /v1/regions", s.regions)
	m.HandleFunc("GET /v1/deployments", s.listDeployments)
	m.HandleFunc("GET /v1/deployment/allocations/{id}", s.deploymentAllocations)
	m.HandleFunc("GET /v1/job/{id}/scale", s.jobScaleStatus)
	m.HandleFunc("GET /v1/scaling/policies", s.listScalingPolicies)
	m.HandleFunc("GET /v1/scaling/policy/{id}", s.getScalingPolicy)
	for _, method := range []string{"PUT", "POST"} {
		m.HandleFunc(method+" /v1/search", s.search)
		m.HandleFunc(method+" /v1/search/fuzzy", s.fuzzySearch)
		if s.cfg.Plans != nil {
			m.HandleFunc(method+" /v1/job/{id}/plan", s.planJob)
		}
		if s.cfg.Scaler != nil {
			m.HandleFunc(method+" /v1/job/{id}/scale", s.scaleJob)
		}
		if s.cfg.Allocs != nil {
			m.HandleFunc(method+" /v1/allocation/{id}/stop", s.stopAllocation)
		}
		if s.cfg.Namespaces != nil {
			m.HandleFunc(method+" /v1/namespace", s.putNamespace)
			m.HandleFunc(method+" /v1/namespace/{name}", s.putNamespace)
		}
		if s.cfg.Scheduler != nil {
			m.HandleFunc(method+" /v1/operator/scheduler/configuration", s.setSchedulerConfig)
		}
	}
	if s.cfg.Namespaces != nil {
		m.HandleFunc("GET /v1/namespaces", s.listNamespaces)
		m.HandleFunc("GET /v1/namespace/{name}", s.getNamespace)
		m.HandleFunc("DELETE /v1/namespace/{name}", s.deleteNamespace)
	}
	if s.cfg.Scheduler != nil {
		m.HandleFunc("GET /v1/operator/scheduler/configuration", s.getSchedulerConfig)
	}
	s.clientRoutes()
	if s.cfg.ForwardSigner != nil {
		m.HandleFunc("GET /v1/nodeagent/forward-key", s.forwardKeyRoute)
	}
	s.nodeAgentRoutes()
	s.serviceRoutes()
	s.operatorRoutes()
	s.jobsParseRoutes()
	s.launcherRoutes()
	s.aclRoutes()
}

// checkQuery refuses a query string that does not parse and a region
// other than this agent's.
func (s *Server) checkQuery(r *http.Request) error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return badRequestf("query string: %v", err)
	}
	if region := q.Get("region"); region != "" && s.cfg.Agent.Region != "" && region != s.cfg.Agent.Region {
		return badRequestf("query parameter \"region\": unknown region %q (this cluster is %q)", region, s.cfg.Agent.Region)
	}
	return nil
}

// Response helpers.

// statusWriter remembers the status for logs.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Hijack hands the connection over (websocket upgrades, forwarded or
// served here).
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// gzipWriter compresses the body when the client accepts gzip.
type gzipWriter struct {
	*statusWriter
	gz *gzip.Writer
}

func (w *gzipWriter) WriteHeader(code int) {
	w.Header().Del("Content-Length")
	w.Header().Set("Content-Encoding", "gzip")
	w.Header().Add("Vary", "Accept-Encoding")
	w.statusWriter.WriteHeader(code)
}

func (w *gzipWriter) Write(b []byte) (int, error) {
	if w.gz == nil {
		if w.status == 0 {
			w.WriteHeader(http.StatusOK)
		}
		w.gz = gzip.NewWriter(w.statusWriter.ResponseWriter)
	}
	return w.gz.Write(b)
}

// Flush sends what is buffered (log streaming needs it). A flush before
// any data starts the gzip stream, so that its header goes out: Nomad's
// Go client opens the gzip reader as soon as the response headers come,
// and that read would wait for the first frame of a followed log that is
// quiet (`nomad alloc logs -f` hung on its first stream).
func (w *gzipWriter) Flush() {
	if w.gz == nil {
		if w.status == 0 {
			w.WriteHeader(http.StatusOK)
		}
		w.gz = gzip.NewWriter(w.statusWriter.ResponseWriter)
	}
	_ = w.gz.Flush()
	if f, ok := w.statusWriter.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *gzipWriter) Close() {
	if w.gz != nil {
		_ = w.gz.Close()
	}
}

// setMeta writes Nomad's query-meta headers.
func setMeta(w http.ResponseWriter, index uint64) {
	if index == 0 {
		index = 1 // Nomad's clients treat 0 as "no index"
	}
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(index, 10))
	w.Header().Set("X-Nomad-KnownLeader", "true")
	w.Header().Set("X-Nomad-LastContact", "0")
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	if _, ok := r.URL.Query()["pretty"]; ok {
		enc.SetIndent("", "    ")
	}
	_ = enc.Encode(v)
}

// writeRead writes a read's answer, refusing one over MaxResponseBytes.
func (s *Server) writeRead(w http.ResponseWriter, r *http.Request, v any) {
	max := s.cfg.MaxResponseBytes
	if max <= 0 {
		writeJSON(w, r, http.StatusOK, v)
		return
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	if _, ok := r.URL.Query()["pretty"]; ok {
		enc.SetIndent("", "    ")
	}
	if err := enc.Encode(v); err != nil {
		s.fail(w, r, fmt.Errorf("encode response: %w", err))
		return
	}
	size := body.Len()
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") && size > max {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write(body.Bytes())
		_ = zw.Close()
		size = (gz.Len() + 2) / 3 * 4 // base64, as the Lambda response carries binary bodies
	}
	if size > max {
		w.Header().Del("X-Nomad-Index")
		s.fail(w, r, badRequestf("response too large: %d bytes, over the limit of %d bytes of this API (Lambda's response limit); "+
			"ask for pages with ?per_page= and ?next_token=, or narrow the listing with ?prefix= or ?filter=", size, max))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body.Bytes())
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, msg)
}

// fail maps an error to its status: bad input 400, a denied or unknown
// token 403 (Nomad's "Permission denied", "ACL token not found", "ACL
// token expired"), unknown 404, failed enforced index 409, else 500.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ve *jobspec.ValidationError
	var bad *badRequest
	var aclBad *acl.BadRequestError
	switch {
	case errors.Is(err, acl.ErrPermissionDenied), errors.Is(err, acl.ErrTokenNotFound), errors.Is(err, acl.ErrTokenExpired):
		writeError(w, http.StatusForbidden, err.Error())
	case errors.As(err, &ve), errors.As(err, &bad), errors.Is(err, controlplane.ErrBadRequest),
		errors.As(err, &aclBad), errors.Is(err, acl.ErrDisabled):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, storage.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, storage.ErrConflict):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, storage.ErrWrongNode):
		writeError(w, http.StatusForbidden, err.Error())
	default:
		s.log.Error("request failed", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// badRequest is a client error found by the API layer itself.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func badRequestf(format string, args ...any) error {
	return &badRequest{msg: fmt.Sprintf(format, args...)}
}

// Query parameters.

func namespaceOf(r *http.Request) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	return structs.DefaultNamespace
}

func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequestf("query parameter %q: %q is not a boolean", name, v)
	}
	return b, nil
}

// blockingParams reads ?index= and ?wait= (a Go duration or a number of
// seconds, as Nomad).
func (s *Server) blockingParams(r *http.Request) (uint64, time.Duration, error) {
	q := r.URL.Query()
	var min uint64
	if v := q.Get("index"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, badRequestf("query parameter \"index\": %q is not an index", v)
		}
		min = n
	}
	wait := 5 * time.Minute
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, 0, badRequestf("query parameter \"wait\": %q is not a duration with a unit (for example 30s or 5m)", v)
		}
		if d <= 0 {
			return 0, 0, badRequestf("query parameter \"wait\": must be positive (got %s)", v)
		}
		wait = d
	}
	if wait > s.cfg.MaxWait {
		wait = s.cfg.MaxWait
	}
	return min, wait, nil
}

// deadlineMargin is the time a blocking query keeps before its request's
// context deadline to read and write its answer.
const deadlineMargin = 2 * time.Second

// query answers a read, blocking while ?index= is not passed: fn computes
// the response and the index it reflects (the max index of tables). With
// no ?index=, fn runs once.
func (s *Server) query(w http.ResponseWriter, r *http.Request, tables []string, fn func(ctx context.Context) (any, error)) {
	min, wait, err := s.blockingParams(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	if dl, ok := ctx.Deadline(); ok {
		// Answer before the request's own deadline (on AWS, the api
		// function's timeout): cut off by it, a blocking query would
		// answer nothing, which Lambda's adapter turns into a 500.
		if left := time.Until(dl) - deadlineMargin; left < wait {
			wait = max(left, 0)
		}
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		var changed <-chan struct{}
		if s.cfg.Watcher != nil && min > 0 {
			changed = s.cfg.Watcher.WatchTables(tables...)
		}
		idx, err := s.tableIndex(ctx, tables)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if min == 0 || idx > min {
			out, err := fn(ctx)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			setMeta(w, idx)
			if p, ok := out.(*listPage); ok {
				if p.next != "" {
					w.Header().Set("X-Nomad-NextToken", p.next)
				}
				out = p.items
			}
			s.writeRead(w, r, out)
			return
		}
		if changed == nil {
			t := time.NewTimer(s.cfg.PollInterval)
			c := make(chan struct{})
			go func() { <-t.C; close(c) }()
			changed = c
		}
		select {
		case <-changed:
		case <-deadline.C:
			min = 0 // answer with what there is
		case <-ctx.Done():
			return
		}
	}
}

func (s *Server) tableIndex(ctx context.Context, tables []string) (uint64, error) {
	var max uint64
	for _, t := range tables {
		i, err := s.cfg.State.Index(ctx, t)
		if err != nil {
			return 0, err
		}
		if i > max {
			max = i
		}
	}
	return max, nil
}
