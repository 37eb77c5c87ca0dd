// Package awstest starts drover's local AWS endpoint for a test binary:
// kumo, built from the small main in the repository's localstack/ module
// (its own Go module, so the main module does not depend on kumo). Tests
// of packages that talk to AWS call Main from TestMain; when
// AWS_ENDPOINT_URL is already set (LocalStack, a real account) that
// endpoint is used instead and nothing is started.
package awstest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

var binary string

// Binary returns the path of the built localstack binary (serve and pump),
// building it on first use into a temporary directory.
func Binary() (string, error) {
	if binary != "" {
		return binary, nil
	}
	dir, err := os.MkdirTemp("", "drover-localstack-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "localstack")
	build := exec.Command("go", "build", "-o", out, ".")
	build.Dir = ModuleDir()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build %s: %w", build.Dir, err)
	}
	binary = out
	return out, nil
}

// ModuleDir is the localstack/ module's directory.
func ModuleDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "localstack")
}

// RepoDir is the repository root.
func RepoDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Main starts kumo unless AWS_ENDPOINT_URL is set, points the AWS SDK at
// it through the environment (endpoint, region, dummy credentials), runs
// the tests and stops exactly the process it started. Use it as
// `func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }`.
func Main(m *testing.M) int {
	stop, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "awstest:", err)
		return 1
	}
	defer stop()
	return m.Run()
}

// Start starts kumo unless AWS_ENDPOINT_URL is set and sets the
// environment the SDK reads. The returned function stops the process.
func Start() (stop func(), err error) {
	setDefault("AWS_REGION", "us-east-1")
	setDefault("AWS_ACCESS_KEY_ID", "test")
	setDefault("AWS_SECRET_ACCESS_KEY", "test")
	if os.Getenv("AWS_ENDPOINT_URL") != "" {
		return func() {}, nil
	}
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start kumo: %w", err)
	}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			urlc <- strings.TrimSpace(sc.Text())
		}
		close(urlc)
	}()
	kill := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		os.RemoveAll(filepath.Dir(bin))
		binary = ""
	}
	select {
	case url, ok := <-urlc:
		if !ok || !strings.HasPrefix(url, "http") {
			kill()
			return nil, fmt.Errorf("kumo printed no URL (got %q)", url)
		}
		os.Setenv("AWS_ENDPOINT_URL", url)
		return func() { kill(); os.Unsetenv("AWS_ENDPOINT_URL") }, nil
	case <-time.After(30 * time.Second):
		kill()
		return nil, fmt.Errorf("kumo did not start within 30 s")
	}
}

func setDefault(k, v string) {
	if os.Getenv(k) == "" {
		os.Setenv(k, v)
	}
}

// Config loads the SDK configuration from the environment Start set.
func Config(t testing.TB) aws.Config {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatalf("aws config: %v", err)
	}
	return cfg
}

// Name returns a unique resource name for a test (tables, queues).
func Name(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), time.Now().UnixNano()%1e12)
}
