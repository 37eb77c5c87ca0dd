package httpapi

import (
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// quietFS follows a log that has nothing new: the stream starts, then
// waits for the request to end.
type quietFS struct{ ClientNode }

func (quietFS) StreamLogs(ctx context.Context, _, _, _, _ string, _ int64, _ bool,
	emit func(file string, offset int64, data []byte) error) error {
	if err := emit("", 0, nil); err != nil {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestQuietFollowedLogStartsGzipStream: a followed log with nothing new,
// asked for gzip as Nomad's Go client asks, sends the gzip header at
// once, so the client's gzip reader opens (`nomad alloc logs -f` follows
// stdout and stderr from their end and opened the second stream only
// after the first one's first frame).
func TestQuietFollowedLogStartsGzipStream(t *testing.T) {
	srv := httptest.NewServer(NewClientServer(quietFS{}, Config{}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		srv.URL+"/v1/client/fs/logs/a1?task=web&type=stdout&origin=end&offset=0&follow=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("%d, Content-Encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	opened := make(chan error, 1)
	go func() {
		_, err := gzip.NewReader(resp.Body)
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("gzip reader: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the gzip header of a quiet followed log never came")
	}
}
