package main

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// agentFile is what `drover agent -config FILE` reads of a Nomad agent
// configuration file: its acl and tls blocks (any other block is refused,
// naming its line; give the rest as flags). Flags given on the command
// line win over the file.
//
//	acl { enabled = true }
//	tls {
//	  http = true
//	  cert_file = "agent.pem"  key_file = "agent-key.pem"  ca_file = "ca.pem"
//	  verify_https_client = true
//	}
type agentFile struct {
	ACL *struct {
		Enabled bool `hcl:"enabled,optional"`
	} `hcl:"acl,block"`
	TLS *struct {
		HTTP              bool   `hcl:"http,optional"`
		CAFile            string `hcl:"ca_file,optional"`
		CertFile          string `hcl:"cert_file,optional"`
		KeyFile           string `hcl:"key_file,optional"`
		VerifyHTTPSClient bool   `hcl:"verify_https_client,optional"`
	} `hcl:"tls,block"`
}

// loadAgentFile parses an agent configuration file (HCL, or JSON when it
// ends in .json).
func loadAgentFile(path string) (*agentFile, error) {
	p := hclparse.NewParser()
	var f *hcl.File
	var diags hcl.Diagnostics
	if len(path) > 5 && path[len(path)-5:] == ".json" {
		f, diags = p.ParseJSONFile(path)
	} else {
		f, diags = p.ParseHCLFile(path)
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("-config %s: %s", path, diags.Error())
	}
	var out agentFile
	if diags := gohcl.DecodeBody(f.Body, nil, &out); diags.HasErrors() {
		return nil, fmt.Errorf("-config %s: %s (drover reads the acl and tls blocks of an agent configuration; give the rest as flags)", path, diags.Error())
	}
	if out.TLS != nil && !out.TLS.HTTP && (out.TLS.CertFile != "" || out.TLS.CAFile != "") {
		return nil, fmt.Errorf("-config %s: tls: http = true is needed for drover's HTTPS (drover has no RPC to secure)", path)
	}
	return &out, nil
}
