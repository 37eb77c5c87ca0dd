package acl_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/drover-sched/drover/acl"
)

// TestParseRulesHCLAndJSON: the same policy in HCL and in JSON (Nomad's
// JSON form) parses to the same rules, with the levels expanded into
// Nomad's capability sets.
func TestParseRulesHCLAndJSON(t *testing.T) {
	hclSrc := `
namespace "default" {
  policy       = "read"
  capabilities = ["submit-job"]
}
namespace "prod-*" { policy = "deny" }
node     { policy = "read" }
agent    { policy = "write" }
operator { policy = "read" }
quota    { policy = "read" }
plugin   { policy = "list" }
host_volume "data" { policy = "write" }
node_pool "gpu" { capabilities = ["read"] }
`
	jsonSrc := `{
  "namespace": {"default": {"policy": "read", "capabilities": ["submit-job"]}, "prod-*": {"policy": "deny"}},
  "node": {"policy": "read"}, "agent": {"policy": "write"}, "operator": {"policy": "read"},
  "quota": {"policy": "read"}, "plugin": {"policy": "list"},
  "host_volume": {"data": {"policy": "write"}}, "node_pool": {"gpu": {"capabilities": ["read"]}}
}`
	h, err := acl.ParseRules(hclSrc)
	if err != nil {
		t.Fatal(err)
	}
	j, err := acl.ParseRules(jsonSrc)
	if err != nil {
		t.Fatal(err)
	}
	sortRules(h)
	sortRules(j)
	if !reflect.DeepEqual(h, j) {
		t.Fatalf("HCL and JSON differ:\n%+v\n%+v", h, j)
	}
	if len(h.Namespaces) != 2 || h.Node.Policy != "read" || h.Agent.Policy != "write" || h.Operator.Policy != "read" ||
		h.Quota == nil || h.Plugin.Policy != "list" || len(h.HostVolumes) != 1 || len(h.NodePools) != 1 {
		t.Fatalf("rules: %+v", h)
	}
	def := h.Namespaces[0]
	for _, c := range []string{acl.CapReadJob, acl.CapListJobs, acl.CapParseJob, acl.CapSubmitJob} {
		if !slices.Contains(def.Capabilities, c) {
			t.Errorf("namespace default lacks %s: %v", c, def.Capabilities)
		}
	}
	if slices.Contains(def.Capabilities, acl.CapAllocExec) {
		t.Errorf("read plus submit-job grants alloc-exec: %v", def.Capabilities)
	}
}

func sortRules(r *acl.Rules) {
	slices.SortFunc(r.Namespaces, func(a, b *acl.NamespaceRule) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range r.Namespaces {
		slices.Sort(n.Capabilities)
	}
}

// TestParseRulesErrors: every rule of the language is checked, and each
// error names the line and column of what breaks it.
func TestParseRulesErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src  string
		line, col  int
		wantSubstr string
	}{
		{"bad level", "namespace \"default\" {\n  policy = \"wrte\"\n}", 2, 12, `policy "wrte" is not one of deny, read, write or scale`},
		{"unknown capability", "namespace \"default\" {\n  capabilities = [\"read-job\", \"reed-job\"]\n}", 2, 31, `unknown capability "reed-job"`},
		{"unknown block", "namespace \"default\" { policy = \"read\" }\nnamespaces \"x\" {}", 2, 1, "Unsupported block type"},
		{"missing label", "namespace {\n  policy = \"read\"\n}", 1, 11, "Missing name for namespace"},
		{"bad name", `namespace "prod/x" { policy = "read" }`, 1, 11, "a namespace name or glob is 1 to 128 letters"},
		{"syntax", "namespace \"default\" {\n  policy = \"read\"\n", 1, 21, "Unclosed configuration block"},
		{"neither level nor capabilities", `namespace "default" {}`, 1, 1, "set policy or capabilities"},
		{"node without level", "node {\n}", 1, 6, `The argument "policy" is required`},
		{"node bad level", "\n\nnode { policy = \"admin\" }", 3, 17, `node block: policy "admin" is not one of deny, read or write`},
		{"unknown attribute", "agent {\n  policy = \"read\"\n  capabilities = []\n}", 3, 3, "Unsupported argument"},
		{"variables refused", "namespace \"default\" {\n  policy = \"read\"\n  variables {\n  }\n}", 3, 3, "drover has no variables"},
		{"sentinel refused", `sentinel { policy = "read" }`, 1, 1, "drover has no Sentinel policies"},
		{"duplicate namespace", "namespace \"a\" { policy = \"read\" }\nnamespace \"a\" { policy = \"write\" }", 2, 1, `namespace "a" block repeated (first at line 1)`},
		{"duplicate node", "node { policy = \"read\" }\nnode { policy = \"write\" }", 2, 1, "node block repeated"},
		{"capability not a string", `namespace "a" { capabilities = [1] }`, 1, 33, "each capability must be a string"},
		{"variable reference", `namespace "a" { policy = read }`, 1, 26, "Variables not allowed"},
		{"json bad level", "{\"namespace\": {\"default\": {\"policy\": \"all\"}}}", 1, 38, `policy "all" is not one of`},
		{"json syntax", "{\"namespace\": ", 1, 15, ""},
		{"empty", "   \n", 0, 0, "rules are empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := acl.ParseRules(tc.src)
			var pe *acl.PolicyError
			if !errors.As(err, &pe) {
				t.Fatalf("want a *PolicyError, got %v", err)
			}
			if pe.Line != tc.line || pe.Column != tc.col {
				t.Errorf("at line %d, column %d; want %d, %d (%v)", pe.Line, pe.Column, tc.line, tc.col, err)
			}
			if !strings.Contains(err.Error(), tc.wantSubstr) {
				t.Errorf("error %q lacks %q", err, tc.wantSubstr)
			}
			if tc.line > 0 && !strings.HasPrefix(err.Error(), "line ") {
				t.Errorf("error %q does not start with its position", err)
			}
		})
	}
}
