package agent

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drover-sched/drover/httpapi"
)

// forwardKeyFile holds a server's forward key seed (see
// httpapi.ForwardSigner), under the server's data dir.
const forwardKeyFile = "forward-key"

// loadForwardSigner loads the server's forward key from dir, creating it
// on first start (0600: whoever reads it can pose as the server to the
// client agents).
func loadForwardSigner(dir string) (*httpapi.ForwardSigner, error) {
	p := filepath.Join(dir, forwardKeyFile)
	seed, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		if seed, err = httpapi.NewForwardKeySeed(); err != nil {
			return nil, fmt.Errorf("forward key: %w", err)
		}
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, seed, 0o600); err != nil {
			return nil, fmt.Errorf("forward key: %w", err)
		}
		if err := os.Rename(tmp, p); err != nil {
			return nil, fmt.Errorf("forward key: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("forward key: %w", err)
	}
	return httpapi.NewForwardSigner(seed)
}

// listenClient binds a client-only agent's listener, where its node
// serves Nomad's client routes, and advertises its address in the node.
func (a *Agent) listenClient() error {
	ln, err := a.listen()
	if err != nil {
		return fmt.Errorf("the client's HTTP address (-http-addr): %w", err)
	}
	a.listener = ln
	adv := a.cfg.AdvertiseHTTP
	if adv == "" {
		adv = ln.Addr().String()
	}
	a.node.SetHTTPAddr(adv)
	return nil
}

// clientAPI is the client-only agent's handler: the node's client routes,
// each request admitted by a server's forward signature or by its token,
// checked against the control plane's API (see httpapi.ClientAuth).
func (a *Agent) clientAPI() (http.Handler, error) {
	auth := &httpapi.ClientAuth{NodeID: a.node.NodeID(), AllocNamespace: a.node.AllocNamespace}
	var upstream http.Handler
	if len(a.cfg.Servers) > 0 {
		base := a.cfg.Servers[0]
		tc, err := a.cfg.TLS.ClientConfig()
		if err != nil {
			return nil, err
		}
		if !strings.Contains(base, "://") {
			base = "http://" + base
			if tc != nil {
				base = "https://" + a.cfg.Servers[0]
			}
		}
		u, err := url.Parse(base)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("server address %q does not parse", a.cfg.Servers[0])
		}
		auth.APIAddress = strings.TrimRight(u.String(), "/")
		upstream = serversProxy(u, tc)
		if a.cfg.ControlPlane == nil {
			// Servers of the embedded home forward, signed; the AWS home
			// has none.
			hc := httpClient(tc)
			hc.Timeout = 10 * time.Second
			auth.HTTPClient = hc
			auth.ForwardKey = func(ctx context.Context) (ed25519.PublicKey, error) {
				return httpapi.FetchForwardKey(ctx, hc, auth.APIAddress)
			}
		}
	}
	return httpapi.NewClientServer(a.node, httpapi.Config{ClientAuth: auth, Upstream: upstream, Logger: a.log.Named("client-http"),
		Agent: httpapi.AgentInfo{Name: a.nodeName(), Region: a.cfg.Region, Datacenter: a.cfg.Datacenter, Version: Version,
			HTTPAddr: a.listener.Addr().String(), Client: true, NodeID: a.node.NodeID()}}), nil
}

// serversProxy passes a client agent's requests for the servers' API on
// to server (see httpapi.Config.Upstream), over tc when the agents use
// TLS. Requests keep their method, path, query, body and token; a server
// that cannot be reached is a 502.
func serversProxy(server *url.URL, tc *tls.Config) http.Handler {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	return &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(server) },
		Transport:     tr,
		FlushInterval: -1, // blocking queries and streams pass through as they come
	}
}
