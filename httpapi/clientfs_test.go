package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// fakeFS serves fixed chunks of one task's log (the other ClientNode
// methods are not called).
type fakeFS struct {
	ClientNode
	gotOrigin string
	gotOffset int64
	gotFollow bool
	gotType   string
}

func (f *fakeFS) StreamLogs(_ context.Context, allocID, task, logType, origin string, offset int64, follow bool,
	emit func(file string, offset int64, data []byte) error) error {
	if allocID != "a1" {
		return fmt.Errorf("unknown allocation %q: %w", allocID, fs.ErrNotExist)
	}
	if task != "web" {
		return fmt.Errorf("no task %q: %w", task, fs.ErrNotExist)
	}
	f.gotOrigin, f.gotOffset, f.gotFollow, f.gotType = origin, offset, follow, logType
	if err := emit("", 0, nil); err != nil {
		return err
	}
	if err := emit("alloc/logs/web.stdout.0", 6, []byte("hello\n")); err != nil {
		return err
	}
	if err := emit("", 0, nil); err != nil { // heartbeat
		return err
	}
	return emit("alloc/logs/web.stdout.1", 6, []byte("world\n"))
}

func TestClientFSLogs(t *testing.T) {
	f := &fakeFS{}
	s := NewClientServer(f, Config{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	get := func(path string) (int, string, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}

	// Nomad's frames, as its Go client decodes them.
	code, ctype, body := get("/v1/client/fs/logs/a1?task=web&type=stderr&origin=end&offset=12&follow=true")
	if code != 200 || ctype != "application/json" {
		t.Fatalf("%d %s %s", code, ctype, body)
	}
	if f.gotType != "stderr" || f.gotOrigin != "end" || f.gotOffset != 12 || !f.gotFollow {
		t.Errorf("request passed as %+v", f)
	}
	dec := json.NewDecoder(strings.NewReader(body))
	var data []string
	var files []string
	heartbeats := 0
	for {
		var fr api.StreamFrame
		if err := dec.Decode(&fr); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode %q: %v", body, err)
		}
		if fr.IsHeartbeat() {
			heartbeats++
			continue
		}
		data = append(data, string(fr.Data))
		files = append(files, fr.File)
	}
	if strings.Join(data, "") != "hello\nworld\n" || files[1] != "alloc/logs/web.stdout.1" || heartbeats != 1 {
		t.Errorf("frames %q from %v, %d heartbeats", data, files, heartbeats)
	}

	// plain=true: the bytes themselves; defaults: stdout from the start.
	code, ctype, body = get("/v1/client/fs/logs/a1?task=web&plain=true")
	if code != 200 || !strings.HasPrefix(ctype, "text/plain") || body != "hello\nworld\n" {
		t.Errorf("plain: %d %s %q", code, ctype, body)
	}
	if f.gotType != "stdout" || f.gotOrigin != "start" || f.gotOffset != 0 || f.gotFollow {
		t.Errorf("defaults passed as %+v", f)
	}

	for path, want := range map[string]int{
		"/v1/client/fs/logs/nope?task=web":        404,
		"/v1/client/fs/logs/a1?task=db":           404,
		"/v1/client/fs/logs/a1":                   400,
		"/v1/client/fs/logs/a1?task=web&type=x":   400,
		"/v1/client/fs/logs/a1?task=web&origin=x": 400,
		"/v1/client/fs/logs/a1?task=web&offset=-": 400,
		"/v1/client/fs/logs/a1?task=web&follow=x": 400,
	} {
		if code, _, body := get(path); code != want {
			t.Errorf("%s: %d %s, want %d", path, code, body, want)
		}
	}
}
