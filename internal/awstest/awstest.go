// Package awstest runs the tests of packages that talk to AWS against
// local AWS endpoints, once per emulator: kumo (built from the small main
// in the repository's localstack/ module, its own Go module so the main
// module does not depend on kumo), then moto (moto_server, the Python
// emulator LocalStack is built on, which validates requests much as AWS
// does). Each leg starts its endpoint on 127.0.0.1 on a free port, points
// the AWS SDK at it through the environment and stops exactly the process
// it started. When AWS_ENDPOINT_URL is already set (LocalStack, a real
// account) that endpoint is used instead, once, and nothing is started.
//
// Environment:
//
//	DROVER_EMULATORS     legs to run, comma-separated (default "kumo,moto")
//	DROVER_REQUIRE_MOTO  "1": a missing moto fails the tests (.ci/run sets it);
//	                     otherwise the moto leg is skipped with one line
package awstest

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// The emulators a leg runs on.
const (
	// Kumo is the Go emulator of the localstack/ module (DynamoDB, SQS,
	// EventBridge Scheduler, STS, Lambda's Runtime API).
	Kumo = "kumo"
	// Moto is moto_server: DynamoDB, SQS, Scheduler and STS validated much
	// as AWS validates them; no Lambda Runtime API.
	Moto = "moto"
	// External is an endpoint given with AWS_ENDPOINT_URL.
	External = "external"
)

// MotoInstall is how to install moto, printed when it is missing.
const MotoInstall = "pip install 'moto[server]'"

var (
	binary string
	leg    string // the emulator the running leg talks to
)

// Emulator is the name of the emulator the running tests talk to: Kumo,
// Moto or External.
func Emulator() string { return leg }

// SkipOnMoto skips t on the moto leg, saying what moto cannot show. It is
// the only skip the AWS packages' tests use: each names its reason, and
// the README lists them.
func SkipOnMoto(t testing.TB, reason string) {
	t.Helper()
	if leg == Moto {
		t.Skipf("skipped on moto: %s", reason)
	}
}

// OnMoto returns onMoto on the moto leg and otherwise def (smaller counts
// where moto is slow, e.g. its transactions copy the whole table).
func OnMoto[T any](def, onMoto T) T {
	if leg == Moto {
		return onMoto
	}
	return def
}

// Binary returns the path of the built localstack binary (serve, pump,
// gateway), building it on first use into a temporary directory.
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

func removeBinary() {
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary))
		binary = ""
	}
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

// Options changes how Run runs the legs.
type Options struct {
	// MotoServices, when set, makes the moto leg hybrid: only these
	// services (the SDK's service IDs as in AWS_ENDPOINT_URL_<ID>, e.g.
	// DYNAMODB, SQS, SCHEDULER) go to moto, everything else (Lambda's
	// Runtime API, STS) to a kumo started alongside.
	MotoServices []string
}

// Main runs the tests once per emulator and returns the exit code. Use it
// as `func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }`.
func Main(m *testing.M) int { return Run(m, Options{}) }

// Run is Main with options.
func Run(m *testing.M, o Options) int {
	setDefault("AWS_REGION", "us-east-1")
	setDefault("AWS_ACCESS_KEY_ID", "test")
	setDefault("AWS_SECRET_ACCESS_KEY", "test")
	moreParallel()
	if url := os.Getenv("AWS_ENDPOINT_URL"); url != "" {
		leg = External
		fmt.Printf("awstest: running the tests on %s\n", url)
		return m.Run()
	}
	defer removeBinary()
	names, err := legs()
	if err != nil {
		fmt.Fprintln(os.Stderr, "awstest:", err)
		return 2
	}
	for _, name := range names {
		if name == Moto {
			// moto starts (and loads its services) while the other legs
			// run: its Python start-up costs seconds.
			early = startMotoEarly()
			defer early.stop()
		}
	}
	code := 0
	for _, name := range names {
		c := runLeg(m, name, o)
		if c != 0 {
			fmt.Printf("awstest: the %s leg failed\n", name)
			code = c
		}
	}
	return code
}

// Parallel is how many parallel tests the AWS packages run unless
// -test.parallel says otherwise: their tests wait on an emulator (moto
// answers in milliseconds, from one Python process), not on the CPU.
const Parallel = 8

func moreParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(max(Parallel, runtime.GOMAXPROCS(0))))
	}
}

// legs is DROVER_EMULATORS's list (default kumo and moto). An unknown
// name or a list naming none is an error, found before any leg runs.
func legs() ([]string, error) {
	v := os.Getenv("DROVER_EMULATORS")
	if v == "" {
		return []string{Kumo, Moto}, nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if s != Kumo && s != Moto {
			return nil, fmt.Errorf("unknown emulator %q in DROVER_EMULATORS=%q (want kumo, moto or both, comma-separated)", s, v)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("DROVER_EMULATORS=%q names no emulator (want kumo, moto or both, comma-separated)", v)
	}
	return out, nil
}

func runLeg(m *testing.M, name string, o Options) int {
	var env map[string]string
	var stops []func()
	defer func() {
		for _, s := range stops {
			s()
		}
		for k := range env {
			os.Unsetenv(k)
		}
		leg = ""
	}()
	switch name {
	case Kumo:
		url, stop, err := startKumo()
		if err != nil {
			fmt.Fprintln(os.Stderr, "awstest:", err)
			return 1
		}
		stops = append(stops, stop)
		env = map[string]string{"AWS_ENDPOINT_URL": url}
	case Moto:
		if early == nil {
			early = startMotoEarly()
			defer early.stop()
		}
		<-early.ready
		if early.missing {
			if os.Getenv("DROVER_REQUIRE_MOTO") == "1" {
				fmt.Fprintf(os.Stderr, "awstest: moto is required (DROVER_REQUIRE_MOTO=1) but moto_server was not found; install it: %s\n", MotoInstall)
				return 1
			}
			fmt.Printf("awstest: moto leg skipped: moto_server not found (install it: %s)\n", MotoInstall)
			return 0
		}
		if early.err != nil {
			fmt.Fprintln(os.Stderr, "awstest:", early.err)
			return 1
		}
		url := early.url
		env = map[string]string{"AWS_ENDPOINT_URL": url}
		if len(o.MotoServices) > 0 {
			kurl, kstop, err := startKumo()
			if err != nil {
				fmt.Fprintln(os.Stderr, "awstest:", err)
				return 1
			}
			stops = append(stops, kstop)
			env = map[string]string{"AWS_ENDPOINT_URL": kurl}
			for _, s := range o.MotoServices {
				env["AWS_ENDPOINT_URL_"+strings.ToUpper(s)] = url
			}
		}
	default:
		fmt.Fprintf(os.Stderr, "awstest: unknown emulator %q in DROVER_EMULATORS (want kumo, moto)\n", name)
		return 1
	}
	for k, v := range env {
		os.Setenv(k, v)
	}
	leg = name
	fmt.Printf("awstest: running the tests on %s (%s)\n", name, describe(env))
	return m.Run()
}

func describe(env map[string]string) string {
	var parts []string
	if u := env["AWS_ENDPOINT_URL"]; u != "" {
		parts = append(parts, u)
	}
	for k, v := range env {
		if k != "AWS_ENDPOINT_URL" {
			parts = append(parts, strings.TrimPrefix(k, "AWS_ENDPOINT_URL_")+" at "+v)
		}
	}
	return strings.Join(parts, ", ")
}

// Start starts kumo unless AWS_ENDPOINT_URL is set and points the SDK at
// it (for programs that are not test binaries). The returned function
// stops the process.
func Start() (stop func(), err error) {
	setDefault("AWS_REGION", "us-east-1")
	setDefault("AWS_ACCESS_KEY_ID", "test")
	setDefault("AWS_SECRET_ACCESS_KEY", "test")
	if os.Getenv("AWS_ENDPOINT_URL") != "" {
		return func() {}, nil
	}
	url, stopKumo, err := startKumo()
	if err != nil {
		return nil, err
	}
	os.Setenv("AWS_ENDPOINT_URL", url)
	return func() { stopKumo(); os.Unsetenv("AWS_ENDPOINT_URL"); removeBinary() }, nil
}

// startKumo starts `localstack serve`, which prints its URL first.
func startKumo() (string, func(), error) {
	bin, err := Binary()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start kumo: %w", err)
	}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			urlc <- strings.TrimSpace(sc.Text())
		}
		close(urlc)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	stop := func() { stopProcess(cmd, false) }
	select {
	case url, ok := <-urlc:
		if !ok || !strings.HasPrefix(url, "http") {
			stop()
			return "", nil, fmt.Errorf("kumo printed no URL (got %q)", url)
		}
		return url, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, fmt.Errorf("kumo did not start within 30 s")
	}
}

// motoCommand finds moto: moto_server on PATH, or python3 -m moto.server.
func motoCommand() (string, []string, bool) {
	if p, err := exec.LookPath("moto_server"); err == nil {
		return p, nil, true
	}
	if p, err := exec.LookPath("python3"); err == nil && exec.Command(p, "-c", "import moto.server").Run() == nil {
		return p, []string{"-m", "moto.server"}, true
	}
	return "", nil, false
}

// motoStart is a moto_server being started in the background.
type motoStart struct {
	ready   chan struct{} // closed when url, err or missing is set
	url     string
	err     error
	missing bool
	stopFn  func()
}

var early *motoStart

func (m *motoStart) stop() {
	<-m.ready
	if m.stopFn != nil {
		m.stopFn()
		m.stopFn = nil
	}
}

// startMotoEarly starts moto in the background and, once it serves, sends
// one request to each service the tests use (moto loads a service's code
// on its first request).
func startMotoEarly() *motoStart {
	ms := &motoStart{ready: make(chan struct{})}
	go func() {
		defer close(ms.ready)
		cmd, args, ok := motoCommand()
		if !ok {
			ms.missing = true
			return
		}
		ms.url, ms.stopFn, ms.err = startMoto(cmd, args)
		if ms.err == nil {
			warmUp(ms.url)
		}
	}()
	return ms
}

var motoURL = regexp.MustCompile(`Running on (http://127\.0\.0\.1:\d+)`)

// startMoto starts moto_server on 127.0.0.1 with port 0 (the kernel picks
// a free one) and reads the URL it logs.
func startMoto(name string, args []string) (string, func(), error) {
	cmd := exec.Command(name, append(args, "-H", "127.0.0.1", "-p", "0")...)
	// Its own process group: the pyenv shim or python wrapper and the
	// server it runs are stopped together, by the pid started here.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start moto: %w", err)
	}
	urlc := make(chan string, 1)
	var mu sync.Mutex
	var head []string // what moto printed before its URL, for errors
	go func() {
		sc := bufio.NewScanner(stderr)
		found := false
		for sc.Scan() {
			line := sc.Text()
			if !found {
				if m := motoURL.FindStringSubmatch(line); m != nil {
					found = true
					urlc <- m[1]
					continue
				}
				mu.Lock()
				head = append(head, line)
				mu.Unlock()
			}
			// Request logs are dropped.
		}
		if !found {
			close(urlc)
		}
	}()
	stop := func() { stopProcess(cmd, true) }
	select {
	case url, ok := <-urlc:
		if !ok {
			stop()
			mu.Lock()
			defer mu.Unlock()
			return "", nil, fmt.Errorf("moto exited before serving: %s", strings.Join(head, "\n"))
		}
		return url, stop, nil
	case <-time.After(60 * time.Second):
		stop()
		return "", nil, fmt.Errorf("moto did not start within 60 s")
	}
}

// stopProcess stops a process this package started: SIGTERM (to its
// process group when it has its own), SIGKILL after 5 s.
func stopProcess(cmd *exec.Cmd, group bool) {
	pid := cmd.Process.Pid
	signal := func(s syscall.Signal) {
		if group {
			_ = syscall.Kill(-pid, s)
		} else {
			_ = cmd.Process.Signal(s)
		}
	}
	signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		signal(syscall.SIGKILL)
		<-done
	}
}

func setDefault(k, v string) {
	if os.Getenv(k) == "" {
		os.Setenv(k, v)
	}
}

// Config loads the SDK configuration from the environment the leg set.
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
