package main

import "testing"

func TestDeploymentFail(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	d := ta.canaryDeployment(t, "failing")
	r := ta.run(t, "deployment", "fail", "-detach", d.ID[:8])
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Deployment "`+d.ID[:8]+`" failed`)
	if got, _, _ := ta.client.Deployments().Info(d.ID, nil); got.Status != "failed" {
		t.Fatalf("status after fail: %s", got.Status)
	}
	r = ta.run(t, "deployment", "fail", d.ID[:8])
	mustCode(t, r, 1)
	mustContain(t, r.stderr, `Error failing deployment "`+d.ID[:8]+`": `)
}
