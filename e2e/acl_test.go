package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/internal/testtls"
)

var (
	e2eSecret   = regexp.MustCompile(`Secret ID\s+= ([0-9a-f-]{36})`)
	e2eAccessor = regexp.MustCompile(`Accessor ID\s+= ([0-9a-f-]{36})`)
)

func capture(t *testing.T, re *regexp.Regexp, out string) string {
	t.Helper()
	m := re.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %s in:\n%s", re, out)
	}
	return m[1]
}

func sleepJob(id string) string {
	return `{"Job": {"ID": "` + id + `", "Type": "service", "TaskGroups": [{"Name": "g", "Count": 1,
		"Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/sleep", "args": ["300"]},
		"Resources": {"CPU": 50, "MemoryMB": 16}, "KillTimeout": 1000000000}]}]}}`
}

// TestACLEndToEnd: the real binary with -acl-enabled: bootstrap, policies
// and tokens through the CLI; a read-only token can list but not submit
// (403); a namespace-scoped token sees only its namespace; a revoked
// token stops working at once.
func TestACLEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := startProc(t, dir, "-dev", "-acl-enabled", "-http-addr", anyPort)
	a.waitAddr()
	addr := "http://" + a.addr
	mustContain(t, a.Log.String(), "ACLs: enabled")
	out, code := cli(t, addr, "acl", "bootstrap")
	if code != 0 {
		t.Fatalf("bootstrap: %s", out)
	}
	root := capture(t, e2eSecret, out)
	run := func(want int, args ...string) string {
		t.Helper()
		out, code := cli(t, addr, args...)
		if code != want {
			t.Fatalf("drover %v: exit %d, want %d:\n%s", args, code, want, out)
		}
		return out
	}
	run(0, "acl", "policy", "apply", "-token", root, "readonly", writeTemp(t, "ro.hcl", `namespace "*" { policy = "read" }`))
	run(0, "acl", "policy", "apply", "-token", root, "team", writeTemp(t, "team.hcl", `namespace "team" { policy = "write" }`))
	ro := capture(t, e2eSecret, run(0, "acl", "token", "create", "-token", root, "-name", "dash", "-policy", "readonly"))
	roAccessor := capture(t, e2eAccessor, run(0, "acl", "token", "self", "-token", ro))
	team := capture(t, e2eSecret, run(0, "acl", "token", "create", "-token", root, "-name", "team", "-policy", "team"))
	run(0, "namespace", "apply", "-token", root, "team")
	run(0, "job", "run", "-detach", "-token", root, writeTemp(t, "web.json", sleepJob("web")))
	run(0, "job", "run", "-detach", "-token", team, "-namespace", "team", writeTemp(t, "api.json", sleepJob("api")))

	mustContain(t, run(0, "job", "status", "-token", ro, "-namespace", "*"), "web", "api")
	mustContain(t, run(1, "job", "run", "-detach", "-token", ro, writeTemp(t, "x.json", sleepJob("x"))), "Permission denied")
	mustContain(t, run(1, "job", "status", "-token", "", "-namespace", "*"), "Permission denied")

	out = run(0, "job", "status", "-token", team, "-namespace", "*")
	if !strings.Contains(out, "api") || strings.Contains(out, "web") {
		t.Fatalf("a team token lists another namespace's jobs:\n%s", out)
	}
	mustContain(t, run(1, "job", "status", "-token", team, "web"), "Permission denied")

	run(0, "acl", "token", "delete", "-token", root, roAccessor)
	mustContain(t, run(1, "job", "status", "-token", ro), "ACL token not found")
	mustContain(t, run(1, "acl", "token", "create", "-token", team, "-type", "management"), "Permission denied")
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNodeIdentityAndTLS: a server with ACLs and HTTPS that requires
// client certificates, and a node agent that verifies it, presents its
// certificate and registers with its secret, then runs a job. A node
// agent whose secret is not the one its node registered with is refused,
// so is one whose certificate another CA signed; the node's secret never
// appears in the API.
func TestNodeIdentityAndTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := testtls.NewCA(t, "drover")
	srvCert, srvKey := ca.Issue(t, "server")
	nodeCert, nodeKey := ca.Issue(t, "node")
	cliCert, cliKey := ca.Issue(t, "cli")
	otherCA := testtls.NewCA(t, "other")
	badCert, badKey := otherCA.Issue(t, "intruder")

	srv := startProc(t, filepath.Join(dir, "server"), "-server", "-acl-enabled", "-http-addr", anyPort, "-heartbeat-ttl", "5s",
		"-tls-cert-file", srvCert, "-tls-key-file", srvKey, "-tls-ca-file", ca.CAFile)
	srv.waitAddr()
	addr := "https://" + srv.addr
	tlsFlags := []string{"-ca-cert", ca.CAFile, "-client-cert", cliCert, "-client-key", cliKey}
	cliTLS := func(args ...string) (string, int) {
		t.Helper()
		// The TLS flags go after the command's name (the words before
		// the first flag or the end).
		n := 0
		for n < len(args) && !strings.HasPrefix(args[n], "-") && n < 3 {
			n++
		}
		full := append(append(append([]string{}, args[:n]...), tlsFlags...), args[n:]...)
		return cli(t, addr, full...)
	}
	var out string
	var code int
	waitFor(t, 20*time.Second, "the server over HTTPS", func() bool {
		out, code = cliTLS("acl", "bootstrap")
		return code == 0
	})
	root := capture(t, e2eSecret, out)
	if _, code := cli(t, addr, "acl", "token", "self", "-token", root, "-ca-cert", ca.CAFile); code == 0 {
		t.Fatal("the server answered a client without a certificate")
	}
	cfg := api.DefaultConfig()
	cfg.Address, cfg.SecretID = addr, root
	cfg.TLSConfig = &api.TLSConfig{CACert: ca.CAFile, ClientCert: cliCert, ClientKey: cliKey}
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}

	nodeDir := filepath.Join(dir, "a")
	t.Cleanup(func() { killProcsUnder(nodeDir) })
	nodeArgs := []string{"-client", "-servers", srv.addr, "-node-name", "a", "-enable-raw-exec",
		"-tls-ca-file", ca.CAFile, "-tls-cert-file", nodeCert, "-tls-key-file", nodeKey}
	node := startProc(t, nodeDir, nodeArgs...)
	var nodeID string
	waitFor(t, 30*time.Second, "node a ready over HTTPS", func() bool {
		nodes, _, err := c.Nodes().List(nil)
		if err == nil && len(nodes) == 1 && nodes[0].Status == "ready" {
			nodeID = nodes[0].ID
			return true
		}
		return false
	})
	if out, code := cliTLS("job", "run", "-detach", "-token", root, writeTemp(t, "web.json", sleepJob("web"))); code != 0 {
		t.Fatalf("job run: %s", out)
	}
	waitFor(t, 30*time.Second, "the job running on node a", func() bool {
		allocs, _, err := c.Jobs().Allocations("web", false, nil)
		return err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "running" && allocs[0].NodeID == nodeID
	})
	// Nomad's client calls the node directly, over HTTPS when the node
	// says TLSEnabled; the node's address also answers the servers' API
	// (forwarded) and its own agent (`nomad node status -self`).
	full, _, err := c.Nodes().Info(nodeID, nil)
	if err != nil || !full.TLSEnabled || full.HTTPAddr == "" {
		t.Fatalf("node info: TLSEnabled %v HTTPAddr %q %v", full != nil && full.TLSEnabled, full.HTTPAddr, err)
	}
	allocs, _, err := c.Jobs().Allocations("web", false, nil)
	if err != nil || len(allocs) != 1 {
		t.Fatalf("allocs: %v %v", allocs, err)
	}
	alloc, _, err := c.Allocations().Info(allocs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.AllocFS().Cat(alloc, "alloc/logs/t.stdout.0", nil)
	if err != nil {
		t.Fatalf("cat through the node over HTTPS: %v", err)
	}
	rc.Close()
	nodeClient := func(token string) *api.Client {
		t.Helper()
		ncfg := api.DefaultConfig()
		ncfg.Address, ncfg.SecretID = "https://"+full.HTTPAddr, token
		ncfg.TLSConfig = &api.TLSConfig{CACert: ca.CAFile, ClientCert: cliCert, ClientKey: cliKey}
		nc, err := api.NewClient(ncfg)
		if err != nil {
			t.Fatal(err)
		}
		return nc
	}
	nc := nodeClient(root)
	if self, err := nc.Agent().Self(); err != nil || self.Stats["client"]["node_id"] != nodeID {
		t.Fatalf("the node's agent/self: %+v %v", self, err)
	}
	if jobs, _, err := nc.Jobs().List(nil); err != nil || len(jobs) != 1 {
		t.Fatalf("jobs through the node's address: %v %v", jobs, err)
	}
	anon := nodeClient("")
	if _, err := anon.Agent().Self(); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("anonymous agent/self on the node: %v", err)
	}
	if _, _, err := anon.Jobs().List(nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("anonymous jobs through the node: %v", err)
	}

	secretFile := filepath.Join(nodeDir, "client", "client", "node-secret")
	secret, err := os.ReadFile(secretFile)
	if err != nil {
		t.Fatalf("the node keeps its secret in its state: %v", err)
	}
	raw, err := c.Raw().Response("/v1/node/"+nodeID, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 1<<20)
	n, _ := raw.Read(body)
	raw.Close()
	if strings.Contains(string(body[:n]), strings.TrimSpace(string(secret))) {
		t.Fatal("GET /v1/node/:id shows the node's secret")
	}

	// Another secret for the same node ID is refused.
	node.stop()
	if err := os.WriteFile(secretFile, []byte("0c1d8d1e-6b6f-4b59-9a7c-2f3c1e0d9b11\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	imposter := startProc(t, nodeDir, nodeArgs...)
	waitFor(t, 30*time.Second, "the imposter's refusal", func() bool {
		return strings.Contains(imposter.Log.String(), "registered with another secret")
	})
	imposter.stop()

	// A node agent with another CA's certificate is refused at the TLS
	// handshake and never registers.
	badDir := filepath.Join(dir, "intruder")
	t.Cleanup(func() { killProcsUnder(badDir) })
	intruder := startProc(t, badDir, "-client", "-servers", srv.addr, "-node-name", "intruder", "-enable-raw-exec",
		"-tls-ca-file", ca.CAFile, "-tls-cert-file", badCert, "-tls-key-file", badKey)
	waitFor(t, 30*time.Second, "the intruder's refusal", func() bool {
		return strings.Contains(intruder.Log.String(), "node registration failed") && strings.Contains(intruder.Log.String(), "certificate")
	})
	intruder.stop()
	nodes, _, err := c.Nodes().List(nil)
	if err != nil || len(nodes) != 1 || nodes[0].Name != "a" {
		t.Fatalf("nodes after the refusals: %+v %v", nodes, err)
	}
}
