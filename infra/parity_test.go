// Package infra_test checks that template.yaml (SAM) and this Terraform
// module declare the same resources, that both match the table the
// DynamoDB store creates, and that the node-agent policy confines an agent
// to its own node's items.
package infra_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"gopkg.in/yaml.v3"

	ddb "github.com/drover-sched/drover/storage/dynamodb"
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
		var l []any
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

func loadTemplate(t *testing.T) map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	root := cfnValue(&doc).(map[string]any)
	out := map[string]map[string]any{}
	for name, r := range root["Resources"].(map[string]any) {
		out[name] = r.(map[string]any)
	}
	return out
}

func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

func ofType(res map[string]map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for name, r := range res {
		if r["Type"] == typ {
			out[name] = r
		}
	}
	return out
}

// Terraform side.

type tfResource struct {
	typ, name string
	body      *hclsyntax.Body
}

func loadTerraform(t *testing.T) map[string]*tfResource {
	t.Helper()
	files, _ := filepath.Glob("*.tf")
	if len(files) == 0 {
		t.Fatal("no .tf files in infra/")
	}
	p := hclparse.NewParser()
	out := map[string]*tfResource{}
	for _, f := range files {
		file, diags := p.ParseHCLFile(f)
		if diags.HasErrors() {
			t.Fatalf("%s: %v", f, diags)
		}
		for _, b := range file.Body.(*hclsyntax.Body).Blocks {
			if b.Type == "resource" && len(b.Labels) == 2 {
				out[b.Labels[0]+"."+b.Labels[1]] = &tfResource{typ: b.Labels[0], name: b.Labels[1], body: b.Body}
			}
		}
	}
	return out
}

// evalCtx evaluates literals and jsonencode; references are unknown.
var evalCtx = &hcl.EvalContext{
	Functions: map[string]function.Function{"jsonencode": stdlib.JSONEncodeFunc, "sha256": stdlib.JSONEncodeFunc},
	Variables: map[string]cty.Value{
		"aws_dynamodb_table": cty.DynamicVal, "aws_apigatewayv2_api": cty.DynamicVal, "aws_sqs_queue": cty.DynamicVal,
		"var": cty.DynamicVal, "data": cty.DynamicVal, "local": cty.DynamicVal, "aws_iam_role": cty.DynamicVal,
	},
}

func attr(t *testing.T, body *hclsyntax.Body, name string) cty.Value {
	t.Helper()
	a, ok := body.Attributes[name]
	if !ok {
		return cty.NilVal
	}
	v, diags := a.Expr.Value(evalCtx)
	if diags.HasErrors() {
		t.Fatalf("attribute %s: %v", name, diags)
	}
	return v
}

func str(v cty.Value) string {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() {
		return ""
	}
	switch v.Type() {
	case cty.String:
		return v.AsString()
	case cty.Bool:
		return fmt.Sprint(v.True())
	case cty.Number:
		return v.AsBigFloat().Text('f', -1)
	}
	return ""
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

func tfOfType(res map[string]*tfResource, typ string) map[string]*tfResource {
	out := map[string]*tfResource{}
	for _, r := range res {
		if r.typ == typ {
			out[r.name] = r
		}
	}
	return out
}

// norm maps SAM logical names and Terraform names to one vocabulary.
func norm(name string) string {
	n := strings.ToLower(name)
	for _, s := range []string{"function", "role"} {
		n = strings.TrimSuffix(n, s)
	}
	n = strings.ReplaceAll(n, "_", "")
	return strings.ReplaceAll(n, "deadletterqueue", "dlq")
}

func sorted(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type tableShape struct {
	Hash, Range string
	GSIs        []string // name:hash:range:projection
}

// TestTemplateParity: template.yaml and infra/ declare the same table
// (keys and indexes, the same as the store's own TableDefinition), queues,
// functions, roles and schedule group.
func TestTemplateParity(t *testing.T) {
	cfn, tf := loadTemplate(t), loadTerraform(t)

	// Tables.
	want := func() tableShape {
		def := ddb.TableDefinition("x")
		s := tableShape{Hash: *def.KeySchema[0].AttributeName, Range: *def.KeySchema[1].AttributeName}
		for _, g := range def.GlobalSecondaryIndexes {
			s.GSIs = append(s.GSIs, fmt.Sprintf("%s:%s:%s:%s", *g.IndexName, *g.KeySchema[0].AttributeName, *g.KeySchema[1].AttributeName, g.Projection.ProjectionType))
		}
		sort.Strings(s.GSIs)
		return s
	}()
	tables := ofType(cfn, "AWS::DynamoDB::Table")
	if len(tables) != 1 {
		t.Fatalf("template tables: %d", len(tables))
	}
	for _, r := range tables {
		p := props(r)
		var s tableShape
		for _, k := range p["KeySchema"].([]any) {
			km := k.(map[string]any)
			if km["KeyType"] == "HASH" {
				s.Hash = km["AttributeName"].(string)
			} else {
				s.Range = km["AttributeName"].(string)
			}
		}
		for _, g := range p["GlobalSecondaryIndexes"].([]any) {
			gm := g.(map[string]any)
			ks := gm["KeySchema"].([]any)
			s.GSIs = append(s.GSIs, fmt.Sprintf("%s:%s:%s:%s", gm["IndexName"], ks[0].(map[string]any)["AttributeName"],
				ks[1].(map[string]any)["AttributeName"], gm["Projection"].(map[string]any)["ProjectionType"]))
		}
		sort.Strings(s.GSIs)
		if !reflect.DeepEqual(s, want) {
			t.Errorf("template table %+v, store creates %+v", s, want)
		}
		if p["BillingMode"] != "PAY_PER_REQUEST" {
			t.Errorf("template table billing %v", p["BillingMode"])
		}
	}
	tfTables := tfOfType(tf, "aws_dynamodb_table")
	if len(tfTables) != 1 {
		t.Fatalf("terraform tables: %d", len(tfTables))
	}
	for _, r := range tfTables {
		s := tableShape{Hash: str(attr(t, r.body, "hash_key")), Range: str(attr(t, r.body, "range_key"))}
		for _, g := range blocks(r.body, "global_secondary_index") {
			s.GSIs = append(s.GSIs, fmt.Sprintf("%s:%s:%s:%s", str(attr(t, g.Body, "name")), str(attr(t, g.Body, "hash_key")),
				str(attr(t, g.Body, "range_key")), str(attr(t, g.Body, "projection_type"))))
		}
		sort.Strings(s.GSIs)
		if !reflect.DeepEqual(s, want) {
			t.Errorf("terraform table %+v, store creates %+v", s, want)
		}
		if str(attr(t, r.body, "billing_mode")) != "PAY_PER_REQUEST" {
			t.Error("terraform table billing mode")
		}
	}

	// Queues: name, FIFO, content-based dedup, visibility, redrive.
	queueShape := func(fifo, cbd, vis, maxRecv string) string {
		return fmt.Sprintf("fifo=%s cbd=%s vis=%s maxReceive=%s", fifo, cbd, vis, maxRecv)
	}
	cfnQueues := map[string]string{}
	for name, r := range ofType(cfn, "AWS::SQS::Queue") {
		p := props(r)
		maxRecv := ""
		if rp, ok := p["RedrivePolicy"].(map[string]any); ok {
			maxRecv = fmt.Sprint(rp["maxReceiveCount"])
		}
		cbd := ""
		if v, ok := p["ContentBasedDeduplication"]; ok {
			cbd = fmt.Sprint(v)
		}
		vis := ""
		if v, ok := p["VisibilityTimeout"]; ok {
			vis = fmt.Sprint(v)
		}
		cfnQueues[norm(name)] = queueShape(fmt.Sprint(p["FifoQueue"]), cbd, vis, maxRecv)
	}
	tfQueues := map[string]string{}
	for name, r := range tfOfType(tf, "aws_sqs_queue") {
		maxRecv := ""
		if a, ok := r.body.Attributes["redrive_policy"]; ok {
			call := a.Expr.(*hclsyntax.FunctionCallExpr)
			obj := call.Args[0].(*hclsyntax.ObjectConsExpr)
			for _, it := range obj.Items {
				k, _ := it.KeyExpr.Value(nil)
				if k.AsString() == "maxReceiveCount" {
					v, _ := it.ValueExpr.Value(nil)
					maxRecv = str(v)
				}
			}
		}
		tfQueues[norm(name)+"queue"] = queueShape(str(attr(t, r.body, "fifo_queue")), str(attr(t, r.body, "content_based_deduplication")),
			str(attr(t, r.body, "visibility_timeout_seconds")), maxRecv)
	}
	// Terraform calls them eval and eval_dlq; SAM EvalQueue and EvalDeadLetterQueue.
	fixed := map[string]string{}
	for k, v := range tfQueues {
		fixed[strings.Replace(k, "evaldlqqueue", "evaldlq", 1)] = v
	}
	if !reflect.DeepEqual(cfnQueues, fixed) {
		t.Errorf("queues differ:\n template  %v\n terraform %v", cfnQueues, fixed)
	}
	for name, shape := range cfnQueues {
		if name == "evalqueue" && shape != queueShape("true", "true", "360", "6") {
			t.Errorf("eval queue: %s (FIFO, content-based dedup for Scheduler, visibility above the function timeout, redrive)", shape)
		}
	}

	// Functions: same set, same runtime, architecture, handler, timeout.
	fnShape := func(runtime, arch, handler, timeout string) string {
		return fmt.Sprintf("%s/%s/%s/timeout=%s", runtime, arch, handler, timeout)
	}
	globals := func() map[string]any {
		data, _ := os.ReadFile(filepath.Join("..", "template.yaml"))
		var doc yaml.Node
		_ = yaml.Unmarshal(data, &doc)
		return cfnValue(&doc).(map[string]any)["Globals"].(map[string]any)["Function"].(map[string]any)
	}()
	cfnFns := map[string]string{}
	for name, r := range ofType(cfn, "AWS::Serverless::Function") {
		p := props(r)
		get := func(k string) string {
			if v, ok := p[k]; ok {
				return fmt.Sprint(v)
			}
			return fmt.Sprint(globals[k])
		}
		arch := fmt.Sprint(globals["Architectures"].([]any)[0])
		cfnFns[norm(name)] = fnShape(get("Runtime"), arch, get("Handler"), get("Timeout"))
		if cu := fmt.Sprint(p["CodeUri"]); cu != "build/"+norm(name)+"/" {
			t.Errorf("function %s: CodeUri %s, want the Makefile's build/%s/", name, cu, norm(name))
		}
	}
	tfFns := map[string]string{}
	for name, r := range tfOfType(tf, "aws_lambda_function") {
		archs := attr(t, r.body, "architectures")
		tfFns[norm(name)] = fnShape(str(attr(t, r.body, "runtime")), str(archs.Index(cty.NumberIntVal(0))),
			str(attr(t, r.body, "handler")), str(attr(t, r.body, "timeout")))
	}
	if !reflect.DeepEqual(cfnFns, tfFns) {
		t.Errorf("functions differ:\n template  %v\n terraform %v", cfnFns, tfFns)
	}
	for name, shape := range cfnFns {
		if !strings.HasPrefix(shape, "provided.al2023/arm64/bootstrap") {
			t.Errorf("function %s: %s", name, shape)
		}
	}

	// Roles: SAM's explicit roles plus one per function ↔ Terraform's.
	cfnRoles := map[string]bool{}
	for name := range ofType(cfn, "AWS::IAM::Role") {
		cfnRoles[norm(name)] = true
	}
	for name := range cfnFns {
		cfnRoles[name] = true
	}
	tfRoles := map[string]bool{}
	for name := range tfOfType(tf, "aws_iam_role") {
		tfRoles[norm(name)] = true
	}
	if !reflect.DeepEqual(sorted(cfnRoles), sorted(tfRoles)) {
		t.Errorf("roles differ: template %v, terraform %v", sorted(cfnRoles), sorted(tfRoles))
	}

	// Schedule group, HTTP API, node-agent policy.
	for cfnType, tfType := range map[string]string{
		"AWS::Scheduler::ScheduleGroup": "aws_scheduler_schedule_group",
		"AWS::Serverless::HttpApi":      "aws_apigatewayv2_api",
		"AWS::IAM::ManagedPolicy":       "aws_iam_policy",
	} {
		if len(ofType(cfn, cfnType)) != 1 || len(tfOfType(tf, tfType)) != 1 {
			t.Errorf("%s / %s: %d and %d", cfnType, tfType, len(ofType(cfn, cfnType)), len(tfOfType(tf, tfType)))
		}
	}
}

// statement is the part of a policy statement the confinement relies on.
type statement struct {
	Sid         string
	Actions     []string
	LeadingKeys []string
	Attributes  []string
}

func toStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		sort.Strings(out)
		return out
	}
	return nil
}

func statements(t *testing.T, doc map[string]any) map[string]statement {
	t.Helper()
	out := map[string]statement{}
	for _, s := range doc["Statement"].([]any) {
		sm := s.(map[string]any)
		st := statement{Sid: fmt.Sprint(sm["Sid"]), Actions: toStrings(sm["Action"])}
		if c, ok := sm["Condition"].(map[string]any); ok {
			if fa, ok := c["ForAllValues:StringEquals"].(map[string]any); ok {
				st.LeadingKeys = toStrings(fa["dynamodb:LeadingKeys"])
				st.Attributes = toStrings(fa["dynamodb:Attributes"])
			}
		}
		out[st.Sid] = st
	}
	return out
}

// TestNodeAgentPolicy: the agent policy of both templates confines an
// agent to the partition NODE#<its aws:userid> (reads and the heartbeat),
// the heartbeat to the heartbeat attributes, and grants no write besides
// it (registration and reports go through the API).
func TestNodeAgentPolicy(t *testing.T) {
	var cfnDoc map[string]any
	for _, r := range ofType(loadTemplate(t), "AWS::IAM::ManagedPolicy") {
		cfnDoc = props(r)["PolicyDocument"].(map[string]any)
	}
	var tfDoc map[string]any
	for _, r := range tfOfType(loadTerraform(t), "aws_iam_policy") {
		v := attr(t, r.body, "policy")
		if !v.IsKnown() {
			// jsonencode over an object with unknown references: decode the
			// object expression itself.
			call := r.body.Attributes["policy"].Expr.(*hclsyntax.FunctionCallExpr)
			obj, diags := call.Args[0].Value(evalCtx)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			tfDoc = ctyToGo(obj).(map[string]any)
		} else {
			raw, _ := ctyjson.Marshal(v, v.Type())
			_ = yaml.Unmarshal(raw, &tfDoc)
		}
	}
	for name, doc := range map[string]map[string]any{"template.yaml": cfnDoc, "infra": tfDoc} {
		st := statements(t, doc)
		leading := []string{"NODE#${aws:userid}"}
		for _, sid := range []string{"ReadOwnNode", "HeartbeatOwnNode"} {
			if !reflect.DeepEqual(st[sid].LeadingKeys, leading) {
				t.Errorf("%s %s: LeadingKeys %v, want %v", name, sid, st[sid].LeadingKeys, leading)
			}
		}
		if a := st["HeartbeatOwnNode"].Attributes; !reflect.DeepEqual(a, []string{"PK", "SK", "hbAt", "hbTTL"}) {
			t.Errorf("%s: heartbeat attributes %v", name, a)
		}
		if a := st["HeartbeatOwnNode"].Actions; !reflect.DeepEqual(a, []string{"dynamodb:UpdateItem"}) {
			t.Errorf("%s: heartbeat actions %v", name, a)
		}
		if a := st["ReadOwnNode"].Actions; !reflect.DeepEqual(a, []string{"dynamodb:GetItem", "dynamodb:Query"}) {
			t.Errorf("%s: read actions %v", name, a)
		}
		for sid, s := range st {
			for _, a := range s.Actions {
				if strings.HasPrefix(a, "dynamodb:") && a != "dynamodb:GetItem" && a != "dynamodb:Query" && a != "dynamodb:UpdateItem" {
					t.Errorf("%s %s grants %s", name, sid, a)
				}
			}
		}
		if len(st) != 3 {
			t.Errorf("%s: %d statements, want 3 (read, heartbeat, node-agent routes)", name, len(st))
		}
	}
}

func ctyToGo(v cty.Value) any {
	if !v.IsKnown() || v.IsNull() {
		return nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString()
	case t == cty.Number:
		f, _ := v.AsBigFloat().Float64()
		return f
	case t == cty.Bool:
		return v.True()
	case t.IsObjectType() || t.IsMapType():
		m := map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			m[k.AsString()] = ctyToGo(e)
		}
		return m
	case t.IsTupleType() || t.IsListType() || t.IsSetType():
		var l []any
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			l = append(l, ctyToGo(e))
		}
		return l
	}
	return nil
}

// TestLocalStackInitParity: the LocalStack init script creates the same
// table (init/table.json against the store's TableDefinition), the FIFO
// queue with content-based dedup, visibility and redrive, its dead-letter
// queue, and the schedule group, under infra/'s default names.
func TestLocalStackInitParity(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "localstack", "init", "table.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	var gsis []string
	for _, g := range got["GlobalSecondaryIndexes"].([]any) {
		gm := g.(map[string]any)
		ks := gm["KeySchema"].([]any)
		gsis = append(gsis, fmt.Sprintf("%s:%s:%s:%s", gm["IndexName"], ks[0].(map[string]any)["AttributeName"],
			ks[1].(map[string]any)["AttributeName"], gm["Projection"].(map[string]any)["ProjectionType"]))
	}
	sort.Strings(gsis)
	def := ddb.TableDefinition("drover")
	var want []string
	for _, g := range def.GlobalSecondaryIndexes {
		want = append(want, fmt.Sprintf("%s:%s:%s:%s", *g.IndexName, *g.KeySchema[0].AttributeName, *g.KeySchema[1].AttributeName, g.Projection.ProjectionType))
	}
	sort.Strings(want)
	if !reflect.DeepEqual(gsis, want) || got["TableName"] != ddb.DefaultTable {
		t.Errorf("init table %v %v, store %v", got["TableName"], gsis, want)
	}
	script, err := os.ReadFile(filepath.Join("..", "localstack", "init", "drover.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"drover-evals.fifo", "drover-evals-dlq.fifo", `\"ContentBasedDeduplication\": \"true\"`,
		`\"VisibilityTimeout\": \"360\"`, `maxReceiveCount\\\":6`, "create-schedule-group --name drover"} {
		if !strings.Contains(string(script), s) {
			t.Errorf("init script lacks %s", s)
		}
	}
	tf := loadTerraform(t)
	for _, q := range []string{"eval", "eval_dlq"} {
		if _, ok := tf["aws_sqs_queue."+q]; !ok {
			t.Errorf("terraform has no queue %s", q)
		}
	}
}
