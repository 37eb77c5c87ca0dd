package agent

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
)

// TLSConfig is the agent's TLS, Nomad's tls block for HTTP: with CertFile
// and KeyFile the agent serves HTTPS (servers their API, clients their
// client routes); CAFile verifies the other side: clients check the
// servers' certificates against it, and servers require every HTTPS
// client (node agents, the CLI, other servers forwarding) to present a
// certificate it signed (Nomad's verify_https_client). The same
// certificate is the agent's client certificate when it calls others.
type TLSConfig struct {
	CertFile string
	KeyFile  string
	CAFile   string
	// VerifyHTTPSClient makes a server with CAFile require client
	// certificates (-tls-ca-file sets it; a -config file's tls block
	// follows Nomad: verify_https_client, default false).
	VerifyHTTPSClient bool
}

// Enabled reports whether the agent serves HTTPS.
func (c TLSConfig) Enabled() bool { return c.CertFile != "" && c.KeyFile != "" }

func (c TLSConfig) check() error {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return fmt.Errorf("TLS: -tls-cert-file and -tls-key-file go together")
	}
	return nil
}

func (c TLSConfig) pool() (*x509.CertPool, error) {
	if c.CAFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, fmt.Errorf("TLS: read CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("TLS: CA file %s holds no PEM certificate", c.CAFile)
	}
	return pool, nil
}

// ServerConfig is what the agent's listener serves with (nil without
// TLS).
func (c TLSConfig) ServerConfig() (*tls.Config, error) {
	if err := c.check(); err != nil || !c.Enabled() {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS: load certificate and key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	pool, err := c.pool()
	if err != nil {
		return nil, err
	}
	if pool != nil && c.VerifyHTTPSClient {
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// ClientConfig is what the agent calls other agents with: their
// certificates verified against CAFile (the system's roots without one),
// its own certificate presented (nil without TLS).
func (c TLSConfig) ClientConfig() (*tls.Config, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if !c.Enabled() && c.CAFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	pool, err := c.pool()
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = pool
	if c.Enabled() {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("TLS: load certificate and key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// httpClient is an HTTP client calling with cfg (nil: plain defaults).
func httpClient(cfg *tls.Config) *http.Client {
	hc := &http.Client{}
	if cfg != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = cfg
		hc.Transport = t
	}
	return hc
}
