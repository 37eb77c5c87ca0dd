package main

import (
	"strings"
	"testing"
)

// TestExposure: a server beyond loopback needs ACLs and TLS; each missing
// one is named with why.
func TestExposure(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		acl, tls bool
		want     []string
	}{
		{"127.0.0.1:4646", false, false, nil},
		{"[::1]:4646", false, false, nil},
		{"localhost:4646", false, false, nil},
		{"10.0.0.5:4646", true, true, nil},
		{"0.0.0.0:4646", false, false, []string{"not a loopback address", "without ACLs", "without TLS"}},
		{":4646", true, false, []string{"without TLS"}},
		{"10.0.0.5:4646", false, true, []string{"without ACLs"}},
	} {
		got := exposure(tc.addr, tc.acl, tc.tls)
		if (got == "") != (len(tc.want) == 0) {
			t.Errorf("%s acl=%v tls=%v: %q", tc.addr, tc.acl, tc.tls, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s acl=%v tls=%v: %q lacks %q", tc.addr, tc.acl, tc.tls, got, w)
			}
		}
	}
}

// TestAgentRefusesExposedServer: a server on a non-loopback address
// without ACLs or TLS does not start and says why; -insecure lets it past
// the check with a warning (the address here is TEST-NET-1, which this
// machine does not have, so nothing binds).
func TestAgentRefusesExposedServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runCmd(t, "agent", "-server", "-data-dir", dir, "-http-addr", "0.0.0.0:0")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "refusing to start", "without ACLs anyone who reaches it may register jobs", "without TLS", "-insecure")
	r = runCmd(t, "agent", "-server", "-acl-enabled", "-data-dir", dir, "-http-addr", "192.0.2.1:0")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "refusing to start", "without TLS")
	r = runCmd(t, "agent", "-server", "-insecure", "-data-dir", dir, "-http-addr", "192.0.2.1:0")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "WARNING (-insecure)", "listen on 192.0.2.1:0")
}

// TestAgentConfigFile: -config reads a Nomad agent file's acl and tls
// blocks, and refuses other blocks naming them.
func TestAgentConfigFile(t *testing.T) {
	f, err := loadAgentFile(writeFile(t, "agent.hcl", `
acl { enabled = true }
tls {
  http = true
  cert_file = "a.pem"
  key_file = "a-key.pem"
  ca_file = "ca.pem"
  verify_https_client = true
}`))
	if err != nil {
		t.Fatal(err)
	}
	if !f.ACL.Enabled || f.TLS.CertFile != "a.pem" || f.TLS.CAFile != "ca.pem" || !f.TLS.VerifyHTTPSClient {
		t.Fatalf("config: %+v %+v", f.ACL, f.TLS)
	}
	_, err = loadAgentFile(writeFile(t, "agent.hcl", "acl { enabled = true }\n\nserver {\n  enabled = true\n}\n"))
	if err == nil || !strings.Contains(err.Error(), "agent.hcl:3,1") || !strings.Contains(err.Error(), `Unsupported block type`) {
		t.Fatalf("an unsupported block: %v", err)
	}
	r := runCmd(t, "agent", "-server", "-data-dir", t.TempDir(), "-http-addr", "0.0.0.0:0",
		"-config", writeFile(t, "acl.hcl", "acl { enabled = true }"))
	mustCode(t, r, 1)
	if strings.Contains(r.stderr, "without ACLs") || !strings.Contains(r.stderr, "without TLS") {
		t.Fatalf("the file's acl block did not count: %s", r.stderr)
	}
}

// TestAgentRefusesNegativeResources: -cpu-total-compute and
// -memory-total-mb below 0 are refused, each naming its flag and value.
func TestAgentRefusesNegativeResources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runCmd(t, "agent", "-client", "-servers", "127.0.0.1:1", "-data-dir", dir, "-cpu-total-compute", "-5")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "-cpu-total-compute -5: must not be negative")
	r = runCmd(t, "agent", "-client", "-servers", "127.0.0.1:1", "-data-dir", dir, "-memory-total-mb", "-1")
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "-memory-total-mb -1: must not be negative")
}

// TestAgentRefusesMalformedHTTPAddr: -http-addr must be HOST:PORT (it was
// refused as "not a loopback address", or failed at bind).
func TestAgentRefusesMalformedHTTPAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"notanaddr":       "-http-addr notanaddr: not HOST:PORT",
		"127.0.0.1:99999": `-http-addr 127.0.0.1:99999: port "99999": must be a number from 0 to 65535`,
		"127.0.0.1:web":   `port "web"`,
		"127.0.0.1 :4925": `-http-addr 127.0.0.1 :4925: not HOST:PORT (host "127.0.0.1 " has white space)`,
	} {
		r := runCmd(t, "agent", "-dev", "-data-dir", t.TempDir(), "-http-addr", addr)
		mustCode(t, r, 1)
		mustContain(t, r.stderr, want)
		if strings.Contains(r.stderr, "loopback") {
			t.Errorf("%s: %s", addr, r.stderr)
		}
	}
	// -servers likewise (a client started and retried for ever).
	for addr, want := range map[string]string{
		"127.0.0.1:99999":    `-servers 127.0.0.1:99999: port "99999": must be a number from 1 to 65535`,
		"nohostport":         "-servers nohostport: not HOST:PORT",
		"127.0.0.1:0":        `port "0": must be a number from 1 to 65535`,
		"ftp://127.0.0.1:21": "not HOST:PORT or an http(s)://HOST:PORT URL",
	} {
		r := runCmd(t, "agent", "-client", "-data-dir", t.TempDir(), "-servers", "127.0.0.1:4646,"+addr)
		mustCode(t, r, 1)
		mustContain(t, r.stderr, want)
	}
}
