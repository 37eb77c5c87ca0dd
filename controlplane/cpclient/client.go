// Package cpclient is the node agent's HTTP client of the control plane:
// it implements nodeagent.ControlPlane over the server's node-agent routes
// (/v1/nodeagent/...), for `drover agent -client -servers ADDR`. Requests
// that fail on one server are tried on the next.
package cpclient

import (
	"bytes"
	"context"
	"crypto/tls"
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

	"github.com/drover-sched/drover/httpapi"
	"github.com/drover-sched/drover/nodeagent"
	"github.com/drover-sched/drover/structs"
)

// Client talks to one or more drover servers.
type Client struct {
	servers []string
	http    *http.Client
	// Sign, when set, signs each request before it is sent (AWS SigV4
	// for IAM-authenticated node routes).
	Sign func(r *http.Request, body []byte) error
	// secret is the node's secret, sent as X-Nomad-Token (WithNodeSecret).
	secret string

	mu   sync.Mutex
	next int
}

var _ nodeagent.ControlPlane = (*Client)(nil)
var _ nodeagent.ServiceRegistry = (*Client)(nil)

// Option configures a Client.
type Option func(*Client, *options)

type options struct{ tls *tls.Config }

// WithTLS makes the client speak HTTPS with cfg (the CA that verifies the
// servers, the node's client certificate when servers require one);
// addresses without a scheme become https://.
func WithTLS(cfg *tls.Config) Option {
	return func(_ *Client, o *options) { o.tls = cfg }
}

// WithNodeSecret sends the node's secret (nodeagent.LoadOrCreateNodeSecret)
// with every request as X-Nomad-Token, which the server checks against the
// secret the node registered with.
func WithNodeSecret(secret string) Option {
	return func(c *Client, _ *options) { c.secret = secret }
}

// New returns a client of the servers ("host:port" or URLs). It fails
// when none is given or one does not parse.
func New(servers []string, opts ...Option) (*Client, error) {
	if len(servers) == 0 {
		return nil, errors.New("cpclient: no server address")
	}
	c := &Client{http: &http.Client{Timeout: 30 * time.Second}}
	var o options
	for _, opt := range opts {
		opt(c, &o)
	}
	scheme := "http://"
	if o.tls != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = o.tls
		c.http.Transport = t
		scheme = "https://"
	}
	for _, s := range servers {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "://") {
			s = scheme + s
		}
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("cpclient: server address %q does not parse", s)
		}
		c.servers = append(c.servers, strings.TrimRight(u.String(), "/"))
	}
	if len(c.servers) == 0 {
		return nil, errors.New("cpclient: no server address")
	}
	return c, nil
}

// StatusError is a non-2xx answer of the server.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("server answered %d: %s", e.Code, strings.TrimSpace(e.Body))
}

// Is makes an answer that asking again will not change match
// nodeagent.ErrPermanent: the request was refused (400, 401, 403) or names
// something the server does not know (404, 410).
func (e *StatusError) Is(target error) bool {
	if target != nodeagent.ErrPermanent {
		return false
	}
	switch e.Code {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusGone:
		return true
	}
	return false
}

// do sends the request to a server (rotating on transport errors and 5xx)
// and decodes the answer into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
	}
	var lastErr error
	for range c.servers {
		base := c.server()
		req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if c.secret != "" {
			req.Header.Set("X-Nomad-Token", c.secret)
		}
		if c.Sign != nil {
			if err := c.Sign(req, body); err != nil {
				return fmt.Errorf("sign %s %s: %w", method, path, err)
			}
		}
		resp, err := c.http.Do(req)
		if err != nil {
			lastErr = fmt.Errorf("%s %s%s: %w", method, base, path, err)
			c.rotate()
			continue
		}
		data, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			lastErr = fmt.Errorf("%s %s%s: %w", method, base, path, &StatusError{Code: resp.StatusCode, Body: string(data)})
			c.rotate()
			continue
		}
		if resp.StatusCode >= 300 {
			return fmt.Errorf("%s %s%s: %w", method, base, path, &StatusError{Code: resp.StatusCode, Body: string(data)})
		}
		if rerr != nil {
			return fmt.Errorf("read %s %s: %w", method, path, rerr)
		}
		if out != nil && len(data) > 0 {
			if err := json.Unmarshal(data, out); err != nil {
				return fmt.Errorf("decode %s %s: %w", method, path, err)
			}
		}
		return nil
	}
	return lastErr
}

func (c *Client) server() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[c.next%len(c.servers)]
}

func (c *Client) rotate() {
	c.mu.Lock()
	c.next++
	c.mu.Unlock()
}

// RegisterNode implements nodeagent.ControlPlane.
func (c *Client) RegisterNode(ctx context.Context, node *structs.Node) (time.Duration, error) {
	var out httpapi.HeartbeatResponse
	if err := c.do(ctx, http.MethodPut, "/v1/nodeagent/register", &httpapi.NodeRegisterRequest{Node: node}, &out); err != nil {
		return 0, err
	}
	return out.HeartbeatTTL, nil
}

// Heartbeat implements nodeagent.ControlPlane.
func (c *Client) Heartbeat(ctx context.Context, nodeID string) (time.Duration, error) {
	var out httpapi.HeartbeatResponse
	if err := c.do(ctx, http.MethodPut, "/v1/nodeagent/"+url.PathEscape(nodeID)+"/heartbeat", nil, &out); err != nil {
		return 0, err
	}
	return out.HeartbeatTTL, nil
}

// AssignmentIndex implements nodeagent.ControlPlane.
func (c *Client) AssignmentIndex(ctx context.Context, nodeID string) (uint64, error) {
	var out httpapi.AssignmentIndexResponse
	if err := c.do(ctx, http.MethodGet, "/v1/nodeagent/"+url.PathEscape(nodeID)+"/assignment-index", nil, &out); err != nil {
		return 0, err
	}
	return out.Index, nil
}

// Assignments implements nodeagent.ControlPlane.
func (c *Client) Assignments(ctx context.Context, nodeID string) ([]*structs.Allocation, uint64, error) {
	var out httpapi.AssignmentsResponse
	if err := c.do(ctx, http.MethodGet, "/v1/nodeagent/"+url.PathEscape(nodeID)+"/assignments", nil, &out); err != nil {
		return nil, 0, err
	}
	return out.Allocs, out.Index, nil
}

// UpdateAllocs implements nodeagent.ControlPlane.
func (c *Client) UpdateAllocs(ctx context.Context, nodeID string, updates []*structs.Allocation) error {
	return c.do(ctx, http.MethodPut, "/v1/nodeagent/"+url.PathEscape(nodeID)+"/allocs", &httpapi.AllocUpdateRequest{Allocs: updates}, nil)
}

// PreviousAlloc implements nodeagent.ControlPlane.
func (c *Client) PreviousAlloc(ctx context.Context, nodeID, allocID string) (*structs.Allocation, error) {
	var out httpapi.PreviousAllocResponse
	path := "/v1/nodeagent/" + url.PathEscape(nodeID) + "/alloc/" + url.PathEscape(allocID) + "/previous"
	if err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
		return nil, err
	}
	return out.Alloc, nil
}

// UpsertServiceRegistrations implements nodeagent.ServiceRegistry.
func (c *Client) UpsertServiceRegistrations(ctx context.Context, nodeID string, regs []*structs.ServiceRegistration) error {
	return c.do(ctx, http.MethodPut, "/v1/nodeagent/"+url.PathEscape(nodeID)+"/services", &httpapi.NodeServicesRequest{Services: regs}, nil)
}

// DeleteServiceRegistrations implements nodeagent.ServiceRegistry.
func (c *Client) DeleteServiceRegistrations(ctx context.Context, nodeID string, ids []string) error {
	return c.do(ctx, http.MethodPut, "/v1/nodeagent/"+url.PathEscape(nodeID)+"/services/deregister", &httpapi.NodeServicesDeregisterRequest{IDs: ids}, nil)
}

// ServiceRegistrations implements nodeagent.ServiceRegistry: a blocking
// read when minIndex > 0 (wait is kept under the client's timeout).
func (c *Client) ServiceRegistrations(ctx context.Context, nodeID, namespace, name string, minIndex uint64, wait time.Duration) ([]*structs.ServiceRegistration, uint64, error) {
	q := url.Values{"namespace": {namespace}}
	if name != "" {
		q.Set("name", name)
	}
	if minIndex > 0 && wait > 0 {
		q.Set("index", strconv.FormatUint(minIndex, 10))
		q.Set("wait", min(wait, 20*time.Second).String())
	}
	var out httpapi.NodeServicesResponse
	if err := c.do(ctx, http.MethodGet, "/v1/nodeagent/"+url.PathEscape(nodeID)+"/services?"+q.Encode(), nil, &out); err != nil {
		return nil, 0, err
	}
	return out.Services, out.Index, nil
}
