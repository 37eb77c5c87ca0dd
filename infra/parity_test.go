package infra_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	ddb "github.com/drover-sched/drover/storage/dynamodb"
)

type tableShape struct {
	Hash, Range string
	GSIs        []string // name:hash:range:projection
}

func storeTable() tableShape {
	def := ddb.TableDefinition("x")
	s := tableShape{Hash: *def.KeySchema[0].AttributeName, Range: *def.KeySchema[1].AttributeName}
	for _, g := range def.GlobalSecondaryIndexes {
		s.GSIs = append(s.GSIs, fmt.Sprintf("%s:%s:%s:%s", *g.IndexName, *g.KeySchema[0].AttributeName, *g.KeySchema[1].AttributeName, g.Projection.ProjectionType))
	}
	sort.Strings(s.GSIs)
	return s
}

// TestTemplateParity: template.yaml and infra/ declare the same table (the
// store's own TableDefinition, on demand, point-in-time recovery,
// protected), queues, functions (runtime, architecture, handler, memory,
// timeout, role, log group, environment), log groups with the same
// retention, event source mapping, sweeper schedule, routes and node
// roles, and both keep drover's state when they are deleted.
func TestTemplateParity(t *testing.T) {
	cfn, tf := loadTemplate(t), loadTerraform(t)
	tfAttr := func(addr, name string) string {
		return fmt.Sprint(tf.attr(t, tf.resource(t, addr).body, name))
	}

	// Table.
	want := storeTable()
	tables := cfn.ofType("AWS::DynamoDB::Table")
	if len(tables) != 1 {
		t.Fatalf("template tables: %d", len(tables))
	}
	for name, r := range tables {
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
		pitr, _ := p["PointInTimeRecoverySpecification"].(map[string]any)
		if p["BillingMode"] != "PAY_PER_REQUEST" || pitr["PointInTimeRecoveryEnabled"] != true || p["DeletionProtectionEnabled"] != true {
			t.Errorf("template table: billing %v, PITR %v, deletion protection %v", p["BillingMode"], pitr, p["DeletionProtectionEnabled"])
		}
		// drover's state outlives the stack.
		if r["DeletionPolicy"] != "Retain" || r["UpdateReplacePolicy"] != "Retain" {
			t.Errorf("template table %s: DeletionPolicy %v, UpdateReplacePolicy %v; want Retain for both", name, r["DeletionPolicy"], r["UpdateReplacePolicy"])
		}
	}
	tfTables := tf.ofType("aws_dynamodb_table")
	if len(tfTables) != 1 {
		t.Fatalf("terraform tables: %d", len(tfTables))
	}
	for _, r := range tfTables {
		s := tableShape{Hash: fmt.Sprint(tf.attr(t, r.body, "hash_key")), Range: fmt.Sprint(tf.attr(t, r.body, "range_key"))}
		for _, g := range blocks(r.body, "global_secondary_index") {
			s.GSIs = append(s.GSIs, fmt.Sprintf("%v:%v:%v:%v", tf.attr(t, g.Body, "name"), tf.attr(t, g.Body, "hash_key"),
				tf.attr(t, g.Body, "range_key"), tf.attr(t, g.Body, "projection_type")))
		}
		sort.Strings(s.GSIs)
		if !reflect.DeepEqual(s, want) {
			t.Errorf("terraform table %+v, store creates %+v", s, want)
		}
		pitr := blocks(r.body, "point_in_time_recovery")
		if tf.attr(t, r.body, "billing_mode") != "PAY_PER_REQUEST" || len(pitr) != 1 || tf.attr(t, pitr[0].Body, "enabled") != true {
			t.Error("terraform table: billing mode or point-in-time recovery")
		}
		// Terraform has no Retain: deletion protection (on by default)
		// makes a destroy stop at the table.
		if tf.attr(t, r.body, "deletion_protection_enabled") != "${var.deletion_protection}" || tf.variableDefault(t, "deletion_protection") != true {
			t.Error("terraform table: deletion_protection_enabled must be var.deletion_protection, default true")
		}
	}

	// Every stateful resource has its deletion and replacement policy
	// written out (cfn-lint's I3011 list: tables, queues, log groups).
	for name, r := range cfn.resources {
		switch r["Type"] {
		case "AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Logs::LogGroup":
			if r["DeletionPolicy"] == nil || r["UpdateReplacePolicy"] == nil {
				t.Errorf("template %s (%s): DeletionPolicy and UpdateReplacePolicy must be set", name, r["Type"])
			}
		}
	}

	// Queues: FIFO, content-based dedup, visibility, redrive, retention.
	queueShape := func(fifo, cbd, vis, maxRecv, retention any) string {
		return fmt.Sprintf("fifo=%v cbd=%v vis=%v maxReceive=%v retention=%v", fifo, cbd, vis, maxRecv, retention)
	}
	cfnQueues := map[string]string{}
	for name, r := range cfn.ofType("AWS::SQS::Queue") {
		p := props(r)
		var maxRecv any
		if rp, ok := p["RedrivePolicy"].(map[string]any); ok {
			maxRecv = rp["maxReceiveCount"]
		}
		cfnQueues[strings.TrimSuffix(norm(name), "queue")] = queueShape(p["FifoQueue"], p["ContentBasedDeduplication"], p["VisibilityTimeout"], maxRecv, p["MessageRetentionPeriod"])
	}
	tfQueues := map[string]string{}
	for name, r := range tf.ofType("aws_sqs_queue") {
		var maxRecv any
		if rp, ok := tf.attr(t, r.body, "redrive_policy").(map[string]any); ok {
			maxRecv = rp["maxReceiveCount"]
		}
		tfQueues[norm(name)] = queueShape(tf.attr(t, r.body, "fifo_queue"), tf.attr(t, r.body, "content_based_deduplication"),
			tf.attr(t, r.body, "visibility_timeout_seconds"), maxRecv, tf.attr(t, r.body, "message_retention_seconds"))
	}
	fix := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = strings.ReplaceAll(v, "<nil>", "")
		}
		return out
	}
	if !reflect.DeepEqual(fix(cfnQueues), fix(tfQueues)) {
		t.Errorf("queues differ:\n template  %v\n terraform %v", fix(cfnQueues), fix(tfQueues))
	}
	if q := fix(cfnQueues)["eval"]; q != queueShape(true, true, 360, 50, 1209600) {
		t.Errorf("eval queue: %s (FIFO, content-based dedup for Scheduler, visibility above the function timeout, redrive)", q)
	}
	// SQS counts every receive, also deliveries handed back unprocessed
	// (throttling, transaction conflicts, no time left); the evaluate
	// function counts real attempts itself. The redrive must leave room for
	// many hand-backs per real attempt, or an eval reaches the dead-letter
	// queue without having been evaluated DROVER_DELIVERY_LIMIT times.
	for _, f := range []struct{ file, limitRe, recvRe string }{
		{"../template.yaml", `DROVER_DELIVERY_LIMIT: "(\d+)"`, `maxReceiveCount: (\d+)`},
		{"main.tf", `DROVER_DELIVERY_LIMIT\s*= "(\d+)"`, `maxReceiveCount\s*= (\d+)`},
	} {
		src, err := os.ReadFile(f.file)
		if err != nil {
			t.Fatal(err)
		}
		num := func(re string) int {
			m := regexp.MustCompile(re).FindSubmatch(src)
			if m == nil {
				t.Fatalf("%s: no match for %s", f.file, re)
			}
			var n int
			fmt.Sscan(string(m[1]), &n)
			return n
		}
		if limit, recv := num(f.limitRe), num(f.recvRe); recv < 10*limit {
			t.Errorf("%s: maxReceiveCount %d is not well above DROVER_DELIVERY_LIMIT %d (want at least 10x)", f.file, recv, limit)
		}
	}

	// Functions: the same set and shape; each its own role and log group.
	type fnShape struct {
		Runtime, Arch, Handler, Memory, Timeout, Role, LogGroup string
		Env                                                     []string
		Reserved                                                bool
	}
	globals := cfn.globalFunction()
	cfnFns := map[string]fnShape{}
	for name, r := range cfn.ofType("AWS::Serverless::Function") {
		p := props(r)
		get := func(k string) string {
			if v, ok := p[k]; ok {
				return fmt.Sprint(v)
			}
			return fmt.Sprint(globals[k])
		}
		var env []string
		for _, vars := range []any{globals["Environment"], p["Environment"]} {
			if m, ok := vars.(map[string]any); ok {
				env = append(env, sortedKeys(m["Variables"].(map[string]any))...)
			}
		}
		sort.Strings(env)
		lg, _ := p["LoggingConfig"].(map[string]any)
		_, reserved := p["ReservedConcurrentExecutions"]
		cfnFns[norm(name)] = fnShape{Runtime: get("Runtime"), Arch: fmt.Sprint(globals["Architectures"].([]any)[0]), Handler: get("Handler"),
			Memory: get("MemorySize"), Timeout: get("Timeout"), Role: norm(strings.TrimSuffix(strings.Trim(fmt.Sprint(cfnSymbolic(p["Role"])), "${}"), ".Arn")),
			LogGroup: norm(strings.Trim(fmt.Sprint(cfnSymbolic(lg["LogGroup"])), "${}")), Env: env, Reserved: reserved}
	}
	tfFns := map[string]fnShape{}
	for name, r := range tf.ofType("aws_lambda_function") {
		var env []string
		for _, b := range blocks(r.body, "environment") {
			env = sortedKeys(tf.attr(t, b.Body, "variables").(map[string]any))
		}
		var logGroup string
		for _, b := range blocks(r.body, "logging_config") {
			logGroup = norm(strings.TrimSuffix(strings.TrimPrefix(fmt.Sprint(tf.attr(t, b.Body, "log_group")), "${aws_cloudwatch_log_group."), ".name}"))
		}
		_, reserved := r.body.Attributes["reserved_concurrent_executions"]
		tfFns[norm(name)] = fnShape{Runtime: fmt.Sprint(tf.attr(t, r.body, "runtime")), Arch: fmt.Sprint(tf.attr(t, r.body, "architectures").([]any)[0]),
			Handler: fmt.Sprint(tf.attr(t, r.body, "handler")), Memory: fmt.Sprint(tf.attr(t, r.body, "memory_size")), Timeout: fmt.Sprint(tf.attr(t, r.body, "timeout")),
			Role:     norm(strings.TrimSuffix(strings.TrimPrefix(fmt.Sprint(tf.attr(t, r.body, "role")), "${aws_iam_role."), ".arn}")),
			LogGroup: logGroup, Env: env, Reserved: reserved}
	}
	if !reflect.DeepEqual(cfnFns, tfFns) {
		t.Errorf("functions differ:\n template  %+v\n terraform %+v", cfnFns, tfFns)
	}
	for name, f := range cfnFns {
		if f.Runtime != "provided.al2023" || f.Arch != "arm64" || f.Handler != "bootstrap" || f.Role != name || f.LogGroup != name || f.Reserved {
			t.Errorf("function %s: %+v (provided.al2023/arm64/bootstrap, its own role and log group, no reserved concurrency)", name, f)
		}
	}
	if !strings.Contains(strings.Join(cfnFns["api"].Env, " "), "DROVER_NODE_ROLE_ARNS") {
		t.Error("the api function is not told the node roles (DROVER_NODE_ROLE_ARNS)")
	}

	// Log groups: one per function, the same retention (30 days by default).
	cfnLogs := map[string]string{}
	for name, r := range cfn.ofType("AWS::Logs::LogGroup") {
		cfnLogs[norm(name)] = fmt.Sprint(cfnSymbolic(props(r)["RetentionInDays"]))
	}
	tfLogs := map[string]string{}
	for name, r := range tf.ofType("aws_cloudwatch_log_group") {
		tfLogs[norm(name)] = fmt.Sprint(tf.attr(t, r.body, "retention_in_days"))
	}
	if !reflect.DeepEqual(sortedKeys(cfnLogs), sortedKeys(cfnFns)) || !reflect.DeepEqual(sortedKeys(tfLogs), sortedKeys(tfFns)) {
		t.Errorf("log groups: template %v, terraform %v; want one per function", sortedKeys(cfnLogs), sortedKeys(tfLogs))
	}
	for name := range cfnFns {
		if cfnLogs[name] != "${LogRetentionInDays}" || tfLogs[name] != "${var.log_retention_days}" {
			t.Errorf("log group %s: retention %s / %s, want the retention parameter / variable", name, cfnLogs[name], tfLogs[name])
		}
	}
	if d := cfn.parameterDefault(t, "LogRetentionInDays"); d != "30" || fmt.Sprint(tf.variableDefault(t, "log_retention_days")) != "30" {
		t.Errorf("log retention defaults: %s / %v, want 30", d, tf.variableDefault(t, "log_retention_days"))
	}

	// The evaluate function's queue: batch, partial failures, concurrency
	// capped on the mapping; Terraform waits for the role's policy.
	ev := props(cfn.resources["EvaluateFunction"])["Events"].(map[string]any)["EvalQueue"].(map[string]any)["Properties"].(map[string]any)
	esm := tf.resource(t, "aws_lambda_event_source_mapping.evaluate")
	var tfMaxConc any
	for _, b := range blocks(esm.body, "scaling_config") {
		tfMaxConc = tf.attr(t, b.Body, "maximum_concurrency")
	}
	cfnMaxConc := ev["ScalingConfig"].(map[string]any)["MaximumConcurrency"]
	if fmt.Sprint(ev["BatchSize"]) != "5" || fmt.Sprint(tf.attr(t, esm.body, "batch_size")) != "5" || fmt.Sprint(cfnMaxConc) != "20" || fmt.Sprint(tfMaxConc) != "20" ||
		canonical(ev["FunctionResponseTypes"]) != `["ReportBatchItemFailures"]` || canonical(tf.attr(t, esm.body, "function_response_types")) != `["ReportBatchItemFailures"]` {
		t.Errorf("evaluate mapping: template batch %v max %v types %v; terraform batch %v max %v", ev["BatchSize"], cfnMaxConc, ev["FunctionResponseTypes"],
			tf.attr(t, esm.body, "batch_size"), tfMaxConc)
	}
	if deps := fmt.Sprint(tf.attr(t, esm.body, "depends_on")); !strings.Contains(deps, "${aws_iam_role_policy.evaluate}") {
		t.Errorf("terraform's event source mapping depends on %s; it must wait for aws_iam_role_policy.evaluate (Lambda checks the role at creation)", deps)
	}

	// The sweeper every minute.
	sw := props(cfn.resources["SweeperFunction"])["Events"].(map[string]any)["EveryMinute"].(map[string]any)["Properties"].(map[string]any)
	if sw["Schedule"] != "rate(1 minute)" || tfAttr("aws_cloudwatch_event_rule.sweeper", "schedule_expression") != "rate(1 minute)" {
		t.Error("sweeper schedule differs from rate(1 minute)")
	}

	// Routes: user routes behind the token authorizer, node routes IAM.
	apiEvents := props(cfn.resources["ApiFunction"])["Events"].(map[string]any)
	nodeRoute := apiEvents["NodeAgentRoutes"].(map[string]any)["Properties"].(map[string]any)
	if nodeRoute["Path"] != "/v1/nodeagent/{proxy+}" || nodeRoute["Auth"].(map[string]any)["Authorizer"] != "AWS_IAM" ||
		tfAttr("aws_apigatewayv2_route.node_agent", "route_key") != "ANY /v1/nodeagent/{proxy+}" || tfAttr("aws_apigatewayv2_route.node_agent", "authorization_type") != "AWS_IAM" {
		t.Error("node-agent routes must be IAM-authorized in both")
	}
	if tfAttr("aws_apigatewayv2_route.user", "authorization_type") != "CUSTOM" || props(cfn.resources["HttpApi"])["Auth"].(map[string]any)["DefaultAuthorizer"] != "NomadToken" {
		t.Error("user routes must go through the X-Nomad-Token authorizer in both")
	}

	// Node roles: a parameter / variable, empty by default (then the role
	// each creates).
	if d := cfn.parameterDefault(t, "NodeRoleArns"); d != "" || canonical(tf.variableDefault(t, "node_role_arns")) != "[]" {
		t.Errorf("node roles default: %q / %v, want empty", d, tf.variableDefault(t, "node_role_arns"))
	}
	if cfn.resources["NodeAgentRole"]["Condition"] != "CreateNodeRole" || !strings.Contains(tfAttr("aws_iam_role.node_agent", "count"), "var.node_role_arns") {
		t.Error("the node role is created only when no node roles are given, in both")
	}

	// The same resource kinds, one for one (and by name).
	for cfnType, tfType := range map[string]string{
		"AWS::Scheduler::ScheduleGroup": "aws_scheduler_schedule_group",
		"AWS::Serverless::HttpApi":      "aws_apigatewayv2_api",
	} {
		if len(cfn.ofType(cfnType)) != 1 || len(tf.ofType(tfType)) != 1 {
			t.Errorf("%s / %s: %d and %d", cfnType, tfType, len(cfn.ofType(cfnType)), len(tf.ofType(tfType)))
		}
	}
	for cfnType, tfType := range map[string]string{
		"AWS::IAM::ManagedPolicy":   "aws_iam_policy",
		"AWS::IAM::Role":            "aws_iam_role",
		"AWS::IAM::InstanceProfile": "aws_iam_instance_profile",
		"AWS::Logs::LogGroup":       "aws_cloudwatch_log_group",
		"AWS::Serverless::Function": "aws_lambda_function",
	} {
		var a, b []string
		for name := range cfn.ofType(cfnType) {
			a = append(a, norm(name))
		}
		for name := range tf.ofType(tfType) {
			b = append(b, norm(name))
		}
		sort.Strings(a)
		sort.Strings(b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s %v / %s %v", cfnType, a, tfType, b)
		}
	}
}

// scheduleGroupName is EventBridge Scheduler's rule for a group name.
var scheduleGroupName = regexp.MustCompile(`^[0-9a-zA-Z-_.]{1,64}$`)

// TestScheduleGroupNameFits: the template's schedule group name fits
// Scheduler's 64 characters for the longest stack name CloudFormation
// allows (128), and Terraform's name variable is bounded so that it and
// every name derived from it fit (tests/plan.tftest.hcl plans the longest).
func TestScheduleGroupNameFits(t *testing.T) {
	cfn, tf := loadTemplate(t), loadTerraform(t)
	stack := strings.Repeat("s", 128)
	name := cfnEval(t, props(cfn.resources["ScheduleGroup"])["Name"], map[string]string{
		"AWS::StackName": stack,
		"AWS::StackId":   "arn:aws:cloudformation:us-east-1:123456789012:stack/" + stack + "/8a3f6b70-2f1e-11ef-9d3c-0a1b2c3d4e5f",
	})
	if !scheduleGroupName.MatchString(name) {
		t.Errorf("schedule group name for a 128-character stack: %q (%d characters)", name, len(name))
	}
	if got := tf.attr(t, tf.resource(t, "aws_scheduler_schedule_group.drover").body, "name"); got != "${var.name}" {
		t.Errorf("terraform schedule group name %v, want var.name", got)
	}
	val := blocks(tf.variables["name"], "validation")
	if len(val) != 1 || !strings.Contains(fmt.Sprint(tf.attr(t, val[0].Body, "condition")), "{2,31}") {
		t.Error("terraform's name variable must be validated to at most 32 characters")
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

func statements(doc map[string]any) map[string]statement {
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
	cfnDoc := props(loadTemplate(t).resources["NodeAgentPolicy"])["PolicyDocument"].(map[string]any)
	tf := loadTerraform(t)
	tfDoc := tf.attr(t, tf.resource(t, "aws_iam_policy.node_agent").body, "policy").(map[string]any)
	for name, doc := range map[string]map[string]any{"template.yaml": cfnDoc, "infra": tfDoc} {
		st := statements(doc)
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
	if want := storeTable().GSIs; !reflect.DeepEqual(gsis, want) || got["TableName"] != ddb.DefaultTable {
		t.Errorf("init table %v %v, store %v", got["TableName"], gsis, want)
	}
	script, err := os.ReadFile(filepath.Join("..", "localstack", "init", "drover.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"drover-evals.fifo", "drover-evals-dlq.fifo", `\"ContentBasedDeduplication\": \"true\"`,
		`\"VisibilityTimeout\": \"360\"`, `maxReceiveCount\\\":50`, "create-schedule-group --name drover"} {
		if !strings.Contains(string(script), s) {
			t.Errorf("init script lacks %s", s)
		}
	}
	tf := loadTerraform(t)
	for _, q := range []string{"eval", "eval_dlq"} {
		if _, ok := tf.resources["aws_sqs_queue."+q]; !ok {
			t.Errorf("terraform has no queue %s", q)
		}
	}
	if d := tf.variableDefault(t, "name"); d != ddb.DefaultTable {
		t.Errorf("terraform's default name %v, the init script's drover", d)
	}
}
