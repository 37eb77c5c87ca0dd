package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/zap"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// AllocRestartRequest is the body of PUT /v1/client/allocation/:id/restart
// (Nomad's AllocationRestartRequest): TaskName restarts one task; without
// it (or with AllTasks) every running task restarts.
type AllocRestartRequest struct {
	TaskName string
	AllTasks bool
}

// AllocSignalRequest is the body of PUT /v1/client/allocation/:id/signal
// (Nomad's AllocSignalRequest): Signal (default SIGKILL) to Task, or to
// every running task without one.
type AllocSignalRequest struct {
	Task   string
	Signal string
}

// clientRestart serves PUT|POST /v1/client/allocation/:id/restart.
func (s *Server) clientRestart(w http.ResponseWriter, r *http.Request, node ClientNode, allocID string) {
	var req AllocRestartRequest
	if err := decodeOptionalBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := node.RestartAlloc(r.Context(), allocID, req.TaskName, req.AllTasks); err != nil {
		s.clientFail(w, r, err)
		return
	}
	setMeta(w, 0)
	writeJSON(w, r, http.StatusOK, map[string]any{})
}

// clientSignal serves PUT|POST /v1/client/allocation/:id/signal.
func (s *Server) clientSignal(w http.ResponseWriter, r *http.Request, node ClientNode, allocID string) {
	var req AllocSignalRequest
	if err := decodeOptionalBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := node.SignalAlloc(r.Context(), allocID, req.Task, req.Signal); err != nil {
		s.clientFail(w, r, err)
		return
	}
	setMeta(w, 0)
	writeJSON(w, r, http.StatusOK, map[string]any{})
}

// clientAllocStats serves GET /v1/client/allocation/:id/stats (?task=):
// Nomad's AllocResourceUsage.
func (s *Server) clientAllocStats(w http.ResponseWriter, r *http.Request, node ClientNode, allocID string) {
	u, err := node.AllocStats(r.Context(), allocID, r.URL.Query().Get("task"))
	if err != nil {
		s.clientFail(w, r, err)
		return
	}
	setMeta(w, 0)
	writeJSON(w, r, http.StatusOK, u)
}

// clientAllocChecks serves GET /v1/client/allocation/:id/checks: the
// latest result of each service check of the alloc, by check ID, as
// Nomad's (an empty object for an alloc without checks).
func (s *Server) clientAllocChecks(w http.ResponseWriter, r *http.Request, node ClientNode, allocID string) {
	res, err := node.AllocChecks(r.Context(), allocID)
	if err != nil {
		s.clientFail(w, r, err)
		return
	}
	if res == nil {
		res = map[string]*structs.CheckQueryResult{}
	}
	setMeta(w, 0)
	writeJSON(w, r, http.StatusOK, res)
}

// clientHostStatsRoute serves GET /v1/client/stats (?node_id=): the
// node's HostStats, here when the node is this process's (or no node_id
// is given on a client), forwarded to the node otherwise.
func (s *Server) clientHostStatsRoute(w http.ResponseWriter, r *http.Request) {
	nodeID := r.URL.Query().Get("node_id")
	local := s.client != nil && (nodeID == "" || nodeID == s.client.NodeID())
	switch {
	case s.cfg.State == nil:
		if err := s.authenticateClient(r, ""); err != nil {
			s.clientFail(w, r, err)
			return
		}
		if s.client == nil || (nodeID != "" && nodeID != s.client.NodeID()) {
			writeError(w, http.StatusNotFound, fmt.Sprintf("node %q is not this client's node", nodeID))
			return
		}
	case local:
	case nodeID == "":
		s.fail(w, r, badRequestf("query parameter \"node_id\": required on an agent that is not a client"))
		return
	default:
		n, err := s.nodeByIDOrPrefix(r.Context(), nodeID)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if s.client != nil && n.ID == s.client.NodeID() {
			break
		}
		s.forwardToNode(w, r, n.ID, nil)
		return
	}
	hs, err := s.client.HostStats(r.Context())
	if err != nil {
		s.clientFail(w, r, err)
		return
	}
	setMeta(w, 0)
	writeJSON(w, r, http.StatusOK, hs)
}

// Nomad's exec frames (api.ExecStreamingInput / ExecStreamingOutput):
// JSON text messages, data base64 in JSON.
type (
	execIOOperation struct {
		Data  []byte `json:"data,omitempty"`
		Close bool   `json:"close,omitempty"`
	}
	execTerminalSize struct {
		Height int `json:"height,omitempty"`
		Width  int `json:"width,omitempty"`
	}
	execInput struct {
		Stdin   *execIOOperation  `json:"stdin,omitempty"`
		TTYSize *execTerminalSize `json:"tty_size,omitempty"`
	}
	execExitResult struct {
		ExitCode int `json:"exit_code"`
	}
	execOutput struct {
		Stdout *execIOOperation `json:"stdout,omitempty"`
		Stderr *execIOOperation `json:"stderr,omitempty"`
		Exited bool             `json:"exited,omitempty"`
		Result *execExitResult  `json:"result,omitempty"`
	}
)

// execHeartbeat is how often an exec session sends an empty frame while
// idle (Nomad's client sends its own every 10 s).
const execHeartbeat = 10 * time.Second

var execUpgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 4096,
	// The API has no browser sessions to protect (tokens are headers), so
	// any origin may connect, as Nomad's handler allows.
	CheckOrigin: func(*http.Request) bool { return true },
}

// clientExec serves GET /v1/client/allocation/:id/exec: Nomad's websocket
// exec protocol. Query: command (a JSON array, required), task
// (required), tty. Input frames carry stdin (data, or close) and terminal
// sizes; output frames stdout and stderr, then {"exited":true,"result":
// {"exit_code":N}} before a normal close. Errors found before the upgrade
// are plain HTTP answers (404 unknown alloc, 400 bad task or command);
// later ones close the socket with the message.
func (s *Server) clientExec(w http.ResponseWriter, r *http.Request, node ClientNode, allocID string) {
	q := r.URL.Query()
	task := q.Get("task")
	if task == "" {
		s.fail(w, r, badRequestf("query parameter \"task\": must name the task"))
		return
	}
	var command []string
	if err := json.Unmarshal([]byte(q.Get("command")), &command); err != nil || len(command) == 0 || command[0] == "" {
		s.fail(w, r, badRequestf("query parameter \"command\": must be a JSON array naming the command and its arguments, as [\"/bin/sh\",\"-c\",\"ls\"]"))
		return
	}
	tty, err := boolParam(r, "tty")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := node.CheckTask(r.Context(), allocID, task); err != nil {
		s.clientFail(w, r, err)
		return
	}
	conn, err := execUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	defer conn.Close()
	sess := newExecSession(conn)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go sess.readInput(ctx, cancel)
	go sess.heartbeat(ctx)
	opts := &drivers.ExecOptions{
		Command: command, Tty: tty, Stdin: sess.stdinR, Resize: sess.resize,
		Stdout: sess.writer(func(b []byte) execOutput { return execOutput{Stdout: &execIOOperation{Data: b}} }),
		Stderr: sess.writer(func(b []byte) execOutput { return execOutput{Stderr: &execIOOperation{Data: b}} }),
	}
	code, err := node.ExecAlloc(ctx, allocID, task, opts)
	// Unblock a stdin frame still waiting for a reader.
	_ = sess.stdinR.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		s.log.Info("exec failed", zap.String("alloc_id", allocID), zap.String("task", task), zap.Error(err))
		sess.close(websocket.CloseInternalServerErr, err.Error())
		return
	}
	_ = sess.send(execOutput{Exited: true, Result: &execExitResult{ExitCode: code}})
	sess.close(websocket.CloseNormalClosure, "")
}

// execSession is one exec websocket: writes are serialized; input frames
// feed a pipe (stdin) and a channel (terminal sizes).
type execSession struct {
	conn   *websocket.Conn
	mu     sync.Mutex
	stdinR *io.PipeReader
	stdinW *io.PipeWriter
	resize chan drivers.TerminalSize
}

func newExecSession(conn *websocket.Conn) *execSession {
	pr, pw := io.Pipe()
	return &execSession{conn: conn, stdinR: pr, stdinW: pw, resize: make(chan drivers.TerminalSize, 4)}
}

func (e *execSession) send(v execOutput) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	_ = e.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	return e.conn.WriteJSON(v)
}

func (e *execSession) close(code int, text string) {
	if len(text) > 120 { // a close frame's payload is at most 125 bytes
		text = text[:120]
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_ = e.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
}

// writer is an io.Writer that sends each write as one frame.
func (e *execSession) writer(frame func([]byte) execOutput) io.Writer {
	return writerFunc(func(b []byte) (int, error) {
		if len(b) == 0 {
			return 0, nil
		}
		if err := e.send(frame(append([]byte(nil), b...))); err != nil {
			return 0, err
		}
		return len(b), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// readInput reads the client's frames until the socket closes: stdin
// data into the pipe (close ends it), terminal sizes to resize. A socket
// that closes ends the command (cancel).
func (e *execSession) readInput(ctx context.Context, cancel context.CancelFunc) {
	defer cancel()
	defer e.stdinW.Close()
	stdinClosed := false
	for {
		var in execInput
		if err := e.conn.ReadJSON(&in); err != nil {
			return
		}
		switch {
		case in.Stdin != nil && !stdinClosed:
			if len(in.Stdin.Data) > 0 {
				if _, err := e.stdinW.Write(in.Stdin.Data); err != nil {
					stdinClosed = true // the command stopped reading
				}
			}
			if in.Stdin.Close {
				stdinClosed = true
				_ = e.stdinW.Close()
			}
		case in.TTYSize != nil:
			select {
			case e.resize <- drivers.TerminalSize{Height: in.TTYSize.Height, Width: in.TTYSize.Width}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// heartbeat sends an empty frame while the session is idle.
func (e *execSession) heartbeat(ctx context.Context) {
	t := time.NewTicker(execHeartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = e.send(execOutput{})
		}
	}
}
