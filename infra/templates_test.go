// Package infra_test checks template.yaml (SAM) and this Terraform module:
// that they declare the same resources with the same properties and
// policies (parity_test.go, policy_test.go), that both match the table the
// DynamoDB store creates and the AWS calls the functions make, and that the
// tools AWS users run accept them (tools_test.go: terraform validate and a
// mock-provider plan, the SAM transform, the Makefile targets sam build
// runs).
//
// This file loads both templates and renders the parts the tests compare:
// references become tokens ("${StateTable.Arn}", "${aws_dynamodb_table.state.arn}")
// that symbols() maps to one vocabulary.
package infra_test

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"gopkg.in/yaml.v3"

	"github.com/drover-sched/drover/internal/awshome"
)

// CloudFormation side.

// cfnValue converts a YAML node to Go values; CloudFormation's short-form
// tags (!Ref X, !GetAtt A.B, !Sub "...") become {"Ref": X}, {"Fn::GetAtt": ...}.
func cfnValue(n *yaml.Node) any {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		return cfnValue(n.Content[0])
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = cfnValue(n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			l = append(l, cfnValue(c))
		}
		v = l
	case yaml.AliasNode:
		return cfnValue(n.Alias)
	default:
		switch n.Tag {
		case "!!int", "!!bool", "!!float", "!!null":
			var x any
			_ = n.Decode(&x)
			v = x
		default:
			v = n.Value
		}
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		name := strings.TrimPrefix(n.Tag, "!")
		if name != "Ref" && name != "Condition" {
			name = "Fn::" + name
		}
		return map[string]any{name: v}
	}
	return v
}

// cfnTemplate is template.yaml as Go values.
type cfnTemplate struct {
	root      map[string]any
	resources map[string]map[string]any
}

func loadTemplate(t *testing.T) *cfnTemplate {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	c := &cfnTemplate{root: cfnValue(&doc).(map[string]any), resources: map[string]map[string]any{}}
	for name, r := range c.root["Resources"].(map[string]any) {
		c.resources[name] = r.(map[string]any)
	}
	return c
}

func (c *cfnTemplate) ofType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for name, r := range c.resources {
		if r["Type"] == typ {
			out[name] = r
		}
	}
	return out
}

// globalFunction is Globals.Function.
func (c *cfnTemplate) globalFunction() map[string]any {
	return c.root["Globals"].(map[string]any)["Function"].(map[string]any)
}

// parameterDefault is a parameter's Default as a string.
func (c *cfnTemplate) parameterDefault(t *testing.T, name string) string {
	t.Helper()
	p, ok := c.root["Parameters"].(map[string]any)[name].(map[string]any)
	if !ok {
		t.Fatalf("template.yaml has no parameter %s", name)
	}
	return fmt.Sprint(p["Default"])
}

func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

// cfnSymbolic renders intrinsic functions as tokens: Ref X → "${X}",
// GetAtt A.B → "${A.B}", Sub keeps its string (its ${...} are the same
// tokens); If renders both branches as {"If": [cond, a, b]}.
func cfnSymbolic(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k, a := range x {
				switch k {
				case "Ref":
					return "${" + fmt.Sprint(a) + "}"
				case "Fn::GetAtt":
					if l, ok := a.([]any); ok {
						return fmt.Sprintf("${%v.%v}", l[0], l[1])
					}
					return "${" + fmt.Sprint(a) + "}"
				case "Fn::Sub":
					if s, ok := a.(string); ok {
						return s
					}
				}
			}
		}
		out := map[string]any{}
		for k, e := range x {
			out[k] = cfnSymbolic(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cfnSymbolic(e)
		}
		return out
	}
	return v
}

// cfnEval evaluates the intrinsic functions a name is built with (Join,
// Select, Split, Sub, Ref of a pseudo parameter) for the given pseudo
// parameters.
func cfnEval(t *testing.T, v any, pseudo map[string]string) string {
	t.Helper()
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		for k, a := range x {
			args, _ := a.([]any)
			switch k {
			case "Ref":
				if s, ok := pseudo[fmt.Sprint(a)]; ok {
					return s
				}
			case "Fn::Sub":
				s := fmt.Sprint(a)
				for p, val := range pseudo {
					s = strings.ReplaceAll(s, "${"+p+"}", val)
				}
				return s
			case "Fn::Join":
				var parts []string
				for _, e := range args[1].([]any) {
					parts = append(parts, cfnEval(t, e, pseudo))
				}
				return strings.Join(parts, fmt.Sprint(args[0]))
			case "Fn::Select":
				list := cfnEvalList(t, args[1], pseudo)
				i := int(args[0].(int))
				if i >= len(list) {
					t.Fatalf("Select %d of %v", i, list)
				}
				return list[i]
			}
		}
	}
	t.Fatalf("cannot evaluate %v", v)
	return ""
}

func cfnEvalList(t *testing.T, v any, pseudo map[string]string) []string {
	if m, ok := v.(map[string]any); ok {
		if a, ok := m["Fn::Split"].([]any); ok {
			return strings.Split(cfnEval(t, a[1], pseudo), fmt.Sprint(a[0]))
		}
	}
	t.Fatalf("cannot evaluate list %v", v)
	return nil
}

// Terraform side.

type tfResource struct {
	typ, name string
	body      *hclsyntax.Body
}

// tfModule is infra/*.tf: resources, locals and variables.
type tfModule struct {
	resources map[string]*tfResource // "type.name"
	locals    map[string]hcl.Expression
	variables map[string]*hclsyntax.Body
}

func loadTerraform(t *testing.T) *tfModule {
	t.Helper()
	files, _ := filepath.Glob("*.tf")
	if len(files) == 0 {
		t.Fatal("no .tf files in infra/")
	}
	p := hclparse.NewParser()
	m := &tfModule{resources: map[string]*tfResource{}, locals: map[string]hcl.Expression{}, variables: map[string]*hclsyntax.Body{}}
	for _, f := range files {
		file, diags := p.ParseHCLFile(f)
		if diags.HasErrors() {
			t.Fatalf("%s: %v", f, diags)
		}
		for _, b := range file.Body.(*hclsyntax.Body).Blocks {
			switch {
			case b.Type == "resource" && len(b.Labels) == 2:
				m.resources[b.Labels[0]+"."+b.Labels[1]] = &tfResource{typ: b.Labels[0], name: b.Labels[1], body: b.Body}
			case b.Type == "locals":
				for name, a := range b.Body.Attributes {
					m.locals[name] = a.Expr
				}
			case b.Type == "variable" && len(b.Labels) == 1:
				m.variables[b.Labels[0]] = b.Body
			}
		}
	}
	return m
}

func (m *tfModule) ofType(typ string) map[string]*tfResource {
	out := map[string]*tfResource{}
	for _, r := range m.resources {
		if r.typ == typ {
			out[r.name] = r
		}
	}
	return out
}

func (m *tfModule) resource(t *testing.T, addr string) *tfResource {
	t.Helper()
	r, ok := m.resources[addr]
	if !ok {
		t.Fatalf("infra/ has no resource %s", addr)
	}
	return r
}

// variableDefault is a variable's default, rendered.
func (m *tfModule) variableDefault(t *testing.T, name string) any {
	t.Helper()
	b, ok := m.variables[name]
	if !ok {
		t.Fatalf("infra/ has no variable %s", name)
	}
	a, ok := b.Attributes["default"]
	if !ok {
		return nil
	}
	return m.symbolic(t, a.Expr)
}

// attr renders a resource attribute (nil when absent).
func (m *tfModule) attr(t *testing.T, body *hclsyntax.Body, name string) any {
	t.Helper()
	a, ok := body.Attributes[name]
	if !ok {
		return nil
	}
	return m.symbolic(t, a.Expr)
}

func blocks(body *hclsyntax.Body, typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range body.Blocks {
		if b.Type == typ {
			out = append(out, b)
		}
	}
	return out
}

// symbolic renders an expression as Go values: literals as themselves,
// references as tokens "${aws_sqs_queue.eval.arn}" (locals are followed),
// templates as strings of literals and tokens, jsonencode as its argument,
// concat and merge as the list or map they build. Anything else fails the
// test, so the templates keep to what can be compared.
func (m *tfModule) symbolic(t *testing.T, e hcl.Expression) any {
	t.Helper()
	switch x := e.(type) {
	case *hclsyntax.LiteralValueExpr:
		v := x.Val
		switch {
		case v.IsNull():
			return nil
		case v.Type().FriendlyName() == "string":
			return v.AsString()
		case v.Type().FriendlyName() == "bool":
			return v.True()
		case v.Type().FriendlyName() == "number":
			if i, acc := v.AsBigFloat().Int64(); acc == big.Exact {
				return int(i)
			}
			f, _ := v.AsBigFloat().Float64()
			return f
		}
	case *hclsyntax.TemplateExpr:
		var sb strings.Builder
		for _, p := range x.Parts {
			sb.WriteString(fmt.Sprint(m.symbolic(t, p)))
		}
		return sb.String()
	case *hclsyntax.TemplateWrapExpr:
		return m.symbolic(t, x.Wrapped)
	case *hclsyntax.ScopeTraversalExpr:
		if x.Traversal.RootName() == "local" {
			name := x.Traversal[1].(hcl.TraverseAttr).Name
			le, ok := m.locals[name]
			if !ok {
				t.Fatalf("no local %s", name)
			}
			if len(x.Traversal) == 2 {
				return m.symbolic(t, le)
			}
		}
		return "${" + traversalString(x.Traversal) + "}"
	case *hclsyntax.RelativeTraversalExpr:
		return "${" + strings.Trim(fmt.Sprint(m.symbolic(t, x.Source)), "${}") + traversalString(x.Traversal) + "}"
	case *hclsyntax.IndexExpr:
		return "${" + strings.Trim(fmt.Sprint(m.symbolic(t, x.Collection)), "${}") + "[" + strings.Trim(fmt.Sprint(m.symbolic(t, x.Key)), "${}") + "]}"
	case *hclsyntax.SplatExpr:
		return "${" + fmt.Sprint(m.symbolic(t, x.Source)) + "[*]}"
	case *hclsyntax.ObjectConsExpr:
		out := map[string]any{}
		for _, it := range x.Items {
			k, diags := it.KeyExpr.Value(nil)
			if diags.HasErrors() {
				t.Fatalf("object key: %v", diags)
			}
			out[k.AsString()] = m.symbolic(t, it.ValueExpr)
		}
		return out
	case *hclsyntax.TupleConsExpr:
		out := []any{}
		for _, it := range x.Exprs {
			out = append(out, m.symbolic(t, it))
		}
		return out
	case *hclsyntax.FunctionCallExpr:
		args := make([]any, len(x.Args))
		for i, a := range x.Args {
			args[i] = m.symbolic(t, a)
		}
		switch x.Name {
		case "jsonencode":
			return args[0]
		case "concat":
			out := []any{}
			for _, a := range args {
				out = append(out, a.([]any)...)
			}
			return out
		case "merge":
			out := map[string]any{}
			for _, a := range args {
				for k, v := range a.(map[string]any) {
					out[k] = v
				}
			}
			return out
		}
		return fmt.Sprintf("%s(%v)", x.Name, args)
	case *hclsyntax.ConditionalExpr:
		return map[string]any{"If": []any{fmt.Sprint(m.symbolic(t, x.Condition)), m.symbolic(t, x.TrueResult), m.symbolic(t, x.FalseResult)}}
	case *hclsyntax.BinaryOpExpr:
		return fmt.Sprintf("(%v op %v)", m.symbolic(t, x.LHS), m.symbolic(t, x.RHS))
	}
	t.Fatalf("cannot render %T at %v", e, e.Range())
	return nil
}

func traversalString(tr hcl.Traversal) string {
	var sb strings.Builder
	for i, s := range tr {
		switch x := s.(type) {
		case hcl.TraverseRoot:
			sb.WriteString(x.Name)
		case hcl.TraverseAttr:
			if i > 0 {
				sb.WriteString(".")
			}
			sb.WriteString(x.Name)
		case hcl.TraverseIndex:
			if x.Key.Type().FriendlyName() == "string" {
				fmt.Fprintf(&sb, "[%q]", x.Key.AsString())
			} else {
				f, _ := x.Key.AsBigFloat().Int64()
				fmt.Fprintf(&sb, "[%d]", f)
			}
		case hcl.TraverseSplat:
			sb.WriteString("[*]")
		}
	}
	return sb.String()
}

// One vocabulary.

// symbols maps both templates' tokens for the same thing to one symbol.
var symbols = strings.NewReplacer(
	// Pseudo parameters and their data sources.
	"${AWS::Partition}", "<partition>", "${data.aws_partition.current.partition}", "<partition>",
	"${AWS::Region}", "<region>", "${data.aws_region.current.name}", "<region>",
	"${AWS::AccountId}", "<account>", "${data.aws_caller_identity.current.account_id}", "<account>",
	// Resources.
	"${StateTable.Arn}", "<table>", "${aws_dynamodb_table.state.arn}", "<table>",
	"${EvalQueue.Arn}", "<queue>", "${aws_sqs_queue.eval.arn}", "<queue>",
	"${SchedulerRole.Arn}", "<scheduler-role>", "${aws_iam_role.scheduler.arn}", "<scheduler-role>",
	"${ScheduleGroup}", "<schedule-group>", "${aws_scheduler_schedule_group.drover.name}", "<schedule-group>",
	"arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${HttpApi}", "<http-api>",
	"${aws_apigatewayv2_api.http.execution_arn}", "<http-api>",
	"${ControlPlanePolicy}", "<control-plane-policy>", "${aws_iam_policy.control_plane.arn}", "<control-plane-policy>",
	"${NodeAgentPolicy}", "<node-agent-policy>", "${aws_iam_policy.node_agent.arn}", "<node-agent-policy>",
	// A log group's GetAtt Arn ends in ":*"; Terraform's arn does not.
	"${ApiLogGroup.Arn}", "<log-group:api>:*", "${aws_cloudwatch_log_group.api.arn}", "<log-group:api>",
	"${EvaluateLogGroup.Arn}", "<log-group:evaluate>:*", "${aws_cloudwatch_log_group.evaluate.arn}", "<log-group:evaluate>",
	"${SweeperLogGroup.Arn}", "<log-group:sweeper>:*", "${aws_cloudwatch_log_group.sweeper.arn}", "<log-group:sweeper>",
	"${AuthorizerLogGroup.Arn}", "<log-group:authorizer>:*", "${aws_cloudwatch_log_group.authorizer.arn}", "<log-group:authorizer>",
)

// canonical renders v with symbols applied and string lists sorted, as
// JSON, so equal policies compare equal.
func canonical(v any) string {
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return symbols.Replace(x)
		case float64:
			return fmt.Sprint(x)
		case int:
			return fmt.Sprint(x)
		case bool:
			return fmt.Sprint(x)
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				out[k] = walk(e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			strs := true
			for i, e := range x {
				out[i] = walk(e)
				_, ok := out[i].(string)
				strs = strs && ok
			}
			if strs {
				sort.Slice(out, func(i, j int) bool { return out[i].(string) < out[j].(string) })
			}
			return out
		}
		return v
	}
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(walk(v))
	return strings.TrimSpace(sb.String())
}

// norm maps SAM logical names and Terraform names to one vocabulary:
// ApiFunction, ApiRole, aws_lambda_function.api → "api".
func norm(name string) string {
	n := strings.ToLower(strings.ReplaceAll(name, "_", ""))
	for _, s := range []string{"function", "role", "policy", "loggroup", "instanceprofile"} {
		n = strings.TrimSuffix(n, s)
	}
	return strings.ReplaceAll(n, "deadletterqueue", "dlq")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func mustUnmarshal(s string, v any) {
	if err := json.Unmarshal([]byte(s), v); err != nil {
		panic(fmt.Sprintf("%s: %v", s, err))
	}
}

// TestNodeRoleArnsPattern: the NodeRoleArns parameter refuses at deploy
// (CloudFormation applies AllowedPattern to each value of the list) what the
// api function would refuse at start, so a typo cannot deploy an API whose
// every request fails; it accepts the empty default and what
// awshome.ParseNodeRoles accepts.
func TestNodeRoleArnsPattern(t *testing.T) {
	p, ok := loadTemplate(t).root["Parameters"].(map[string]any)["NodeRoleArns"].(map[string]any)
	if !ok {
		t.Fatal("template.yaml has no parameter NodeRoleArns")
	}
	pattern, _ := p["AllowedPattern"].(string)
	if pattern == "" {
		t.Fatal("NodeRoleArns has no AllowedPattern")
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		t.Fatalf("AllowedPattern %q: %v", pattern, err)
	}
	for _, v := range []string{"", "arn:aws:iam::123456789012:role/drover-node", "arn:aws:iam::123456789012:role/path/to/r",
		"arn:aws-us-gov:iam::123456789012:role/n", "arn:aws:iam::123456789012:user/ci",
		"drover-node", "arn:aws:iam::1234:role/x", "arn:aws:iam::123456789012:role/", "arn:aws:sts::123456789012:assumed-role/r/s",
		"arn:aws:iam::123456789012:role/has space"} {
		_, perr := awshome.ParseNodeRoles(v)
		if got, want := re.MatchString(v), perr == nil; got != want {
			t.Errorf("%q: AllowedPattern matches %v, but ParseNodeRoles error is %v", v, got, perr)
		}
	}
}
