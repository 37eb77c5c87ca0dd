// Package functions_test runs the AWS home end to end against a local AWS
// endpoint (kumo, or AWS_ENDPOINT_URL): the real bootstrap binaries of the
// api, evaluate and authorizer functions as Lambda-runtime processes
// polling the endpoint's Runtime API, invoked by the pump (queue messages
// and due schedules, as Lambda's event source mapping and EventBridge
// Scheduler would) and by the gateway (API Gateway's HTTP API with the
// token authorizer and IAM node routes); state in DynamoDB; a node agent
// in AWS mode running real processes; Nomad's own Go client as the user.
package functions_test

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	awssched "github.com/aws/aws-sdk-go-v2/service/scheduler"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/internal/testjobs"

	"github.com/drover-sched/drover/acl"
	"github.com/drover-sched/drover/controlplane/awscp"
	"github.com/drover-sched/drover/internal/awstest"
	"github.com/drover-sched/drover/internal/proctest"
	ddb "github.com/drover-sched/drover/storage/dynamodb"
)

var bins string // directory of the binaries built for this test binary

// TestMain builds the binaries once and runs the tests on kumo, then on
// moto with kumo kept for what moto lacks (Lambda's Runtime API, STS):
// DynamoDB, SQS and EventBridge Scheduler are moto's on that leg.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "drover-fn-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		bins = dir
		for _, b := range []struct{ out, pkg, tags string }{
			{"api", "./functions/api", "lambda.norpc"}, {"evaluate", "./functions/evaluate", "lambda.norpc"},
			{"authorizer", "./functions/authorizer", "lambda.norpc"}, {"drover", "./cmd/drover", ""},
		} {
			cmd := exec.Command("go", "build", "-tags", b.tags, "-o", filepath.Join(dir, b.out), b.pkg)
			cmd.Dir = awstest.RepoDir()
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "build", b.pkg, err)
				return 1
			}
		}
		return awstest.Run(m, awstest.Options{MotoServices: []string{"DYNAMODB", "SQS", "SCHEDULER"}})
	}()
	os.Exit(code)
}

// proc is a process the test started; it is stopped by its pid.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *proctest.SyncBuffer
	done chan struct{}
}

func start(t *testing.T, name string, env []string, firstLine bool, args ...string) (*proc, string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	p := &proc{name: name, cmd: cmd, out: &proctest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.out
	var line string
	var stdout *bufio.Scanner
	if firstLine {
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout = bufio.NewScanner(pipe)
	} else {
		cmd.Stdout = p.out
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	if firstLine {
		if stdout.Scan() {
			line = strings.TrimSpace(stdout.Text())
		}
		go func() {
			for stdout.Scan() {
				p.out.Write(append(stdout.Bytes(), '\n'))
			}
		}()
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- %s output ---\n%s", name, tail(p.out.String(), 6000))
		}
	})
	return p, line
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", d, what)
}

// procsWith lists the pids whose command line contains s.
func procsWith(s string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			out = append(out, e.Name())
		}
	}
	return out
}

func dummyZip(t *testing.T) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("bootstrap")
	_, _ = w.Write([]byte("#!/bin/sh\n"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAWSHomeEndToEnd is the spine's scenario on the AWS home: count 3 →
// 1 → changed args → stop; a batch job that completes and one that fails.
func TestAWSHomeEndToEnd(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(t)
	endpoint := os.Getenv("AWS_ENDPOINT_URL")
	table := awstest.Name("drover-e2e")
	if err := ddb.CreateTable(ctx, ddb.NewClient(cfg), table); err != nil {
		t.Fatal(err)
	}
	queueURL, queueARN := awstest.FIFOQueue(t, awssqs.NewFromConfig(cfg), awstest.Name("evals"))
	group := awstest.Name("drover")
	awstest.ScheduleGroup(t, awssched.NewFromConfig(cfg), group)
	token := "e2e-secret-token"
	suffix := fmt.Sprint(time.Now().UnixNano() % 1e9)
	fnEnv := []string{"DROVER_TABLE=" + table, "DROVER_QUEUE_URL=" + queueURL, "DROVER_QUEUE_ARN=" + queueARN,
		"DROVER_SCHEDULER_ROLE_ARN=arn:aws:iam::000000000000:role/drover-scheduler", "DROVER_SCHEDULE_GROUP=" + group,
		"DROVER_BOOTSTRAP_TOKEN_HASH=" + acl.Hash(token), "DROVER_LOG_LEVEL=info", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		"DROVER_NODE_ROLE_ARNS=arn:aws:iam::000000000000:role/drover-node"}

	// The functions: created on the endpoint, their bootstraps polling its
	// Runtime API.
	lc := awslambda.NewFromConfig(cfg)
	host := strings.TrimPrefix(strings.TrimPrefix(endpoint, "http://"), "https://")
	fns := map[string]string{}
	for _, f := range []struct {
		name      string
		instances int
	}{{"api", 2}, {"evaluate", 1}, {"authorizer", 1}} {
		fn := "drover-" + f.name + "-" + suffix
		fns[f.name] = fn
		_, err := lc.CreateFunction(ctx, &awslambda.CreateFunctionInput{FunctionName: aws.String(fn), Runtime: lambdatypes.RuntimeProvidedal2023,
			Handler: aws.String("bootstrap"), Role: aws.String("arn:aws:iam::000000000000:role/drover-" + f.name),
			Architectures: []lambdatypes.Architecture{lambdatypes.ArchitectureArm64}, Timeout: aws.Int32(60),
			Code: &lambdatypes.FunctionCode{ZipFile: dummyZip(t)}})
		if err != nil {
			t.Fatalf("create function %s: %v", fn, err)
		}
		for i := 0; i < f.instances; i++ {
			env := append([]string{"AWS_LAMBDA_RUNTIME_API=" + host + "/_runtime/" + fn, "AWS_LAMBDA_FUNCTION_NAME=" + fn}, fnEnv...)
			start(t, fmt.Sprintf("%s#%d", fn, i), env, false, filepath.Join(bins, f.name))
		}
	}
	// Ready once each has polled (an Invoke before that fails at once).
	began := time.Now()
	for name, probe := range map[string]string{
		"api":        `{"version":"2.0","rawPath":"/v1/status/leader","requestContext":{"http":{"method":"GET","path":"/v1/status/leader"}}}`,
		"evaluate":   `{"Records":[]}`,
		"authorizer": `{"version":"2.0","headers":{}}`,
	} {
		waitFor(t, 30*time.Second, name+" function polling the Runtime API", func() bool {
			ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			out, err := lc.Invoke(ictx, &awslambda.InvokeInput{FunctionName: aws.String(fns[name]), Payload: []byte(probe)})
			return err == nil && out.FunctionError == nil
		})
	}
	t.Logf("functions answering %s after their processes started", time.Since(began).Round(time.Millisecond))

	lsBin, err := awstest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	pump, _ := start(t, "pump", nil, false, lsBin, "pump", "-queue-url", queueURL, "-function", fns["evaluate"], "-schedule-group", group,
		"-fire-early", "65s", "-interval", "100ms")
	nodeID, err := awscp.NodeID(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, gw := start(t, "gateway", nil, true, lsBin, "gateway", "-api-function", fns["api"], "-authorizer-function", fns["authorizer"],
		"-iam-userid", nodeID, "-iam-userarn", "arn:aws:sts::000000000000:assumed-role/drover-node/aws-e2e")
	if !strings.HasPrefix(gw, "http://") {
		t.Fatalf("gateway printed %q", gw)
	}

	// Auth: no token 401, a wrong one 403, the bootstrap token passes.
	for tok, want := range map[string]int{"": http.StatusUnauthorized, "wrong": http.StatusForbidden, token: http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, gw+"/v1/jobs", nil)
		if tok != "" {
			req.Header.Set("X-Nomad-Token", tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET /v1/jobs with token %q: %d, want %d", tok, resp.StatusCode, want)
		}
	}
	// A node-agent route without SigV4 is refused by the gateway, and a
	// signed one naming another node by the API's IAM check.
	if resp, err := http.Get(gw + "/v1/nodeagent/" + url.PathEscape(nodeID) + "/assignment-index"); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("unsigned node route: %v %v", resp, err)
	}
	signReq, _ := http.NewRequest(http.MethodGet, gw+"/v1/nodeagent/someone-else/assignment-index", nil)
	if err := awscp.Signer(cfg)(signReq, nil); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.DefaultClient.Do(signReq); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("signed request for another node: %v %v", resp, err)
	}

	// The node agent in AWS mode.
	dir := t.TempDir()
	start(t, "agent", nil, false, filepath.Join(bins, "drover"), "agent", "-client", "-aws-api", gw, "-aws-table", table,
		"-data-dir", filepath.Join(dir, "agent"), "-enable-raw-exec", "-node-name", "aws-e2e")
	c, err := api.NewClient(&api.Config{Address: gw, SecretID: token})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the node registered through the API", func() bool {
		nodes, _, err := c.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].ID == nodeID && nodes[0].Status == "ready"
	})
	checkACLsOnAWS(t, gw, c)

	script := filepath.Join(dir, "service.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nwhile true; do sleep 1; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	register := func(job *api.Job) {
		t.Helper()
		if _, _, err := c.Jobs().Register(job, nil); err != nil {
			t.Fatalf("register %s: %v", *job.ID, err)
		}
	}
	status := func(jobID string) map[string][]string {
		stubs, _, err := c.Jobs().Allocations(jobID, true, nil)
		if err != nil {
			t.Logf("allocations of %s: %v", jobID, err)
			return nil
		}
		out := map[string][]string{}
		for _, s := range stubs {
			out[s.DesiredStatus+"/"+s.ClientStatus] = append(out[s.DesiredStatus+"/"+s.ClientStatus], s.ID)
		}
		for k := range out {
			sort.Strings(out[k])
		}
		return out
	}

	register(serviceJob("web", 3, script, "v1"))
	waitFor(t, 60*time.Second, "3 running allocs and 3 processes", func() bool {
		return len(status("web")["run/running"]) == 3 && len(procsWith(script+" v1")) == 3
	})
	register(serviceJob("web", 1, script, "v1"))
	waitFor(t, 60*time.Second, "2 stopped allocs and 1 process", func() bool {
		m := status("web")
		return len(m["run/running"]) == 1 && len(m["stop/complete"]) == 2 && len(procsWith(script+" v1")) == 1
	})
	before := status("web")["run/running"][0]
	// v2 also registers a service: the agent registers it through the API.
	v2 := serviceJob("web", 1, script, "v2")
	v2.TaskGroups[0].Services = []*api.Service{{Name: "web-aws", Tags: []string{"aws"}}}
	register(v2)
	waitFor(t, 60*time.Second, "the alloc replaced by one running the new args", func() bool {
		m := status("web")
		return len(m["run/running"]) == 1 && m["run/running"][0] != before && len(procsWith(script+" v1")) == 0 && len(procsWith(script+" v2")) == 1
	})
	waitFor(t, 30*time.Second, "the service registered by the node on AWS", func() bool {
		regs, _, err := c.Services().Get("web-aws", nil)
		return err == nil && len(regs) == 1 && regs[0].NodeID == nodeID && regs[0].AllocID == status("web")["run/running"][0]
	})
	if _, _, err := c.Jobs().Deregister("web", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the job stopped and its process gone", func() bool {
		m := status("web")
		return len(m["run/running"]) == 0 && len(procsWith(script+" v2")) == 0
	})
	waitFor(t, 30*time.Second, "the service deregistered", func() bool {
		regs, _, err := c.Services().Get("web-aws", nil)
		return err == nil && len(regs) == 0
	})

	okScript, failScript := filepath.Join(dir, "ok.sh"), filepath.Join(dir, "fail.sh")
	_ = os.WriteFile(okScript, []byte("#!/bin/sh\nsleep 1\nexit 0\n"), 0o755)
	_ = os.WriteFile(failScript, []byte("#!/bin/sh\nsleep 1\nexit 3\n"), 0o755)
	register(batchJob("batch-ok", okScript))
	register(batchJob("batch-fail", failScript))
	waitFor(t, 60*time.Second, "one batch job complete and one failed", func() bool {
		return len(status("batch-ok")["run/complete"]) == 1 && len(status("batch-fail")["run/failed"]) == 1
	})
	// The failed alloc's follow-up eval is created when the failure is
	// reported, so it may still be on its way through the queue: every
	// eval of both jobs ends complete.
	for _, id := range []string{"batch-ok", "batch-fail"} {
		waitFor(t, 30*time.Second, "every evaluation of "+id+" complete", func() bool {
			evals, _, err := c.Jobs().Evaluations(id, nil)
			if err != nil || len(evals) == 0 {
				return false
			}
			for _, e := range evals {
				if e.Status != "complete" {
					return false
				}
			}
			return true
		})
	}
	if n := strings.Count(pump.out.String(), "delivered"); n < 6 {
		t.Fatalf("the pump delivered %d batches to the evaluate function; every evaluation goes through it", n)
	}
	t.Logf("pump delivered %d batches to the evaluate function", strings.Count(pump.out.String(), "delivered"))
}

// serviceJob and batchJob are the shared test jobs (internal/testjobs).
var (
	serviceJob = testjobs.Service
	batchJob   = testjobs.Batch
)
