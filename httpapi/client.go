package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/storage"
	"github.com/drover-sched/drover/structs"
)

// ClientNode is a node agent's side of Nomad's client routes
// (/v1/client/allocation/:id/..., /v1/client/fs/..., /v1/client/stats),
// for an agent that runs the node in its own process. *nodeagent.Agent
// implements it. Errors follow one convention: an alloc or file that is
// not there wraps fs.ErrNotExist (404), a path that leaves the alloc dir
// or reaches a secrets dir wraps fs.ErrPermission (403), bad input (an
// unknown task, a task not running, a bad signal, a directory where a
// file is needed) wraps fs.ErrInvalid (400).
type ClientNode interface {
	ClientFS
	// NodeID is the node's ID.
	NodeID() string
	// RestartAlloc restarts task, or every running task when task is "".
	RestartAlloc(ctx context.Context, allocID, task string, allTasks bool) error
	// SignalAlloc signals task, or every running task when task is "".
	SignalAlloc(ctx context.Context, allocID, task, signal string) error
	// CheckTask reports whether task of allocID runs here (before an exec
	// is upgraded to a websocket).
	CheckTask(ctx context.Context, allocID, task string) error
	// ExecAlloc runs a command in task's context and returns its exit code.
	ExecAlloc(ctx context.Context, allocID, task string, opts *drivers.ExecOptions) (int, error)
	// AllocStats samples the resource use of the alloc's running tasks
	// (of task alone when named).
	AllocStats(ctx context.Context, allocID, task string) (*structs.AllocResourceUsage, error)
	// AllocChecks returns the latest result of each service check of
	// the alloc, by check ID (empty without checks).
	AllocChecks(ctx context.Context, allocID string) (map[string]*structs.CheckQueryResult, error)
	// HostStats samples the node's resource use.
	HostStats(ctx context.Context) (*structs.HostStats, error)
	// StatFile, ListFiles and OpenFile read the alloc dir (paths
	// relative to its root); StreamFile follows one file.
	StatFile(ctx context.Context, allocID, path string) (*structs.AllocFileInfo, error)
	ListFiles(ctx context.Context, allocID, path string) ([]*structs.AllocFileInfo, error)
	OpenFile(ctx context.Context, allocID, path string) (*os.File, error)
	StreamFile(ctx context.Context, allocID, path, origin string, offset int64,
		emit func(file string, offset int64, data []byte, event string) error) error
}

// HandleClient serves the client routes of node, which runs in this
// process (the dev agent, or a server that is also a client): requests for
// its allocs are answered here, others are forwarded to their node.
func (s *Server) HandleClient(node ClientNode) {
	s.client = node
}

// clientRoute is one client route: its mux pattern and handler.
type clientRoute struct {
	pattern string
	handler http.HandlerFunc
}

// clientRouteTable lists Nomad's client routes. Each resolves where the
// alloc (or node) runs: here, or on another node it is forwarded to.
func (s *Server) clientRouteTable() []clientRoute {
	var t []clientRoute
	add := func(pattern string, h http.HandlerFunc) { t = append(t, clientRoute{pattern, h}) }
	for _, method := range []string{"PUT", "POST"} {
		add(method+" /v1/client/allocation/{id}/restart", s.onAllocNode("id", s.clientRestart))
		add(method+" /v1/client/allocation/{id}/signal", s.onAllocNode("id", s.clientSignal))
	}
	add("GET /v1/client/allocation/{id}/exec", s.onAllocNode("id", s.clientExec))
	add("GET /v1/client/allocation/{id}/stats", s.onAllocNode("id", s.clientAllocStats))
	add("GET /v1/client/allocation/{id}/checks", s.onAllocNode("id", s.clientAllocChecks))
	add("GET /v1/client/stats", s.clientHostStatsRoute)
	add("GET /v1/client/fs/logs/{alloc_id}", s.onAllocNode("alloc_id", s.clientLogs))
	add("GET /v1/client/fs/ls/{alloc_id}", s.onAllocNode("alloc_id", s.clientLs))
	add("GET /v1/client/fs/stat/{alloc_id}", s.onAllocNode("alloc_id", s.clientStat))
	add("GET /v1/client/fs/readat/{alloc_id}", s.onAllocNode("alloc_id", s.clientReadAt))
	add("GET /v1/client/fs/cat/{alloc_id}", s.onAllocNode("alloc_id", s.clientCat))
	add("GET /v1/client/fs/stream/{alloc_id}", s.onAllocNode("alloc_id", s.clientStream))
	return t
}

// ClientRouteCapabilities declares what a caller of each client route
// needs, by mux pattern, as Nomad checks it: any one of the listed
// namespace capabilities in the namespace of the allocation the path names
// (path value "id" or "alloc_id"), or "node:read" for the host's stats.
// It is the client routes' part of the ACL capability table; a test keeps
// it in step with clientRouteTable. The forward-key route needs nothing:
// it hands out a public key.
var ClientRouteCapabilities = map[string][]string{
	"PUT /v1/client/allocation/{id}/restart":  {"alloc-lifecycle"},
	"POST /v1/client/allocation/{id}/restart": {"alloc-lifecycle"},
	"PUT /v1/client/allocation/{id}/signal":   {"alloc-lifecycle"},
	"POST /v1/client/allocation/{id}/signal":  {"alloc-lifecycle"},
	"GET /v1/client/allocation/{id}/exec":     {"alloc-exec"},
	"GET /v1/client/allocation/{id}/stats":    {"read-job"},
	"GET /v1/client/allocation/{id}/checks":   {"read-job"},
	"GET /v1/client/stats":                    {"node:read"},
	"GET /v1/client/fs/logs/{alloc_id}":       {"read-logs", "read-fs"},
	"GET /v1/client/fs/ls/{alloc_id}":         {"read-fs"},
	"GET /v1/client/fs/stat/{alloc_id}":       {"read-fs"},
	"GET /v1/client/fs/readat/{alloc_id}":     {"read-fs"},
	"GET /v1/client/fs/cat/{alloc_id}":        {"read-fs"},
	"GET /v1/client/fs/stream/{alloc_id}":     {"read-fs"},
}

// clientRoutes registers the client routes.
func (s *Server) clientRoutes() {
	for _, r := range s.clientRouteTable() {
		s.mux.HandleFunc(r.pattern, r.handler)
	}
}

// clientHandler serves a client route on the node that runs the alloc.
type clientHandler func(w http.ResponseWriter, r *http.Request, node ClientNode, allocID string)

// onAllocNode serves h here when the alloc runs on this process's node;
// on a server it forwards the request to the alloc's node otherwise, and
// answers 404 for an alloc the state does not know.
func (s *Server) onAllocNode(param string, h clientHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue(param)
		if s.cfg.State == nil { // a client agent's own listener
			if s.client == nil {
				writeError(w, http.StatusNotImplemented, "this agent runs no node")
				return
			}
			if err := s.authenticateClient(r, id); err != nil {
				s.clientFail(w, r, err)
				return
			}
			h(w, r, s.client, id)
			return
		}
		alloc, err := s.allocByID(r.Context(), id)
		if err != nil {
			s.clientFail(w, r, err)
			return
		}
		if s.client != nil && alloc.NodeID == s.client.NodeID() {
			h(w, r, s.client, alloc.ID)
			return
		}
		s.forwardToNode(w, r, alloc.NodeID, func(u *url.URL) {
			// The node knows the alloc by its full ID.
			u.Path = replaceLast(u.Path, id, alloc.ID)
		})
	}
}

// allocByID finds an alloc by ID or unique prefix.
func (s *Server) allocByID(ctx context.Context, id string) (*structs.Allocation, error) {
	a, err := s.cfg.State.Alloc(ctx, id)
	if err == nil || !errors.Is(err, storage.ErrNotFound) {
		return a, err
	}
	matches, lerr := s.cfg.State.AllocsByPrefix(ctx, "*", id)
	if lerr != nil {
		return nil, lerr
	}
	if len(matches) == 1 {
		return matches[0], nil
	}
	if len(matches) > 1 {
		return nil, badRequestf("allocation ID prefix %q matches %d allocations; give more of the ID", id, len(matches))
	}
	return nil, fmt.Errorf("unknown allocation %q: %w", id, storage.ErrNotFound)
}

func replaceLast(p, old, repl string) string {
	if old == repl || old == "" {
		return p
	}
	for i := len(p) - len(old); i >= 0; i-- {
		if p[i:i+len(old)] == old {
			return p[:i] + repl + p[i+len(old):]
		}
	}
	return p
}

// forwardToNode proxies the request (websocket upgrades too) to the HTTP
// address the node advertises, signed so that the node knows the server
// sent it (see ForwardSigner). A node that is down, advertises no address
// or cannot be reached is a 502 naming it.
func (s *Server) forwardToNode(w http.ResponseWriter, r *http.Request, nodeID string, rewrite func(*url.URL)) {
	node, err := s.cfg.State.Node(r.Context(), nodeID)
	if err != nil {
		s.clientFail(w, r, fmt.Errorf("node %s of the allocation: %w", nodeID, err))
		return
	}
	switch {
	case node.HTTPAddr == "":
		writeError(w, http.StatusBadGateway, fmt.Sprintf("node %s (%s) advertises no HTTP address: its client routes cannot be reached "+
			"(a client agent started before client routes existed? restart it)", node.Name, node.ID))
		return
	case node.Status == structs.NodeStatusDown:
		writeError(w, http.StatusBadGateway, fmt.Sprintf("node %s (%s) at %s is down", node.Name, node.ID, node.HTTPAddr))
		return
	case s.cfg.ForwardSigner == nil:
		writeError(w, http.StatusNotImplemented, fmt.Sprintf("this agent cannot forward to node %s (%s): no forward key; reach the node at http://%s",
			node.Name, node.ID, node.HTTPAddr))
		return
	}
	target := &url.URL{Scheme: "http", Host: node.HTTPAddr}
	if s.forward != nil {
		target.Scheme = "https"
	}
	proxy := &httputil.ReverseProxy{
		Transport: s.forward,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.URL.Path, pr.Out.URL.RawPath = pr.In.URL.Path, ""
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			if rewrite != nil {
				rewrite(pr.Out.URL)
			}
			pr.Out.Host = node.HTTPAddr
			// The node trusts the server's signature, not the user's
			// token, which stays with the server.
			pr.Out.Header.Del("X-Nomad-Token")
			pr.Out.Header.Del("Authorization")
			// This server compresses the answer itself when asked.
			pr.Out.Header.Del("Accept-Encoding")
			s.cfg.ForwardSigner.Sign(pr.Out, node.ID)
		},
		FlushInterval: -1, // stream logs and frames as they come
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.Warn("forward to node failed", zap.String("node_id", node.ID), zap.String("http_addr", node.HTTPAddr), zap.Error(err))
			if r.Context().Err() != nil {
				return
			}
			writeError(w, http.StatusBadGateway, fmt.Sprintf("node %s (%s) at %s is unreachable: %v", node.Name, node.ID, node.HTTPAddr, err))
		},
	}
	proxy.ServeHTTP(w, r)
}

// clientFail answers a client route's error: fs sentinels as ClientNode
// documents them, the rest as fail does.
func (s *Server) clientFail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, fs.ErrPermission):
		writeError(w, http.StatusForbidden, err.Error())
	case errors.Is(err, fs.ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, errUnauthenticated):
		writeError(w, http.StatusForbidden, err.Error())
	case errors.Is(err, errAuthUnavailable):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		s.fail(w, r, err)
	}
}
