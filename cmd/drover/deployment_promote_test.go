package main

import "testing"

// TestDeploymentPromote: promoting the canary lets the update finish; the
// command monitors the evaluation the promotion creates.
func TestDeploymentPromote(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	d := ta.canaryDeployment(t, "promo")
	r := ta.run(t, "deployment", "promote", "-group", "nope", d.ID[:8])
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error promoting deployment")
	r = ta.run(t, "deployment", "promote", d.ID[:8])
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Deployment "`+d.ID[:8]+`" promoted`, "Monitoring evaluation", "Monitoring deployment", "successful")
}
