package checks

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func hostPort(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestHTTPCheck: a 2xx passes, a 429 warns, a 500 fails; method, path,
// headers and body reach the server; a slow answer times out.
func TestHTTPCheck(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	defer close(block)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			b, _ := io.ReadAll(r.Body)
			if r.Method != http.MethodPost || r.URL.RawQuery != "a=1" || r.Header.Get("X-Probe") != "yes" || string(b) != "ping" {
				http.Error(w, "unexpected request "+r.Method+" "+r.URL.String()+" "+r.Header.Get("X-Probe")+" "+string(b), http.StatusBadRequest)
				return
			}
			_, _ = io.WriteString(w, "all good")
		case "/busy":
			w.WriteHeader(http.StatusTooManyRequests)
		case "/slow":
			select {
			case <-block:
			case <-r.Context().Done():
			}
		default:
			http.Error(w, "broken", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	addr := hostPort(t, srv)
	ctx := context.Background()

	r := Run(ctx, &Check{Type: TypeHTTP, Address: addr, Path: "/ok?a=1", Method: http.MethodPost,
		Header: map[string][]string{"X-Probe": {"yes"}}, Body: "ping", Timeout: 5 * time.Second}, nil)
	if r.Status != Success || r.StatusCode != 200 || r.Output != "all good" {
		t.Fatalf("ok: %+v", r)
	}
	if r := Run(ctx, &Check{Type: TypeHTTP, Address: addr, Path: "/busy"}, nil); r.Status != Warning || r.StatusCode != 429 {
		t.Fatalf("busy: %+v", r)
	}
	if r := Run(ctx, &Check{Type: TypeHTTP, Address: addr, Path: "/broken"}, nil); r.Status != Failure || r.StatusCode != 500 || !strings.Contains(r.Output, "broken") {
		t.Fatalf("broken: %+v", r)
	}
	start := time.Now()
	r = Run(ctx, &Check{Type: TypeHTTP, Address: addr, Path: "/slow", Timeout: 200 * time.Millisecond}, nil)
	if r.Status != Failure || !strings.Contains(r.Output, "timed out after 200ms") {
		t.Fatalf("slow: %+v", r)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("the timeout did not bound the check")
	}
}

// TestHTTPCheckRefused: nothing listening is a failure that says why.
func TestHTTPCheckRefused(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
	r := Run(context.Background(), &Check{Type: TypeHTTP, Address: addr, Path: "/"}, nil)
	if r.Status != Failure || !strings.Contains(r.Output, addr) {
		t.Fatalf("%+v", r)
	}
}

// closedAddr returns a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// TestTCPCheck: a listener passes, a closed port fails, an unroutable
// address times out.
func TestTCPCheck(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	ctx := context.Background()
	if r := Run(ctx, &Check{Type: TypeTCP, Address: l.Addr().String()}, nil); r.Status != Success {
		t.Fatalf("listening: %+v", r)
	}
	if r := Run(ctx, &Check{Type: TypeTCP, Address: closedAddr(t)}, nil); r.Status != Failure {
		t.Fatalf("closed: %+v", r)
	}
	// A listener whose accept queue is full drops new handshakes: the
	// dial hangs and the check's timeout ends it.
	full := fullListener(t)
	start := time.Now()
	r := Run(ctx, &Check{Type: TypeTCP, Address: full, Timeout: 300 * time.Millisecond}, nil)
	if r.Status != Failure || !strings.Contains(r.Output, "timed out after 300ms") {
		t.Fatalf("full backlog: %+v", r)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("the timeout did not bound the check")
	}
}

// TestScriptCheck: exit 0 passes, 1 warns, others fail, the command and
// args reach the task's exec, its output is kept; an exec that hangs is
// cut at the timeout; no exec at all fails.
func TestScriptCheck(t *testing.T) {
	t.Parallel()
	var got []string
	exec := func(code int, out string) Execer {
		return func(ctx context.Context, cmd []string) (*ExecResult, error) {
			got = cmd
			return &ExecResult{Output: []byte(out), ExitCode: code}, nil
		}
	}
	ctx := context.Background()
	c := &Check{Type: TypeScript, Command: "/bin/check", Args: []string{"-v", "x"}}
	if r := Run(ctx, c, exec(0, "fine")); r.Status != Success || r.Output != "fine" || strings.Join(got, " ") != "/bin/check -v x" {
		t.Fatalf("0: %+v %q", r, got)
	}
	if r := Run(ctx, c, exec(1, "meh")); r.Status != Warning || r.StatusCode != 1 {
		t.Fatalf("1: %+v", r)
	}
	if r := Run(ctx, c, exec(2, strings.Repeat("x", 2*MaxOutput))); r.Status != Failure || r.StatusCode != 2 || len(r.Output) != MaxOutput {
		t.Fatalf("2: status %s code %d len %d", r.Status, r.StatusCode, len(r.Output))
	}
	hang := func(ctx context.Context, cmd []string) (*ExecResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if r := Run(ctx, &Check{Type: TypeScript, Command: "sleep", Timeout: 100 * time.Millisecond}, hang); r.Status != Failure || !strings.Contains(r.Output, "timed out") {
		t.Fatalf("hang: %+v", r)
	}
	failing := func(context.Context, []string) (*ExecResult, error) { return nil, errors.New("task not running") }
	if r := Run(ctx, c, failing); r.Status != Failure || !strings.Contains(r.Output, "task not running") {
		t.Fatalf("exec error: %+v", r)
	}
	if r := Run(ctx, c, nil); r.Status != Failure {
		t.Fatalf("no exec: %+v", r)
	}
	if r := Run(ctx, &Check{Type: "grpc"}, nil); r.Status != Failure || !strings.Contains(r.Output, "grpc") {
		t.Fatalf("unknown type: %+v", r)
	}
}

// fullListener returns the address of a socket that listens with a
// backlog of 0 and never accepts, after filling its queue.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	// Fill the accept queue: connections that complete their handshake
	// until one no longer does.
	for i := 0; i < 8; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return addr
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	t.Skip("the kernel accepted every handshake on a full backlog: cannot make a TCP check time out here")
	return addr
}
