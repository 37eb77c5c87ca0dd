package main

import "testing"

// TestAddressFromFlagAndEnvironment: the agent's address is -address,
// else DROVER_ADDR, else NOMAD_ADDR (a Nomad user's environment works as
// NOMAD_TOKEN and NOMAD_NAMESPACE do), else the default; a bare host:port
// is plain HTTP.
func TestAddressFromFlagAndEnvironment(t *testing.T) {
	t.Setenv("DROVER_ADDR", "")
	t.Setenv("NOMAD_ADDR", "")
	if got := addressFrom(""); got != defaultAddr {
		t.Fatalf("no flag, no environment: %q, want %q", got, defaultAddr)
	}
	t.Setenv("NOMAD_ADDR", "https://nomad.example:4646")
	if got := addressFrom(""); got != "https://nomad.example:4646" {
		t.Fatalf("NOMAD_ADDR: %q", got)
	}
	t.Setenv("DROVER_ADDR", "10.0.0.5:4646")
	if got := addressFrom(""); got != "http://10.0.0.5:4646" {
		t.Fatalf("DROVER_ADDR over NOMAD_ADDR: %q", got)
	}
	if got := addressFrom("https://flag:4646"); got != "https://flag:4646" {
		t.Fatalf("-address over the environment: %q", got)
	}
}
