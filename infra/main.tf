# drover's AWS home with Terraform: the same resources as ../template.yaml
# (TestTemplateParity parses both and compares them). Build the function
# zips first with `make lambda`, then `terraform init && terraform apply`.

data "aws_caller_identity" "current" {}
data "aws_region" "current" {}
data "aws_partition" "current" {}

locals {
  build_dir = var.build_dir != "" ? var.build_dir : "${path.module}/../build"
  environment = {
    DROVER_TABLE              = aws_dynamodb_table.state.name
    DROVER_QUEUE_URL          = aws_sqs_queue.eval.url
    DROVER_QUEUE_ARN          = aws_sqs_queue.eval.arn
    DROVER_SCHEDULER_ROLE_ARN = aws_iam_role.scheduler.arn
    DROVER_SCHEDULE_GROUP     = aws_scheduler_schedule_group.drover.name
    DROVER_DELIVERY_LIMIT     = "3"
    DROVER_PENDING_AFTER      = "2m"
    DROVER_LOG_LEVEL          = var.log_level
  }
  # The roles the node-agent routes accept: the ones given, or the one
  # created here.
  node_role_arns = length(var.node_role_arns) > 0 ? var.node_role_arns : aws_iam_role.node_agent[*].arn
  lambda_trust = jsonencode({
    Version   = "2012-10-17"
    Statement = [{ Effect = "Allow", Principal = { Service = "lambda.amazonaws.com" }, Action = "sts:AssumeRole" }]
  })
}

# One table; keys and indexes as storage/dynamodb/README.md describes. It
# is drover's whole state: deletion protection keeps it through a
# `terraform destroy` (set deletion_protection = false first to delete it).
resource "aws_dynamodb_table" "state" {
  name                        = var.name
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "PK"
  range_key                   = "SK"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "PK"
    type = "S"
  }
  attribute {
    name = "SK"
    type = "S"
  }
  attribute {
    name = "g1pk"
    type = "S"
  }
  attribute {
    name = "g1sk"
    type = "S"
  }
  attribute {
    name = "g2pk"
    type = "S"
  }
  attribute {
    name = "g2sk"
    type = "S"
  }
  attribute {
    name = "g3pk"
    type = "S"
  }
  attribute {
    name = "g3sk"
    type = "S"
  }

  global_secondary_index {
    name            = "gsi1"
    hash_key        = "g1pk"
    range_key       = "g1sk"
    projection_type = "KEYS_ONLY"
  }
  global_secondary_index {
    name            = "gsi2"
    hash_key        = "g2pk"
    range_key       = "g2sk"
    projection_type = "KEYS_ONLY"
  }
  global_secondary_index {
    name            = "gsi3"
    hash_key        = "g3pk"
    range_key       = "g3sk"
    projection_type = "KEYS_ONLY"
  }

  point_in_time_recovery {
    enabled = true
  }
}

# The queues go with a destroy: every message on them is a pending
# evaluation the table also holds, and the sweeper re-sends those.
resource "aws_sqs_queue" "eval_dlq" {
  name                      = "${var.name}-evals-dlq.fifo"
  fifo_queue                = true
  message_retention_seconds = 1209600
}

# Visibility timeout 360 s: six times the evaluate function's 60 s timeout.
resource "aws_sqs_queue" "eval" {
  name                        = "${var.name}-evals.fifo"
  fifo_queue                  = true
  content_based_deduplication = true
  visibility_timeout_seconds  = 360
  message_retention_seconds   = 1209600
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.eval_dlq.arn
    maxReceiveCount     = 50
  })
}

# var.name is at most 32 characters: within the 64 a group name may have.
resource "aws_scheduler_schedule_group" "drover" {
  name = var.name
}

# The role EventBridge Scheduler assumes to send delayed evals to the
# queue; only Scheduler acting for this account may assume it.
resource "aws_iam_role" "scheduler" {
  name = "${var.name}-scheduler"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "scheduler.amazonaws.com" }
      Action    = "sts:AssumeRole"
      Condition = { StringEquals = { "aws:SourceAccount" = data.aws_caller_identity.current.account_id } }
    }]
  })
}

resource "aws_iam_role_policy" "scheduler" {
  name = "send-to-eval-queue"
  role = aws_iam_role.scheduler.id
  policy = jsonencode({
    Version   = "2012-10-17"
    Statement = [{ Sid = "SendEvals", Effect = "Allow", Action = "sqs:SendMessage", Resource = aws_sqs_queue.eval.arn }]
  })
}

# Logs: one group per function, with a retention.
resource "aws_cloudwatch_log_group" "api" {
  name              = "/drover/${var.name}/api"
  retention_in_days = var.log_retention_days
}
resource "aws_cloudwatch_log_group" "evaluate" {
  name              = "/drover/${var.name}/evaluate"
  retention_in_days = var.log_retention_days
}
resource "aws_cloudwatch_log_group" "sweeper" {
  name              = "/drover/${var.name}/sweeper"
  retention_in_days = var.log_retention_days
}
resource "aws_cloudwatch_log_group" "authorizer" {
  name              = "/drover/${var.name}/authorizer"
  retention_in_days = var.log_retention_days
}

# The calls the api, evaluate and sweeper functions make (storage/dynamodb,
# events/sqs's producer, events/schedule): the table and its indexes, sends
# to the eval queue, one-time schedules in the group with the Scheduler role
# passed to Scheduler only.
resource "aws_iam_policy" "control_plane" {
  name        = "${var.name}-control-plane"
  description = "drover control plane - the state table, sends to the eval queue, delayed evals"
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid    = "State"
        Effect = "Allow"
        Action = ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem",
        "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"]
        Resource = [aws_dynamodb_table.state.arn, "${aws_dynamodb_table.state.arn}/index/*"]
      },
      { Sid = "SendEvals", Effect = "Allow", Action = "sqs:SendMessage", Resource = aws_sqs_queue.eval.arn },
      {
        Sid      = "DelayEvals"
        Effect   = "Allow"
        Action   = "scheduler:CreateSchedule"
        Resource = "arn:${data.aws_partition.current.partition}:scheduler:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:schedule/${aws_scheduler_schedule_group.drover.name}/*"
      },
      {
        Sid       = "PassSchedulerRole"
        Effect    = "Allow"
        Action    = "iam:PassRole"
        Resource  = aws_iam_role.scheduler.arn
        Condition = { StringEquals = { "iam:PassedToService" = "scheduler.amazonaws.com" } }
      },
    ]
  })
}

# One role per function, each with only what its code calls.
resource "aws_iam_role" "api" {
  name               = "${var.name}-api"
  assume_role_policy = local.lambda_trust
}
resource "aws_iam_role" "evaluate" {
  name               = "${var.name}-evaluate"
  assume_role_policy = local.lambda_trust
}
resource "aws_iam_role" "sweeper" {
  name               = "${var.name}-sweeper"
  assume_role_policy = local.lambda_trust
}
resource "aws_iam_role" "authorizer" {
  name               = "${var.name}-authorizer"
  assume_role_policy = local.lambda_trust
}

resource "aws_iam_role_policy_attachment" "control_plane" {
  for_each   = { api = aws_iam_role.api.name, evaluate = aws_iam_role.evaluate.name, sweeper = aws_iam_role.sweeper.name }
  role       = each.value
  policy_arn = aws_iam_policy.control_plane.arn
}

resource "aws_iam_role_policy" "api" {
  name = "logs"
  role = aws_iam_role.api.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      { Sid = "Logs", Effect = "Allow", Action = ["logs:CreateLogStream", "logs:PutLogEvents"], Resource = "${aws_cloudwatch_log_group.api.arn}:*" },
    ]
  })
}

resource "aws_iam_role_policy" "evaluate" {
  name = "logs-and-eval-queue"
  role = aws_iam_role.evaluate.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      { Sid = "Logs", Effect = "Allow", Action = ["logs:CreateLogStream", "logs:PutLogEvents"], Resource = "${aws_cloudwatch_log_group.evaluate.arn}:*" },
      # Receive, delete and attributes: the event source mapping polls with
      # this role; visibility: the handler hands back what it cannot finish.
      {
        Sid      = "ConsumeEvals"
        Effect   = "Allow"
        Action   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"]
        Resource = aws_sqs_queue.eval.arn
      },
    ]
  })
}

resource "aws_iam_role_policy" "sweeper" {
  name = "logs"
  role = aws_iam_role.sweeper.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      { Sid = "Logs", Effect = "Allow", Action = ["logs:CreateLogStream", "logs:PutLogEvents"], Resource = "${aws_cloudwatch_log_group.sweeper.arn}:*" },
    ]
  })
}

# The authorizer reads token items (PK TOKEN#<hash>) and nothing else.
resource "aws_iam_role_policy" "authorizer" {
  name = "logs-and-tokens"
  role = aws_iam_role.authorizer.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      { Sid = "Logs", Effect = "Allow", Action = ["logs:CreateLogStream", "logs:PutLogEvents"], Resource = "${aws_cloudwatch_log_group.authorizer.arn}:*" },
      {
        Sid       = "ReadTokens"
        Effect    = "Allow"
        Action    = "dynamodb:GetItem"
        Resource  = aws_dynamodb_table.state.arn
        Condition = { "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["TOKEN#*"] } }
      },
    ]
  })
}

resource "aws_lambda_function" "api" {
  function_name    = "${var.name}-api"
  description      = "Nomad's HTTP API (user routes with X-Nomad-Token, node-agent routes with IAM)"
  role             = aws_iam_role.api.arn
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  handler          = "bootstrap"
  memory_size      = 256
  timeout          = 30
  filename         = "${local.build_dir}/api.zip"
  source_code_hash = filebase64sha256("${local.build_dir}/api.zip")
  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.api.name
  }
  environment {
    variables = merge(local.environment, { DROVER_NODE_ROLE_ARNS = join(",", local.node_role_arns) })
  }
}

# At most 20 concurrent batches, set on the event source mapping below (a
# reserved concurrency would take 20 from the account's pool, fail where
# the quota is below 120, and throttle batches into the visibility timeout).
resource "aws_lambda_function" "evaluate" {
  function_name    = "${var.name}-evaluate"
  description      = "Evaluates one evaluation per message (reconcile, place, commit the plan)"
  role             = aws_iam_role.evaluate.arn
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  handler          = "bootstrap"
  memory_size      = 256
  timeout          = 60
  filename         = "${local.build_dir}/evaluate.zip"
  source_code_hash = filebase64sha256("${local.build_dir}/evaluate.zip")
  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.evaluate.name
  }
  environment {
    variables = local.environment
  }
}

resource "aws_lambda_function" "sweeper" {
  function_name    = "${var.name}-sweeper"
  description      = "Re-sends evaluations pending too long; node liveness, deployment deadlines, drains, garbage collection"
  role             = aws_iam_role.sweeper.arn
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  handler          = "bootstrap"
  memory_size      = 256
  timeout          = 60
  filename         = "${local.build_dir}/sweeper.zip"
  source_code_hash = filebase64sha256("${local.build_dir}/sweeper.zip")
  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.sweeper.name
  }
  environment {
    variables = local.environment
  }
}

resource "aws_lambda_function" "authorizer" {
  function_name    = "${var.name}-authorizer"
  description      = "Checks X-Nomad-Token against the stored token hashes"
  role             = aws_iam_role.authorizer.arn
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  handler          = "bootstrap"
  memory_size      = 256
  timeout          = 5
  filename         = "${local.build_dir}/authorizer.zip"
  source_code_hash = filebase64sha256("${local.build_dir}/authorizer.zip")
  logging_config {
    log_format = "Text"
    log_group  = aws_cloudwatch_log_group.authorizer.name
  }
  environment {
    variables = merge(local.environment, { DROVER_BOOTSTRAP_TOKEN_HASH = var.bootstrap_token_hash })
  }
}

# Lambda checks at creation that the function's role may receive from the
# queue: the mapping waits for the role's policy.
resource "aws_lambda_event_source_mapping" "evaluate" {
  event_source_arn        = aws_sqs_queue.eval.arn
  function_name           = aws_lambda_function.evaluate.arn
  batch_size              = 5
  function_response_types = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = 20
  }
  depends_on = [aws_iam_role_policy.evaluate]
}

resource "aws_cloudwatch_event_rule" "sweeper" {
  name                = "${var.name}-sweeper"
  schedule_expression = "rate(1 minute)"
}

resource "aws_cloudwatch_event_target" "sweeper" {
  rule = aws_cloudwatch_event_rule.sweeper.name
  arn  = aws_lambda_function.sweeper.arn
}

resource "aws_lambda_permission" "sweeper" {
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.sweeper.function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.sweeper.arn
}

# HTTP API: user routes behind the X-Nomad-Token authorizer, node-agent
# routes behind IAM (SigV4).
resource "aws_apigatewayv2_api" "http" {
  name          = var.name
  protocol_type = "HTTP"
}

resource "aws_apigatewayv2_authorizer" "nomad_token" {
  api_id                            = aws_apigatewayv2_api.http.id
  name                              = "NomadToken"
  authorizer_type                   = "REQUEST"
  authorizer_uri                    = aws_lambda_function.authorizer.invoke_arn
  authorizer_payload_format_version = "2.0"
  enable_simple_responses           = true
  identity_sources                  = ["$request.header.X-Nomad-Token"]
  authorizer_result_ttl_in_seconds  = 300
}

resource "aws_apigatewayv2_integration" "api" {
  api_id                 = aws_apigatewayv2_api.http.id
  integration_type       = "AWS_PROXY"
  integration_uri        = aws_lambda_function.api.invoke_arn
  payload_format_version = "2.0"
}

resource "aws_apigatewayv2_route" "user" {
  api_id             = aws_apigatewayv2_api.http.id
  route_key          = "ANY /{proxy+}"
  target             = "integrations/${aws_apigatewayv2_integration.api.id}"
  authorization_type = "CUSTOM"
  authorizer_id      = aws_apigatewayv2_authorizer.nomad_token.id
}

resource "aws_apigatewayv2_route" "node_agent" {
  api_id             = aws_apigatewayv2_api.http.id
  route_key          = "ANY /v1/nodeagent/{proxy+}"
  target             = "integrations/${aws_apigatewayv2_integration.api.id}"
  authorization_type = "AWS_IAM"
}

resource "aws_apigatewayv2_stage" "default" {
  api_id      = aws_apigatewayv2_api.http.id
  name        = "$default"
  auto_deploy = true
}

resource "aws_lambda_permission" "api" {
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.api.function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.http.execution_arn}/*"
}

resource "aws_lambda_permission" "authorizer" {
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.authorizer.function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.http.execution_arn}/*"
}

# Attach to each node agent's role: its own node's items only (node ID =
# aws:userid), heartbeat fields only, and the node-agent API routes, which
# accept only the node roles (node_role_arns) and check the caller is that
# node.
resource "aws_iam_policy" "node_agent" {
  name        = "${var.name}-node-agent"
  description = "drover node agent - its own node's DynamoDB items and the node-agent API routes"
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "ReadOwnNode"
        Effect    = "Allow"
        Action    = ["dynamodb:GetItem", "dynamodb:Query"]
        Resource  = aws_dynamodb_table.state.arn
        Condition = { "ForAllValues:StringEquals" = { "dynamodb:LeadingKeys" = ["NODE#$${aws:userid}"] } }
      },
      {
        Sid      = "HeartbeatOwnNode"
        Effect   = "Allow"
        Action   = ["dynamodb:UpdateItem"]
        Resource = aws_dynamodb_table.state.arn
        Condition = {
          "ForAllValues:StringEquals" = {
            "dynamodb:LeadingKeys" = ["NODE#$${aws:userid}"]
            "dynamodb:Attributes"  = ["PK", "SK", "hbAt", "hbTTL"]
          }
          "StringEqualsIfExists" = { "dynamodb:ReturnValues" = ["NONE", "UPDATED_NEW"] }
        }
      },
      {
        Sid      = "NodeAgentRoutes"
        Effect   = "Allow"
        Action   = "execute-api:Invoke"
        Resource = "${aws_apigatewayv2_api.http.execution_arn}/*/*/v1/nodeagent/*"
      },
    ]
  })
}

# The default node role (when node_role_arns is empty): for EC2 instances,
# through the instance profile.
resource "aws_iam_role" "node_agent" {
  count       = length(var.node_role_arns) == 0 ? 1 : 0
  name        = "${var.name}-node-agent"
  description = "drover node agents (EC2 instances); the node-agent policy is attached"
  assume_role_policy = jsonencode({
    Version   = "2012-10-17"
    Statement = [{ Effect = "Allow", Principal = { Service = "ec2.amazonaws.com" }, Action = "sts:AssumeRole" }]
  })
}

resource "aws_iam_role_policy_attachment" "node_agent" {
  count      = length(aws_iam_role.node_agent)
  role       = aws_iam_role.node_agent[count.index].name
  policy_arn = aws_iam_policy.node_agent.arn
}

resource "aws_iam_instance_profile" "node_agent" {
  count = length(aws_iam_role.node_agent)
  name  = "${var.name}-node-agent"
  role  = aws_iam_role.node_agent[count.index].name
}
