package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"strconv"

	"go.uber.org/zap"
)

// ClientFS is the log part of ClientNode (Nomad's
// /v1/client/fs/logs). *nodeagent.Agent implements it.
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

// clientLogs serves GET /v1/client/fs/logs/:alloc_id with Nomad's query
// parameters: task (required), type (stdout or stderr, default stdout),
// follow, offset (bytes), origin (start or end) and plain. Without
// plain=true the body is a stream of JSON frames, as Nomad's CLI and Go
// client read it; with it, the raw bytes.
func (s *Server) clientLogs(w http.ResponseWriter, r *http.Request, fsys ClientNode, allocID string) {
	q := r.URL.Query()
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

// pathParam is the ?path= of an fs route ("/" when absent, as Nomad).
func pathParam(r *http.Request) string {
	if p := r.URL.Query().Get("path"); p != "" {
		return p
	}
	return "/"
}

// clientLs serves GET /v1/client/fs/ls/:alloc_id?path=: the directory's
// entries as Nomad's AllocFileInfo list.
func (s *Server) clientLs(w http.ResponseWriter, r *http.Request, node ClientNode, allocID string) {
	files, err := node.ListFiles(r.Context(), allocID, pathParam(r))
	if err != nil {
		s.clientFail(w, r, err)
		return
	}
	setMeta(w, 0)
	writeJSON(w, r, http.StatusOK, files)
}

// clientStat serves GET /v1/client/fs/stat/:alloc_id?path=.
func (s *Server) clientStat(w http.ResponseWriter, r *http.Request, node ClientNode, allocID string) {
	fi, err := node.StatFile(r.Context(), allocID, pathParam(r))
	if err != nil {
		s.clientFail(w, r, err)
		return
	}
	setMeta(w, 0)
	writeJSON(w, r, http.StatusOK, fi)
}

// clientCat serves GET /v1/client/fs/cat/:alloc_id?path=: the whole file.
func (s *Server) clientCat(w http.ResponseWriter, r *http.Request, node ClientNode, allocID string) {
	s.readFile(w, r, node, allocID, 0, -1)
}

// clientReadAt serves GET /v1/client/fs/readat/:alloc_id?path=&offset=&limit=:
// limit bytes from offset (limit <= 0: to the end), as Nomad.
func (s *Server) clientReadAt(w http.ResponseWriter, r *http.Request, node ClientNode, allocID string) {
	offset, err := int64Param(r, "offset")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	limit, err := int64Param(r, "limit")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if offset < 0 {
		s.fail(w, r, badRequestf("query parameter \"offset\": must not be negative"))
		return
	}
	if limit <= 0 {
		limit = -1
	}
	s.readFile(w, r, node, allocID, offset, limit)
}

func (s *Server) readFile(w http.ResponseWriter, r *http.Request, node ClientNode, allocID string, offset, limit int64) {
	f, err := node.OpenFile(r.Context(), allocID, pathParam(r))
	if err != nil {
		s.clientFail(w, r, err)
		return
	}
	defer f.Close()
	var body io.Reader = io.NewSectionReader(f, offset, 1<<62)
	if limit >= 0 {
		body = io.LimitReader(body, limit)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	setMeta(w, 0)
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, body)
}

func int64Param(r *http.Request, name string) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, badRequestf("query parameter %q: %q is not a whole number", name, v)
	}
	return n, nil
}

// clientStream serves GET /v1/client/fs/stream/:alloc_id?path=&offset=&origin=:
// Nomad's StreamFrame JSON frames of the file as it grows (with
// "file truncated" / "file deleted" events and heartbeats), until the
// client goes away.
func (s *Server) clientStream(w http.ResponseWriter, r *http.Request, node ClientNode, allocID string) {
	offset, err := int64Param(r, "offset")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	started := false
	err = node.StreamFile(r.Context(), allocID, pathParam(r), r.URL.Query().Get("origin"), offset,
		func(file string, off int64, data []byte, event string) error {
			if !started {
				started = true
				w.Header().Set("Content-Type", "application/json")
				setMeta(w, 0)
				w.WriteHeader(http.StatusOK)
			}
			var err error
			if file != "" || len(data) > 0 || event != "" {
				err = enc.Encode(logFrame{File: file, Offset: off, Data: data, FileEvent: event})
			} else if len(data) == 0 && file == "" {
				err = enc.Encode(logFrame{}) // the first frame and heartbeats
			}
			if err != nil {
				return err
			}
			if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
				return ferr
			}
			return nil
		})
	if err != nil && !started {
		s.clientFail(w, r, err)
	}
}
