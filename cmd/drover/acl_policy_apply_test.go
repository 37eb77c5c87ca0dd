package main

import "testing"

// TestACLPolicies: apply (HCL and JSON), list, info and delete; a policy
// that breaks the language is refused naming the line and column, and a
// client token may not write policies.
func TestACLPolicies(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t, withACLs)
	root := ta.bootstrap(t)
	good := writeFile(t, "readonly.hcl", "namespace \"*\" {\n  policy = \"read\"\n}\nnode { policy = \"read\" }\n")
	r := ta.run(t, "acl", "policy", "apply", "-token", root, "-description", "reads everything", "readonly", good)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, `Successfully wrote "readonly" ACL policy!`)
	r = ta.run(t, "acl", "policy", "apply", "-token", root, "ops", writeFile(t, "ops.json", `{"node": {"policy": "write"}}`))
	mustCode(t, r, 0)
	bad := writeFile(t, "bad.hcl", "namespace \"*\" {\n  policy = \"reed\"\n}\n")
	r = ta.run(t, "acl", "policy", "apply", "-token", root, "broken", bad)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Error writing ACL policy", "Rules: line 2, column 12", `"reed"`)
	r = ta.run(t, "acl", "policy", "list", "-token", root)
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Name", "readonly", "reads everything", "ops")
	if r := ta.run(t, "acl", "policy", "info", "-token", root, "broken"); r.code != 1 {
		t.Fatalf("the refused policy was written: %s", r)
	}
	r = ta.run(t, "acl", "policy", "info", "-token", root, "readonly")
	mustCode(t, r, 0)
	mustContain(t, r.stdout, "Rules", `policy = "read"`)
	mustKV(t, r.stdout, "Name", "readonly")

	r = ta.run(t, "acl", "token", "create", "-token", root, "-name", "viewer", "-policy", "readonly")
	viewer := field(t, secretLine, r.stdout)
	r = ta.run(t, "acl", "policy", "apply", "-token", viewer, "mine", good)
	mustCode(t, r, 1)
	mustContain(t, r.stderr, "Permission denied")
	r = ta.run(t, "acl", "policy", "list", "-token", viewer)
	mustCode(t, r, 0)
	if r.stdout != "Name      Description\nreadonly  reads everything\n" {
		t.Fatalf("a client token lists other policies:\n%s", r.stdout)
	}

	mustContain(t, ta.run(t, "acl", "policy", "delete", "-token", root, "ops").stdout, `Successfully deleted "ops" ACL policy!`)
	mustCode(t, ta.run(t, "acl", "policy", "info", "-token", root, "ops"), 1)
}
