package acl

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
)

// Rules is a parsed ACL policy: Nomad's policy language, in HCL or JSON.
//
//	namespace "<name or glob>" { policy = "read|write|scale|deny"  capabilities = [...] }
//	node     { policy = "read|write|deny" }
//	agent    { policy = "read|write|deny" }
//	operator { policy = "read|write|deny"  capabilities = [...] }
//
// node_pool, host_volume, quota and plugin blocks are accepted and checked
// as Nomad checks them, and guard nothing (drover serves no quota, plugin,
// host volume or node pool route). variables and sentinel blocks are
// refused: drover has neither.
type Rules struct {
	Namespaces []*NamespaceRule
	// Agent, Node, Operator, Quota and Plugin are nil when the policy has
	// no such block.
	Agent, Node   *LevelRule
	Operator      *OperatorRule
	Quota, Plugin *LevelRule
	NodePools     []*NamedRule
	HostVolumes   []*NamedRule
}

// NamespaceRule is one namespace block. Capabilities holds what the block
// lists plus what its policy level grants.
type NamespaceRule struct {
	// Name is a namespace name or a glob ("*" matches any run of
	// characters).
	Name         string
	Policy       string
	Capabilities []string
}

// LevelRule is a block that takes only a policy level (agent, node,
// quota, plugin).
type LevelRule struct{ Policy string }

// OperatorRule is the operator block: a level and capabilities (expanded).
type OperatorRule struct {
	Policy       string
	Capabilities []string
}

// NamedRule is a labelled block with a level and capabilities (node_pool,
// host_volume).
type NamedRule struct {
	Name         string
	Policy       string
	Capabilities []string
}

// PolicyError is a policy that does not parse or breaks a rule of the
// language. Line and Column (1-based) locate it in the rules' source; both
// are 0 when the error is about the whole policy.
type PolicyError struct {
	Line, Column int
	Msg          string
}

// Error implements error: "line L, column C: <what is wrong>".
func (e *PolicyError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

func errAt(r hcl.Range, format string, args ...any) *PolicyError {
	return &PolicyError{Line: r.Start.Line, Column: r.Start.Column, Msg: fmt.Sprintf(format, args...)}
}

func diagError(diags hcl.Diagnostics) *PolicyError {
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Subject != nil {
			return errAt(*d.Subject, "%s", msg)
		}
		return &PolicyError{Msg: msg}
	}
	return nil
}

var (
	validNamespaceGlob = regexp.MustCompile(`^[a-zA-Z0-9-*]{1,128}$`)
	validNodePoolGlob  = regexp.MustCompile(`^[a-zA-Z0-9-_*]{1,128}$`)
)

var rootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "namespace", LabelNames: []string{"name"}},
	{Type: "node_pool", LabelNames: []string{"name"}},
	{Type: "host_volume", LabelNames: []string{"name"}},
	{Type: "agent"}, {Type: "node"}, {Type: "operator"}, {Type: "quota"}, {Type: "plugin"}, {Type: "sentinel"},
}}

var levelCapsSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "policy"}, {Name: "capabilities"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "variables"}},
}

var levelSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "policy", Required: true}}}

// ParseRules parses a policy's rules (HCL, or JSON when the source starts
// with "{") and checks them as Nomad does when a policy is written: the
// block types, namespace names and globs, policy levels and capabilities.
// Every error is a *PolicyError naming the line and column.
func ParseRules(src string) (*Rules, error) {
	trimmed := strings.TrimSpace(src)
	if trimmed == "" {
		return nil, &PolicyError{Msg: "rules are empty: a policy needs at least one namespace, node, agent or operator block"}
	}
	var file *hcl.File
	var diags hcl.Diagnostics
	if strings.HasPrefix(trimmed, "{") {
		file, diags = hcljson.Parse([]byte(src), "rules")
	} else {
		file, diags = hclsyntax.ParseConfig([]byte(src), "rules", hcl.InitialPos)
	}
	if err := diagError(diags); err != nil {
		return nil, err
	}
	content, diags := file.Body.Content(rootSchema)
	if err := diagError(diags); err != nil {
		return nil, err
	}
	r := &Rules{}
	seen := map[string]hcl.Range{}
	for _, b := range content.Blocks {
		id := b.Type
		if len(b.Labels) > 0 {
			id += " " + b.Labels[0]
		}
		if prev, dup := seen[id]; dup {
			return nil, errAt(b.DefRange, "%s block repeated (first at line %d): merge the two", describe(b), prev.Start.Line)
		}
		seen[id] = b.DefRange
		if err := r.addBlock(b); err != nil {
			return nil, err
		}
	}
	if len(content.Blocks) == 0 {
		return nil, &PolicyError{Line: 1, Column: 1, Msg: "a policy needs at least one namespace, node, agent or operator block"}
	}
	return r, nil
}

func describe(b *hcl.Block) string {
	if len(b.Labels) > 0 {
		return fmt.Sprintf("%s %q", b.Type, b.Labels[0])
	}
	return b.Type
}

func (r *Rules) addBlock(b *hcl.Block) error {
	switch b.Type {
	case "namespace":
		name := b.Labels[0]
		if !validNamespaceGlob.MatchString(name) {
			return errAt(b.LabelRanges[0], "namespace %q: a namespace name or glob is 1 to 128 letters, digits, '-' and '*'", name)
		}
		level, caps, err := levelAndCaps(b, validLevel, "deny, read, write or scale", namespaceCapabilities)
		if err != nil {
			return err
		}
		caps = append(caps, expandNamespacePolicy(level)...)
		for _, c := range caps {
			caps = append(caps, impliedNamespaceCapabilities[c]...)
		}
		r.Namespaces = append(r.Namespaces, &NamespaceRule{Name: name, Policy: level, Capabilities: caps})
	case "node_pool", "host_volume":
		name := b.Labels[0]
		valid, allowed := validNodePoolGlob, nodePoolCapabilities
		if b.Type == "host_volume" {
			valid, allowed = validNamespaceGlob, hostVolumeCapabilities
		}
		if !valid.MatchString(name) {
			return errAt(b.LabelRanges[0], "%s %q: not a valid name or glob", b.Type, name)
		}
		level, caps, err := levelAndCaps(b, validLevel, "deny, read, write or scale", allowed)
		if err != nil {
			return err
		}
		rule := &NamedRule{Name: name, Policy: level, Capabilities: caps}
		if b.Type == "node_pool" {
			r.NodePools = append(r.NodePools, rule)
		} else {
			r.HostVolumes = append(r.HostVolumes, rule)
		}
	case "operator":
		level, caps, err := levelAndCaps(b, validLevel, "deny, read or write", operatorCapabilities)
		if err != nil {
			return err
		}
		r.Operator = &OperatorRule{Policy: level, Capabilities: append(caps, expandOperatorPolicy(level)...)}
	case "agent", "node", "quota", "plugin":
		valid, want := validLevel, "deny, read or write"
		if b.Type == "plugin" {
			valid = func(l string) bool { return l == PolicyDeny || l == PolicyRead || l == PolicyList || l == PolicyWrite }
			want = "deny, read, list or write"
		}
		content, diags := b.Body.Content(levelSchema)
		if err := diagError(diags); err != nil {
			return err
		}
		level, err := stringAttr(content.Attributes["policy"], b.Type)
		if err != nil {
			return err
		}
		if !valid(level) {
			return errAt(content.Attributes["policy"].Expr.Range(), "%s block: policy %q is not one of %s", b.Type, level, want)
		}
		rule := &LevelRule{Policy: level}
		switch b.Type {
		case "agent":
			r.Agent = rule
		case "node":
			r.Node = rule
		case "quota":
			r.Quota = rule
		case "plugin":
			r.Plugin = rule
		}
	case "sentinel":
		return errAt(b.DefRange, "sentinel block: drover has no Sentinel policies (Nomad Enterprise); remove the block")
	}
	return nil
}

// levelAndCaps reads a block's optional policy level and capabilities
// list, refusing unknown levels and capabilities at their position. At
// least one of the two must be set.
func levelAndCaps(b *hcl.Block, validLevel func(string) bool, levels string, allowed capSet) (string, []string, error) {
	content, diags := b.Body.Content(levelCapsSchema)
	if err := diagError(diags); err != nil {
		return "", nil, err
	}
	for _, vb := range content.Blocks {
		if b.Type == "namespace" {
			return "", nil, errAt(vb.DefRange, "%s: variables block: drover has no variables; remove the block", describe(b))
		}
		return "", nil, errAt(vb.DefRange, "%s: unsupported block %q", describe(b), vb.Type)
	}
	var level string
	if a := content.Attributes["policy"]; a != nil {
		l, err := stringAttr(a, describe(b))
		if err != nil {
			return "", nil, err
		}
		if !validLevel(l) {
			return "", nil, errAt(a.Expr.Range(), "%s: policy %q is not one of %s", describe(b), l, levels)
		}
		level = l
	}
	var caps []string
	if a := content.Attributes["capabilities"]; a != nil {
		elems, diags := hcl.ExprList(a.Expr)
		if err := diagError(diags); err != nil {
			return "", nil, errAt(a.Expr.Range(), "%s: capabilities must be a list of strings", describe(b))
		}
		for _, e := range elems {
			v, diags := e.Value(nil)
			if err := diagError(diags); err != nil {
				return "", nil, err
			}
			if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
				return "", nil, errAt(e.Range(), "%s: each capability must be a string", describe(b))
			}
			c := v.AsString()
			if !allowed.has(c) {
				return "", nil, errAt(e.Range(), "%s: unknown capability %q", describe(b), c)
			}
			caps = append(caps, c)
		}
	}
	if level == "" && content.Attributes["capabilities"] == nil {
		return "", nil, errAt(b.DefRange, "%s: set policy or capabilities", describe(b))
	}
	return level, caps, nil
}

func stringAttr(a *hcl.Attribute, where string) (string, error) {
	v, diags := a.Expr.Value(nil)
	if err := diagError(diags); err != nil {
		return "", err
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return "", errAt(a.Expr.Range(), "%s: %s must be a string", where, a.Name)
	}
	return v.AsString(), nil
}
