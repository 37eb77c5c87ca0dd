package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"strconv"

	"go.uber.org/zap"
)

// ClientFS is the node agent's side of Nomad's client file-system
// endpoints, for an agent that runs allocations in this process (the dev
// agent). *nodeagent.Agent implements it.
type ClientFS interface {
	// StreamLogs streams a task's stdout or stderr (logType) from offset
	// bytes after the start or before the end (origin "start" or "end")
	// of its rotated files, following new output when follow is set. It
	// calls emit once without data when the request is valid, then per
	// chunk (file relative to the alloc dir, offset in that file past the
	// chunk, data), and without data as a heartbeat while a followed
	// stream is idle. Unknown allocs and tasks are errors wrapping
	// fs.ErrNotExist; other errors before the first emit are bad input.
	StreamLogs(ctx context.Context, allocID, task, logType, origin string, offset int64, follow bool,
		emit func(file string, offset int64, data []byte) error) error
}

// logFrame is Nomad's StreamFrame: Data is base64 in JSON. A frame with
// no field set is a heartbeat.
type logFrame struct {
	Offset    int64  `json:",omitempty"`
	Data      []byte `json:",omitempty"`
	File      string `json:",omitempty"`
	FileEvent string `json:",omitempty"`
}

// HandleClientFS serves GET /v1/client/fs/logs/:alloc_id from fsys, with
// Nomad's query parameters: task (required), type (stdout or stderr,
// default stdout), follow, offset (bytes), origin (start or end) and
// plain. Without plain=true the body is a stream of JSON frames, as
// Nomad's CLI and Go client read it; with it, the raw bytes.
func (s *Server) HandleClientFS(fsys ClientFS) {
	s.clientFS = fsys
}

// clientLogsRoute serves the logs of the in-process node, or explains why
// there are none: only an agent that runs a node in-process (the dev
// agent) can read its alloc dirs.
func (s *Server) clientLogsRoute(w http.ResponseWriter, r *http.Request) {
	if s.clientFS == nil {
		writeError(w, http.StatusNotImplemented, "allocation logs are served by an agent that runs the node itself (drover agent -dev); "+
			"on a -client node read <data-dir>/client/alloc/<alloc id>/alloc/logs/")
		return
	}
	s.clientLogs(w, r, s.clientFS)
}

func (s *Server) clientLogs(w http.ResponseWriter, r *http.Request, fsys ClientFS) {
	q := r.URL.Query()
	allocID := r.PathValue("alloc_id")
	task := q.Get("task")
	if task == "" {
		writeError(w, http.StatusBadRequest, "query parameter \"task\": must name the task")
		return
	}
	logType := q.Get("type")
	if logType == "" {
		logType = "stdout"
	}
	if logType != "stdout" && logType != "stderr" {
		writeError(w, http.StatusBadRequest, "query parameter \"type\": must be \"stdout\" or \"stderr\", not "+strconv.Quote(logType))
		return
	}
	origin := q.Get("origin")
	if origin == "" {
		origin = "start"
	}
	if origin != "start" && origin != "end" {
		writeError(w, http.StatusBadRequest, "query parameter \"origin\": must be \"start\" or \"end\", not "+strconv.Quote(origin))
		return
	}
	var offset int64
	if v := q.Get("offset"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "query parameter \"offset\": "+strconv.Quote(v)+" is not a byte count")
			return
		}
		offset = n
	}
	follow, err := boolParam(r, "follow")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	plain, err := boolParam(r, "plain")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}

	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	started := false
	emit := func(file string, off int64, data []byte) error {
		if !started {
			started = true
			if plain {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			w.WriteHeader(http.StatusOK)
			if len(data) == 0 {
				_ = rc.Flush()
				return nil
			}
		}
		var err error
		switch {
		case plain && len(data) > 0:
			_, err = w.Write(data)
		case plain:
		case len(data) == 0:
			err = enc.Encode(logFrame{}) // heartbeat
		default:
			err = enc.Encode(logFrame{File: file, Offset: off, Data: data})
		}
		if err != nil {
			return err
		}
		if follow {
			if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
				return ferr
			}
		}
		return nil
	}
	err = fsys.StreamLogs(r.Context(), allocID, task, logType, origin, offset, follow, emit)
	switch {
	case err == nil:
	case !started && errors.Is(err, fs.ErrNotExist):
		writeError(w, http.StatusNotFound, err.Error())
	case !started:
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		// Mid-stream: the status is sent; the client sees the stream end.
		s.log.Debug("log stream ended early", zap.String("alloc_id", allocID), zap.String("task", task), zap.Error(err))
	}
}
