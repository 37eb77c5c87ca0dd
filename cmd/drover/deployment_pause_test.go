package main

import "testing"

// TestDeploymentPauseResume: pause and resume change the deployment's
// status.
func TestDeploymentPauseResume(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	d := ta.canaryDeployment(t, "pausing")
	r := ta.run(t, "deployment", "pause", d.ID[:8])
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Deployment "`+d.ID[:8]+`" paused`)
	if got, _, _ := ta.client.Deployments().Info(d.ID, nil); got.Status != "paused" {
		t.Fatalf("status after pause: %s", got.Status)
	}
	r = ta.run(t, "deployment", "resume", "-detach", d.ID[:8])
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Deployment "`+d.ID[:8]+`" resumed`)
	if got, _, _ := ta.client.Deployments().Info(d.ID, nil); got.Status != "running" {
		t.Fatalf("status after resume: %s", got.Status)
	}
}
