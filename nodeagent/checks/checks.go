// Package checks runs one service check once: an HTTP request, a TCP
// connection or a script in a task, each bounded by the check's timeout,
// and reports its outcome as Nomad's native checks do (success, failure,
// and a warning for the states Consul calls warning). It decides nothing
// about when checks run, how their results are kept or what a failing
// check leads to: that is the node agent's checks hook.
package checks

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Check types, as in a job's check block.
const (
	TypeHTTP   = "http"
	TypeTCP    = "tcp"
	TypeScript = "script"
)

// Status is the outcome of one run of a check.
type Status string

// Statuses: Success passes; Warning is a soft failure (a script's exit
// code 1, an HTTP 429), which on_update = "ignore_warnings" and
// check_restart's ignore_warnings treat as passing; Failure fails;
// Pending means the check has not run yet.
const (
	Success Status = "success"
	Warning Status = "warning"
	Failure Status = "failure"
	Pending Status = "pending"
)

// DefaultTimeout bounds a run whose check sets no timeout.
const DefaultTimeout = 5 * time.Second

// MaxOutput is how much of a check's output (response body, script
// output) a result keeps, in bytes.
const MaxOutput = 4 << 10

// Check is what one run of a check needs, already resolved against the
// alloc: the address to probe and the command to run.
type Check struct {
	// Type is TypeHTTP, TypeTCP or TypeScript.
	Type string
	// Address is host:port of the probed endpoint (http, tcp).
	Address string
	// Protocol is "http" (default) or "https" (http).
	Protocol string
	// Path is the request's path, with an optional query (http).
	Path string
	// Method is the request's method; "" means GET (http).
	Method string
	// Header holds the request's extra headers (http).
	Header map[string][]string
	// Body is the request's body (http).
	Body string
	// TLSSkipVerify skips the server certificate's verification and
	// TLSServerName overrides the name it is checked against (https).
	TLSSkipVerify bool
	TLSServerName string
	// Command and Args are the script to run in the task (script).
	Command string
	Args    []string
	// Timeout bounds the run; 0 means DefaultTimeout.
	Timeout time.Duration
}

// Result is the outcome of one run.
type Result struct {
	Status Status
	// StatusCode is the HTTP status (http) or the exit code (script).
	StatusCode int
	// Output is what the check said: the response body, the script's
	// output, or why it failed; at most MaxOutput bytes.
	Output string
}

// ExecResult is a script's outcome.
type ExecResult struct {
	Output   []byte
	ExitCode int
}

// Execer runs cmd inside the check's task (through its driver's exec).
// It must honour ctx.
type Execer func(ctx context.Context, cmd []string) (*ExecResult, error)

// Run runs c once and reports its outcome; exec runs script checks (nil:
// a script check fails). It never returns before the run ended or the
// timeout passed, and never panics on a bad check: an unknown type is a
// failure that says so.
func Run(ctx context.Context, c *Check, exec Execer) Result {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch c.Type {
	case TypeHTTP:
		return runHTTP(ctx, c, timeout)
	case TypeTCP:
		return runTCP(ctx, c, timeout)
	case TypeScript:
		return runScript(ctx, c, exec, timeout)
	}
	return Result{Status: Failure, Output: fmt.Sprintf("check type %q is not supported", c.Type)}
}

// URL is the address an HTTP check requests.
func (c *Check) URL() string {
	proto := c.Protocol
	if proto == "" {
		proto = "http"
	}
	path := c.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return proto + "://" + c.Address + path
}

func runHTTP(ctx context.Context, c *Check, timeout time.Duration) Result {
	method := c.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if c.Body != "" {
		body = strings.NewReader(c.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL(), body)
	if err != nil {
		return Result{Status: Failure, Output: fmt.Sprintf("http check: %v", err)}
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	tr := &http.Transport{
		DisableKeepAlives: true,
		Proxy:             nil,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: c.TLSSkipVerify, ServerName: c.TLSServerName}, //nolint:gosec // the job asks for it
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return Result{Status: Failure, Output: timeoutOutput(ctx, err, fmt.Sprintf("http check %s %s", method, req.URL), timeout)}
	}
	defer func() { _ = resp.Body.Close() }()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, MaxOutput))
	r := Result{StatusCode: resp.StatusCode, Output: string(out)}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		r.Status = Success
	case resp.StatusCode == http.StatusTooManyRequests:
		r.Status = Warning
	default:
		r.Status = Failure
	}
	if r.Output == "" {
		r.Output = fmt.Sprintf("http check %s %s: %s", method, req.URL, resp.Status)
	}
	return r
}

func runTCP(ctx context.Context, c *Check, timeout time.Duration) Result {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.Address)
	if err != nil {
		return Result{Status: Failure, Output: timeoutOutput(ctx, err, "tcp check "+c.Address, timeout)}
	}
	_ = conn.Close()
	return Result{Status: Success, Output: "tcp check " + c.Address + ": connected"}
}

func runScript(ctx context.Context, c *Check, exec Execer, timeout time.Duration) Result {
	if exec == nil {
		return Result{Status: Failure, Output: "script check: the task cannot run commands (its driver has no exec)"}
	}
	if c.Command == "" {
		return Result{Status: Failure, Output: "script check: no command"}
	}
	type outcome struct {
		res *ExecResult
		err error
	}
	ch := make(chan outcome, 1)
	go func() {
		res, err := exec(ctx, append([]string{c.Command}, c.Args...))
		ch <- outcome{res, err}
	}()
	var o outcome
	select {
	case o = <-ch:
	case <-ctx.Done():
		// A driver that ignores ctx must not hold the check past its
		// timeout; its goroutine ends when the driver returns.
		o = outcome{err: ctx.Err()}
	}
	if o.err != nil {
		return Result{Status: Failure, Output: timeoutOutput(ctx, o.err, "script check "+c.Command, timeout)}
	}
	out := o.res.Output
	if len(out) > MaxOutput {
		out = out[:MaxOutput]
	}
	r := Result{StatusCode: o.res.ExitCode, Output: string(out)}
	switch o.res.ExitCode {
	case 0:
		r.Status = Success
	case 1:
		r.Status = Warning
	default:
		r.Status = Failure
	}
	return r
}

// timeoutOutput says why a run failed, naming the timeout when it passed.
func timeoutOutput(ctx context.Context, err error, what string, timeout time.Duration) string {
	var ne net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Sprintf("%s: timed out after %v", what, timeout)
	}
	return fmt.Sprintf("%s: %v", what, err)
}
