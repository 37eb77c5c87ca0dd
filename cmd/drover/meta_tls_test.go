package main

import (
	"strings"
	"testing"

	"github.com/drover-sched/drover/agent"
	"github.com/drover-sched/drover/internal/testtls"
)

// TestTLSFlagsAndEnvironment: against an agent serving HTTPS that
// requires client certificates, the CLI verifies the agent with -ca-cert
// (or DROVER_CACERT / NOMAD_CACERT) and presents -client-cert/-client-key
// (or their environment variables); without them, or with a certificate
// of another CA, it is refused.
func TestTLSFlagsAndEnvironment(t *testing.T) {
	ca := testtls.NewCA(t, "drover")
	cert, key := ca.Issue(t, "server")
	cliCert, cliKey := ca.Issue(t, "cli")
	other := testtls.NewCA(t, "other")
	otherCert, otherKey := other.Issue(t, "intruder")
	ta := newTestAgent(t, func(c *agent.Config) {
		c.TLS = agent.TLSConfig{CertFile: cert, KeyFile: key, CAFile: ca.CAFile, VerifyHTTPSClient: true}
	})
	addr := "-address=https://" + ta.addr
	r := runCmd(t, "node", "status", addr)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "certificate signed by unknown authority")
	r = runCmd(t, "node", "status", addr, "-ca-cert", ca.CAFile)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "certificate required")
	r = runCmd(t, "node", "status", addr, "-ca-cert", ca.CAFile, "-client-cert", otherCert, "-client-key", otherKey)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "certificate required") // Go sends no certificate the server's CAs did not sign
	waitFor(t, 20e9, "the node over HTTPS", func() bool {
		r = runCmd(t, "node", "status", addr, "-ca-cert", ca.CAFile, "-client-cert", cliCert, "-client-key", cliKey)
		return r.code == 0 && strings.Contains(r.stdout, "test-node")
	})
	mustContain(t, r.stdout, "test-node")
	mustCode(t, runCmd(t, "node", "status", addr, "-tls-skip-verify", "-client-cert", cliCert, "-client-key", cliKey), 0)

	t.Setenv("DROVER_CACERT", ca.CAFile)
	t.Setenv("DROVER_CLIENT_CERT", cliCert)
	t.Setenv("DROVER_CLIENT_KEY", cliKey)
	mustCode(t, runCmd(t, "node", "status", addr), 0)
	t.Setenv("DROVER_CACERT", "")
	t.Setenv("DROVER_CLIENT_CERT", "")
	t.Setenv("DROVER_CLIENT_KEY", "")
	t.Setenv("NOMAD_CACERT", ca.CAFile)
	t.Setenv("NOMAD_CLIENT_CERT", cliCert)
	t.Setenv("NOMAD_CLIENT_KEY", cliKey)
	mustCode(t, runCmd(t, "node", "status", addr), 0)
	// A flag wins over the environment.
	mustCode(t, runCmd(t, "node", "status", addr, "-client-cert", otherCert, "-client-key", otherKey), 1)
}
