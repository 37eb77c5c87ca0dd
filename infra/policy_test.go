package infra_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awsscheduler "github.com/aws/aws-sdk-go-v2/service/scheduler"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
)

// roleDoc is one IAM role as both templates can say it.
type roleDoc struct {
	Trust   string   // the trust policy, canonical
	Inline  []string // inline policy statements, canonical, sorted
	Managed []string // attached managed policies, as symbols
}

// policyStatements returns a policy document's statements, canonical, with
// Action and Resource always lists.
func policyStatements(doc any) []string {
	m, _ := doc.(map[string]any)
	list, _ := m["Statement"].([]any)
	var out []string
	for _, s := range list {
		st := map[string]any{}
		for k, v := range s.(map[string]any) {
			if _, isList := v.([]any); !isList && (k == "Action" || k == "Resource") {
				v = []any{v}
			}
			st[k] = v
		}
		out = append(out, canonical(st))
	}
	sort.Strings(out)
	return out
}

// cfnRoles collects template.yaml's roles: trust, inline statements, and
// managed policies from ManagedPolicyArns and from a managed policy's Roles.
func cfnRoles(c *cfnTemplate) map[string]*roleDoc {
	out := map[string]*roleDoc{}
	for name, r := range c.ofType("AWS::IAM::Role") {
		p := cfnSymbolic(props(r)).(map[string]any)
		d := &roleDoc{Trust: canonical(p["AssumeRolePolicyDocument"])}
		if pols, ok := p["Policies"].([]any); ok {
			for _, pol := range pols {
				d.Inline = append(d.Inline, policyStatements(pol.(map[string]any)["PolicyDocument"])...)
			}
		}
		if arns, ok := p["ManagedPolicyArns"].([]any); ok {
			for _, a := range arns {
				d.Managed = append(d.Managed, symbols.Replace(fmt.Sprint(a)))
			}
		}
		out[name] = d
	}
	token := regexp.MustCompile(`\$\{([A-Za-z0-9]+)\}`)
	for name, r := range c.ofType("AWS::IAM::ManagedPolicy") {
		for _, m := range token.FindAllStringSubmatch(fmt.Sprint(cfnSymbolic(props(r)["Roles"])), -1) {
			if d, ok := out[m[1]]; ok {
				d.Managed = append(d.Managed, symbols.Replace("${"+name+"}"))
			}
		}
	}
	byNorm := map[string]*roleDoc{}
	for name, d := range out {
		sort.Strings(d.Inline)
		sort.Strings(d.Managed)
		byNorm[norm(name)] = d
	}
	return byNorm
}

// tfRoles collects infra/'s roles the same way: aws_iam_role,
// aws_iam_role_policy and aws_iam_role_policy_attachment.
func tfRoles(t *testing.T, m *tfModule) map[string]*roleDoc {
	out := map[string]*roleDoc{}
	for name, r := range m.ofType("aws_iam_role") {
		out[name] = &roleDoc{Trust: canonical(m.attr(t, r.body, "assume_role_policy"))}
	}
	roleRef := regexp.MustCompile(`\$\{aws_iam_role\.([a-z_]+)[.\[]`)
	roleOf := func(v any) []string {
		var names []string
		for _, s := range roleRef.FindAllStringSubmatch(fmt.Sprint(v), -1) {
			names = append(names, s[1])
		}
		return names
	}
	for addr, r := range m.ofType("aws_iam_role_policy") {
		names := roleOf(m.attr(t, r.body, "role"))
		if len(names) != 1 || out[names[0]] == nil {
			t.Fatalf("aws_iam_role_policy.%s: role %v", addr, m.attr(t, r.body, "role"))
		}
		out[names[0]].Inline = append(out[names[0]].Inline, policyStatements(m.attr(t, r.body, "policy"))...)
	}
	for addr, r := range m.ofType("aws_iam_role_policy_attachment") {
		roles := m.attr(t, r.body, "role")
		if fe := m.attr(t, r.body, "for_each"); fe != nil {
			roles = fe
		}
		names := roleOf(roles)
		if len(names) == 0 {
			t.Fatalf("aws_iam_role_policy_attachment.%s: roles %v", addr, roles)
		}
		for _, n := range names {
			out[n].Managed = append(out[n].Managed, symbols.Replace(fmt.Sprint(m.attr(t, r.body, "policy_arn"))))
		}
	}
	byNorm := map[string]*roleDoc{}
	for name, d := range out {
		sort.Strings(d.Inline)
		sort.Strings(d.Managed)
		byNorm[norm(name)] = d
	}
	return byNorm
}

// managedPolicies are both templates' managed policies' statements.
func managedPolicies(t *testing.T, c *cfnTemplate, m *tfModule) (cfn, tf map[string][]string) {
	cfn, tf = map[string][]string{}, map[string][]string{}
	for name, r := range c.ofType("AWS::IAM::ManagedPolicy") {
		cfn[symbols.Replace("${"+name+"}")] = policyStatements(cfnSymbolic(props(r)["PolicyDocument"]))
	}
	for name, r := range m.ofType("aws_iam_policy") {
		tf[symbols.Replace("${aws_iam_policy."+name+".arn}")] = policyStatements(m.attr(t, r.body, "policy"))
	}
	return cfn, tf
}

// grant is one allowed action on one resource, with the statement's
// condition.
type grant struct {
	Action, Resource, Condition string
}

// grants flattens a role's inline and managed statements.
func grants(d *roleDoc, managed map[string][]string) []grant {
	var out []grant
	stmts := append([]string{}, d.Inline...)
	for _, p := range d.Managed {
		stmts = append(stmts, managed[p]...)
	}
	for _, s := range stmts {
		var st struct {
			Action, Resource []string
			Condition        any
			Effect           string
		}
		mustUnmarshal(s, &st)
		if st.Effect != "Allow" {
			continue
		}
		for _, a := range st.Action {
			for _, r := range st.Resource {
				out = append(out, grant{Action: a, Resource: r, Condition: canonical(st.Condition)})
			}
		}
	}
	return out
}

func actions(gs []grant) []string {
	set := map[string]bool{}
	for _, g := range gs {
		set[g.Action] = true
	}
	return sortedKeys(set)
}

// TestRolePolicies: both templates give every role the same trust policy,
// inline statements and managed policies, and those grant only what the
// code needs: no wildcard action or resource; the api and sweeper roles
// never receive, delete or change the visibility of queue messages; the
// authorizer reads only TOKEN# items of the table (no index, no Query or
// Scan); iam:PassRole only of the Scheduler role and only to Scheduler;
// Scheduler's trust only for this account; each function writes only its
// own log group and creates none.
func TestRolePolicies(t *testing.T) {
	c, m := loadTemplate(t), loadTerraform(t)
	cr, tr := cfnRoles(c), tfRoles(t, m)
	if !reflect.DeepEqual(sortedKeys(cr), sortedKeys(tr)) {
		t.Fatalf("roles: template %v, terraform %v", sortedKeys(cr), sortedKeys(tr))
	}
	for name := range cr {
		if !reflect.DeepEqual(cr[name], tr[name]) {
			t.Errorf("role %s differs:\n template  %+v\n terraform %+v", name, *cr[name], *tr[name])
		}
	}
	cm, tm := managedPolicies(t, c, m)
	if !reflect.DeepEqual(cm, tm) {
		t.Errorf("managed policies differ:\n template  %v\n terraform %v", cm, tm)
	}

	for name, d := range cr {
		gs := grants(d, cm)
		for _, g := range gs {
			if g.Resource == "*" || strings.HasSuffix(g.Action, ":*") || g.Action == "*" {
				t.Errorf("role %s grants %s on %s", name, g.Action, g.Resource)
			}
			if g.Action == "iam:PassRole" && (g.Resource != "<scheduler-role>" || g.Condition != `{"StringEquals":{"iam:PassedToService":"scheduler.amazonaws.com"}}`) {
				t.Errorf("role %s: iam:PassRole on %s with %s; want the Scheduler role, passed to scheduler.amazonaws.com only", name, g.Resource, g.Condition)
			}
			if strings.HasPrefix(g.Action, "logs:") {
				if g.Action == "logs:CreateLogGroup" || g.Resource != "<log-group:"+name+">:*" {
					t.Errorf("role %s: %s on %s; want writes to its own log group only", name, g.Action, g.Resource)
				}
			}
		}
		if name == "api" || name == "sweeper" {
			for _, a := range actions(gs) {
				if a == "sqs:ReceiveMessage" || a == "sqs:DeleteMessage" || a == "sqs:ChangeMessageVisibility" {
					t.Errorf("role %s may %s: only the evaluate function consumes the queue", name, a)
				}
			}
		}
	}
	var tokenReads []grant
	for _, g := range grants(cr["authorizer"], cm) {
		if strings.HasPrefix(g.Action, "dynamodb:") {
			tokenReads = append(tokenReads, g)
		}
	}
	if want := []grant{{"dynamodb:GetItem", "<table>", `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["TOKEN#*"]}}`}}; !reflect.DeepEqual(tokenReads, want) {
		t.Errorf("authorizer's DynamoDB grants %+v, want %+v", tokenReads, want)
	}
	if tr := cr["scheduler"].Trust; !strings.Contains(tr, `"Condition":{"StringEquals":{"aws:SourceAccount":"<account>"}}`) || !strings.Contains(tr, "scheduler.amazonaws.com") {
		t.Errorf("Scheduler role trust %s: want scheduler.amazonaws.com with aws:SourceAccount", tr)
	}
}

// sdkCall is one AWS API call site in drover's code.
type sdkCall struct {
	Action string // the IAM action it needs
	File   string // relative to the repository
	Line   int
}

// sdkActions finds the AWS SDK calls (DynamoDB, SQS, Scheduler) in the
// repository's packages the Lambda functions link, and the IAM action each
// needs: an operation method called on a client of a package the file
// imports, a New<Op>Paginator, and for TransactWriteItems the kind of each
// transaction item (types.Put → PutItem, ...).
func sdkActions(t *testing.T) []sdkCall {
	t.Helper()
	services := map[string]struct {
		prefix string
		ops    map[string]bool
	}{
		"github.com/aws/aws-sdk-go-v2/service/dynamodb":  {"dynamodb", methods(&awsdynamodb.Client{})},
		"github.com/aws/aws-sdk-go-v2/service/sqs":       {"sqs", methods(&awssqs.Client{})},
		"github.com/aws/aws-sdk-go-v2/service/scheduler": {"scheduler", methods(&awsscheduler.Client{})},
	}
	action := map[string]string{
		"dynamodb:TransactGetItems": "dynamodb:GetItem", "sqs:SendMessageBatch": "sqs:SendMessage",
		"sqs:DeleteMessageBatch": "sqs:DeleteMessage", "sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
	}
	// CreateSchedule hands Scheduler the role it sends with: iam:PassRole.
	implied := map[string]string{"scheduler:CreateSchedule": "iam:PassRole"}
	itemKinds := map[string]string{"Put": "dynamodb:PutItem", "Update": "dynamodb:UpdateItem", "Delete": "dynamodb:DeleteItem", "ConditionCheck": "dynamodb:ConditionCheckItem"}

	root, _ := filepath.Abs("..")
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}|{{.Dir}}|{{join .GoFiles \",\"}}{{end}}",
		"../functions/api", "../functions/evaluate", "../functions/sweeper", "../functions/authorizer").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var calls []sdkCall
	fset := token.NewFileSet()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		if len(parts) != 3 || !strings.HasPrefix(parts[0], "github.com/drover-sched/drover/") || parts[2] == "" {
			continue
		}
		for _, name := range strings.Split(parts[2], ",") {
			path := filepath.Join(parts[1], name)
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, path)
			local := map[string]string{} // local package name → import path
			var typesName string
			for _, im := range f.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				n := filepath.Base(p)
				if im.Name != nil {
					n = im.Name.Name
				}
				if _, ok := services[p]; ok {
					local[n] = p
				}
				if p == "github.com/aws/aws-sdk-go-v2/service/dynamodb/types" {
					typesName = n
				}
			}
			if len(local) == 0 && typesName == "" {
				continue
			}
			add := func(a string, pos token.Pos) {
				if alt, ok := action[a]; ok {
					a = alt
				}
				calls = append(calls, sdkCall{Action: a, File: rel, Line: fset.Position(pos).Line})
				if i, ok := implied[a]; ok {
					calls = append(calls, sdkCall{Action: i, File: rel, Line: fset.Position(pos).Line})
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.CallExpr:
					sel, ok := x.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if id, ok := sel.X.(*ast.Ident); ok {
						if p, ok := local[id.Name]; ok {
							if op, ok := strings.CutPrefix(sel.Sel.Name, "New"); ok && strings.HasSuffix(op, "Paginator") {
								add(services[p].prefix+":"+strings.TrimSuffix(op, "Paginator"), x.Pos())
							}
							return true
						}
					}
					for _, p := range local {
						if s := services[p]; s.ops[sel.Sel.Name] && sel.Sel.Name != "TransactWriteItems" {
							add(s.prefix+":"+sel.Sel.Name, x.Pos())
						}
					}
				case *ast.CompositeLit:
					if sel, ok := x.Type.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == typesName && itemKinds[sel.Sel.Name] != "" {
							add(itemKinds[sel.Sel.Name], x.Pos())
						}
					}
				}
				return true
			})
		}
	}
	return calls
}

// methods is the set of a client's operation names.
func methods(client any) map[string]bool {
	out := map[string]bool{}
	typ := reflect.TypeOf(client)
	for i := 0; i < typ.NumMethod(); i++ {
		if n := typ.Method(i).Name; n != "Options" {
			out[n] = true
		}
	}
	return out
}

// runBy says which functions run the calls in a file. The api, evaluate
// and sweeper functions share the store, the eval queue's producer and the
// scheduler through the control-plane services, so by default a call runs
// in all three; the exceptions are listed with their reason.
var runBy = map[string][]string{
	// The SQS batch handler: only the evaluate function is an SQS consumer.
	"events/sqs/handler.go": {"evaluate"},
	// CreateTable: the templates create the table; tests and tools call it.
	"storage/dynamodb/schema.go": {},
}

// authorizerCalls is what the authorizer function runs: acl.Authorizer →
// Store.ACLTokenBySecretHash → one GetItem of TOKEN#<hash>.
var authorizerCalls = []string{"dynamodb:GetItem"}

// pollerActions are what Lambda's SQS event source mapping does with the
// evaluate function's role.
var pollerActions = []string{"sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"}

// TestPoliciesMatchCalls: every AWS call the functions' code makes is
// allowed by the function's role, in template.yaml (TestRolePolicies
// shows infra/ grants the same), and every action a role grants is one its
// function's code (or its event source mapping, or its logging) needs.
func TestPoliciesMatchCalls(t *testing.T) {
	calls := sdkActions(t)
	if len(calls) < 8 {
		t.Fatalf("found only %d AWS calls in the functions' code: %v", len(calls), calls)
	}
	c, m := loadTemplate(t), loadTerraform(t)
	roles := cfnRoles(c)
	managed, _ := managedPolicies(t, c, m)
	need := map[string]map[string][]string{} // function → action → call sites
	for _, fn := range []string{"api", "evaluate", "sweeper", "authorizer"} {
		need[fn] = map[string][]string{"logs:CreateLogStream": {"Lambda's logging"}, "logs:PutLogEvents": {"Lambda's logging"}}
	}
	for _, a := range authorizerCalls {
		need["authorizer"][a] = append(need["authorizer"][a], "acl.Authorizer")
	}
	for _, a := range pollerActions {
		need["evaluate"][a] = append(need["evaluate"][a], "the SQS event source mapping")
	}
	for _, call := range calls {
		fns, listed := runBy[filepath.ToSlash(call.File)]
		if !listed {
			fns = []string{"api", "evaluate", "sweeper"}
		}
		for _, fn := range fns {
			need[fn][call.Action] = append(need[fn][call.Action], fmt.Sprintf("%s:%d", call.File, call.Line))
		}
	}
	for fn, acts := range need {
		if roles[fn] == nil {
			t.Errorf("template.yaml has no role for the %s function (SAM would make one with its broad defaults)", fn)
			continue
		}
		granted := actions(grants(roles[fn], managed))
		for a, sites := range acts {
			if !contains(granted, a) {
				t.Errorf("function %s calls %s (%s) but its role does not allow it", fn, a, strings.Join(sites, ", "))
			}
		}
		for _, a := range granted {
			if _, ok := acts[a]; !ok {
				t.Errorf("function %s's role allows %s, which its code never calls", fn, a)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
