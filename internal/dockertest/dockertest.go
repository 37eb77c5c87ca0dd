// Package dockertest builds the docker tests' image: FROM scratch, with
// the static test program (testapp) built by the test itself, through the
// Docker Engine API with a tar build context. No registry is needed. It is
// for tests only.
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// RequireEnv, set to 1 (as .ci/run does), makes tests fail rather than
// skip where no Docker Engine answers.
const RequireEnv = "DROVER_REQUIRE_DOCKER"

// App is the test program's path inside the image.
const App = "/testapp"

var (
	once     sync.Once
	image    string
	buildErr error
)

// Client returns a client of the local engine, or skips (fails under
// RequireEnv) when none answers.
func Client(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
		cancel()
	}
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("no Docker Engine answers (%s=1): %v", RequireEnv, err)
		}
		t.Skipf("no Docker Engine answers here: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Image returns the tag of the test image, building it once per test
// binary; it skips the test where no engine answers.
func Image(t testing.TB) string {
	t.Helper()
	cli := Client(t)
	once.Do(func() { image, buildErr = build(cli) })
	if buildErr != nil {
		t.Fatalf("build the test image: %v", buildErr)
	}
	return image
}

// build compiles testapp statically and builds the image from it.
func build(cli *client.Client) (string, error) {
	dir, err := os.MkdirTemp("", "dockertest-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "testapp")
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "github.com/drover-sched/drover/internal/dockertest/testapp")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build testapp: %v: %s", err, out)
	}
	app, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(app)
	tag := "drover-testapp:" + hex.EncodeToString(sum[:6])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, tag); err == nil {
		return tag, nil // built by an earlier run
	}
	dockerfile := []byte("FROM scratch\nCOPY testapp " + App + "\nENTRYPOINT [\"" + App + "\"]\n")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, dockerfile}, {"testapp", 0o755, app}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return "", err
		}
		if _, err := tw.Write(f.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	res, err := cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true, Dockerfile: "Dockerfile"})
	if err != nil {
		return "", fmt.Errorf("image build: %w", err)
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	for {
		var msg struct {
			Stream      string
			Error       string
			ErrorDetail struct{ Message string }
		}
		if err := dec.Decode(&msg); err == io.EOF {
			break
		} else if err != nil {
			return "", fmt.Errorf("image build output: %w", err)
		}
		if msg.Error != "" {
			return "", fmt.Errorf("image build: %s", msg.Error)
		}
	}
	if _, err := cli.ImageInspect(ctx, tag); err != nil {
		return "", fmt.Errorf("built image %s not found: %w", tag, err)
	}
	return tag, nil
}
