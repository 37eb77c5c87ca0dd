package acl_test

import (
	"testing"

	"github.com/drover-sched/drover/acl"
)

func compile(t *testing.T, policies ...string) *acl.ACL {
	t.Helper()
	var rules []*acl.Rules
	for _, p := range policies {
		r, err := acl.ParseRules(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		rules = append(rules, r)
	}
	return acl.Compile(rules)
}

// TestNamespaceCapabilities: levels grant Nomad's sets; exact names win
// over globs, the closest glob over wider ones; deny wins when merged; "*"
// (all namespaces, for lists) is allowed when any namespace allows.
func TestNamespaceCapabilities(t *testing.T) {
	a := compile(t,
		`namespace "*" { policy = "read" }
		 namespace "prod-*" { policy = "deny" }
		 namespace "prod-web" { policy = "write" }
		 namespace "team-*" { capabilities = ["submit-job"] }
		 namespace "team-a*" { policy = "read" }`,
		`namespace "dev" { policy = "write" }`,
		`namespace "dev" { capabilities = ["alloc-exec"] }
		 namespace "qa" { policy = "write" }`,
		`namespace "qa" { policy = "deny" }`,
	)
	for _, tc := range []struct {
		ns, op string
		want   bool
	}{
		{"default", acl.CapListJobs, true},
		{"default", acl.CapReadJob, true},
		{"default", acl.CapSubmitJob, false},
		{"default", acl.CapReadLogs, false},
		{"prod-db", acl.CapReadJob, false},   // the closer glob denies
		{"prod-web", acl.CapSubmitJob, true}, // the exact name wins
		{"team-b", acl.CapSubmitJob, true},   // team-* only
		{"team-b", acl.CapReadJob, false},    // team-* is closer than *
		{"team-alpha", acl.CapReadJob, true}, // team-a* is closer than team-*
		{"team-alpha", acl.CapSubmitJob, false},
		{"dev", acl.CapAllocExec, true}, // merged across policies
		{"dev", acl.CapSubmitJob, true},
		{"qa", acl.CapReadJob, false}, // deny wins the merge
		{acl.AllNamespaces, acl.CapSubmitJob, true},
		{acl.AllNamespaces, acl.CapAllocNodeExec, false},
	} {
		if got := a.AllowNamespaceOp(tc.ns, tc.op); got != tc.want {
			t.Errorf("%s in %q: %v, want %v", tc.op, tc.ns, got, tc.want)
		}
	}
	if a.AllowNamespace("qa") || a.AllowNamespace("prod-db") || !a.AllowNamespace("default") {
		t.Error("AllowNamespace: deny namespaces allow nothing, read ones something")
	}
	if a.IsManagement() || a.AllowNodeRead() || a.AllowAgentRead() || a.AllowOperatorRead() {
		t.Error("namespace-only policies grant node, agent or operator rights")
	}
	none := compile(t)
	if none.AllowNamespaceOp("default", acl.CapListJobs) || none.AllowNamespace(acl.AllNamespaces) {
		t.Error("an ACL without policies allows something")
	}
	scale := compile(t, `namespace "default" { policy = "scale" }`)
	if !scale.AllowNamespaceOp("default", acl.CapScaleJob) || !scale.AllowNamespaceOp("default", acl.CapReadJob) ||
		scale.AllowNamespaceOp("default", acl.CapSubmitJob) || scale.AllowNamespaceOp("default", acl.CapListJobs) {
		t.Error("scale grants Nomad's scale set")
	}
}

// TestBlockLevels: agent, node and operator take the most privilege, deny
// winning; write allows reads.
func TestBlockLevels(t *testing.T) {
	a := compile(t, `node { policy = "read" }
		agent { policy = "write" }
		operator { policy = "read" }`,
		`node { policy = "write" }`)
	if !a.AllowNodeRead() || !a.AllowNodeWrite() || !a.AllowAgentRead() || !a.AllowAgentWrite() ||
		!a.AllowOperatorRead() || a.AllowOperatorWrite() {
		t.Errorf("levels: node r/w %v/%v, agent %v/%v, operator %v/%v", a.AllowNodeRead(), a.AllowNodeWrite(),
			a.AllowAgentRead(), a.AllowAgentWrite(), a.AllowOperatorRead(), a.AllowOperatorWrite())
	}
	d := compile(t, `node { policy = "write" }`, `node { policy = "deny" }`)
	if d.AllowNodeRead() {
		t.Error("deny does not win over write")
	}
	m := acl.ManagementACL()
	if !m.IsManagement() || !m.AllowNodeWrite() || !m.AllowOperatorWrite() || !m.AllowNamespaceOp("any", acl.CapAllocExec) {
		t.Error("management allows everything")
	}
	var nilACL *acl.ACL
	if nilACL.AllowNodeRead() || nilACL.AllowNamespaceOp("default", acl.CapReadJob) {
		t.Error("a nil ACL allows something")
	}
}
