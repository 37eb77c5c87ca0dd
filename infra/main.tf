# drover's AWS home with Terraform: the same resources as ../template.yaml
# (a test parses both and compares them). Build the functions first with
# `make lambda`, then `terraform init && terraform apply`.

data "aws_caller_identity" "current" {}
data "aws_region" "current" {}
data "aws_partition" "current" {}

locals {
  functions = {
    api        = { description = "Nomad's HTTP API", timeout = 30 }
    evaluate   = { description = "Evaluates one evaluation per message", timeout = 60 }
    sweeper    = { description = "Pending evals, liveness, deadlines, drains, GC", timeout = 60 }
    authorizer = { description = "Checks X-Nomad-Token", timeout = 5 }
  }
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
}

resource "aws_dynamodb_table" "state" {
  name         = var.name
  billing_mode = "PAY_PER_REQUEST"
  hash_key     = "PK"
  range_key    = "SK"

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

resource "aws_sqs_queue" "eval_dlq" {
  name                      = "${var.name}-evals-dlq.fifo"
  fifo_queue                = true
  message_retention_seconds = 1209600
}

# Visibility timeout 360 s: above the evaluate function's 60 s timeout.
resource "aws_sqs_queue" "eval" {
  name                        = "${var.name}-evals.fifo"
  fifo_queue                  = true
  content_based_deduplication = true
  visibility_timeout_seconds  = 360
  message_retention_seconds   = 1209600
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.eval_dlq.arn
    maxReceiveCount     = 6
  })
}

resource "aws_scheduler_schedule_group" "drover" {
  name = var.name
}

resource "aws_iam_role" "scheduler" {
  name = "${var.name}-scheduler"
  assume_role_policy = jsonencode({
    Version   = "2012-10-17"
    Statement = [{ Effect = "Allow", Principal = { Service = "scheduler.amazonaws.com" }, Action = "sts:AssumeRole" }]
  })
}

resource "aws_iam_role_policy" "scheduler" {
  role = aws_iam_role.scheduler.id
  policy = jsonencode({
    Version   = "2012-10-17"
    Statement = [{ Effect = "Allow", Action = "sqs:SendMessage", Resource = aws_sqs_queue.eval.arn }]
  })
}

# One role per function, as SAM creates them.
resource "aws_iam_role" "api" {
  name               = "${var.name}-api"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}
resource "aws_iam_role" "evaluate" {
  name               = "${var.name}-evaluate"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}
resource "aws_iam_role" "sweeper" {
  name               = "${var.name}-sweeper"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}
resource "aws_iam_role" "authorizer" {
  name               = "${var.name}-authorizer"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

data "aws_iam_policy_document" "lambda_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "control_plane" {
  statement {
    actions   = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query", "dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem"]
    resources = [aws_dynamodb_table.state.arn, "${aws_dynamodb_table.state.arn}/index/*"]
  }
  statement {
    actions   = ["sqs:SendMessage", "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"]
    resources = [aws_sqs_queue.eval.arn]
  }
  statement {
    actions   = ["scheduler:CreateSchedule"]
    resources = ["arn:${data.aws_partition.current.partition}:scheduler:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:schedule/${aws_scheduler_schedule_group.drover.name}/*"]
  }
  statement {
    actions   = ["iam:PassRole"]
    resources = [aws_iam_role.scheduler.arn]
  }
}

resource "aws_iam_role_policy" "control_plane" {
  for_each = { api = aws_iam_role.api.id, evaluate = aws_iam_role.evaluate.id, sweeper = aws_iam_role.sweeper.id }
  role     = each.value
  policy   = data.aws_iam_policy_document.control_plane.json
}

resource "aws_iam_role_policy" "authorizer" {
  role = aws_iam_role.authorizer.id
  policy = jsonencode({
    Version   = "2012-10-17"
    Statement = [{ Effect = "Allow", Action = ["dynamodb:GetItem"], Resource = aws_dynamodb_table.state.arn }]
  })
}

resource "aws_iam_role_policy_attachment" "logs" {
  for_each   = { api = aws_iam_role.api.name, evaluate = aws_iam_role.evaluate.name, sweeper = aws_iam_role.sweeper.name, authorizer = aws_iam_role.authorizer.name }
  role       = each.value
  policy_arn = "arn:${data.aws_partition.current.partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
}

data "archive_file" "function" {
  for_each    = local.functions
  type        = "zip"
  source_file = "${var.build_dir}/${each.key}/bootstrap"
  output_path = "${path.module}/.build/${each.key}.zip"
}

resource "aws_lambda_function" "api" {
  function_name    = "${var.name}-api"
  description      = local.functions.api.description
  role             = aws_iam_role.api.arn
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  handler          = "bootstrap"
  memory_size      = 256
  timeout          = 30
  filename         = data.archive_file.function["api"].output_path
  source_code_hash = data.archive_file.function["api"].output_base64sha256
  environment {
    variables = local.environment
  }
}

resource "aws_lambda_function" "evaluate" {
  function_name                  = "${var.name}-evaluate"
  description                    = local.functions.evaluate.description
  role                           = aws_iam_role.evaluate.arn
  runtime                        = "provided.al2023"
  architectures                  = ["arm64"]
  handler                        = "bootstrap"
  memory_size                    = 256
  timeout                        = 60
  reserved_concurrent_executions = 20
  filename                       = data.archive_file.function["evaluate"].output_path
  source_code_hash               = data.archive_file.function["evaluate"].output_base64sha256
  environment {
    variables = local.environment
  }
}

resource "aws_lambda_function" "sweeper" {
  function_name    = "${var.name}-sweeper"
  description      = local.functions.sweeper.description
  role             = aws_iam_role.sweeper.arn
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  handler          = "bootstrap"
  memory_size      = 256
  timeout          = 60
  filename         = data.archive_file.function["sweeper"].output_path
  source_code_hash = data.archive_file.function["sweeper"].output_base64sha256
  environment {
    variables = local.environment
  }
}

resource "aws_lambda_function" "authorizer" {
  function_name    = "${var.name}-authorizer"
  description      = local.functions.authorizer.description
  role             = aws_iam_role.authorizer.arn
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  handler          = "bootstrap"
  memory_size      = 256
  timeout          = 5
  filename         = data.archive_file.function["authorizer"].output_path
  source_code_hash = data.archive_file.function["authorizer"].output_base64sha256
  environment {
    variables = merge(local.environment, { DROVER_BOOTSTRAP_TOKEN_HASH = sha256(var.bootstrap_token) })
  }
}

resource "aws_lambda_event_source_mapping" "evaluate" {
  event_source_arn        = aws_sqs_queue.eval.arn
  function_name           = aws_lambda_function.evaluate.arn
  batch_size              = 5
  function_response_types = ["ReportBatchItemFailures"]
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
# aws:userid), heartbeat fields only, and the node-agent API routes.
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
