# Plans of this module against a mock aws provider (no account, no
# credentials): `terraform test` in infra/ after `make lambda` (the plan
# reads the zips' hashes), or with -var build_dir=<a folder with them>.
# TestTerraform runs it.

mock_provider "aws" {}

variables {
  bootstrap_token_hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
}

run "defaults" {
  command = plan
  assert {
    condition     = aws_scheduler_schedule_group.drover.name == "drover" && aws_dynamodb_table.state.name == "drover"
    error_message = "default names"
  }
  assert {
    condition     = aws_lambda_event_source_mapping.evaluate.scaling_config[0].maximum_concurrency == 20
    error_message = "the evaluate function's concurrency is capped on its event source mapping"
  }
  assert {
    condition     = coalesce(aws_lambda_function.evaluate.reserved_concurrent_executions, -1) == -1
    error_message = "the evaluate function reserves no concurrency"
  }
  assert {
    condition = alltrue([for g in [aws_cloudwatch_log_group.api, aws_cloudwatch_log_group.evaluate, aws_cloudwatch_log_group.sweeper,
    aws_cloudwatch_log_group.authorizer] : g.retention_in_days == 30])
    error_message = "log groups keep 30 days by default"
  }
  assert {
    condition     = aws_lambda_function.api.logging_config[0].log_group == "/drover/drover/api"
    error_message = "the api function logs to its log group"
  }
  assert {
    condition     = length(aws_iam_role.node_agent) == 1 && length(aws_iam_instance_profile.node_agent) == 1
    error_message = "without node_role_arns a node role and its instance profile are created"
  }
  assert {
    condition     = aws_dynamodb_table.state.deletion_protection_enabled
    error_message = "the state table is protected from deletion by default"
  }
}

run "longest_name_and_node_roles_given" {
  command = plan
  variables {
    name           = "n2345678901234567890123456789012"
    node_role_arns = ["arn:aws:iam::123456789012:role/fleet/drover-node", "arn:aws:iam::123456789012:role/lab"]
  }
  assert {
    condition = alltrue([for n in [aws_lambda_function.api.function_name, aws_lambda_function.evaluate.function_name,
      aws_lambda_function.sweeper.function_name, aws_lambda_function.authorizer.function_name, aws_iam_role.api.name,
      aws_iam_role.evaluate.name, aws_iam_role.sweeper.name, aws_iam_role.authorizer.name, aws_iam_role.scheduler.name,
      aws_scheduler_schedule_group.drover.name, aws_cloudwatch_event_rule.sweeper.name] :
    length(n) <= 64])
    error_message = "a 32-character name keeps function, role, schedule group and rule names within 64 characters"
  }
  assert {
    condition     = length(aws_sqs_queue.eval_dlq.name) <= 80 && length(aws_sqs_queue.eval.name) <= 80
    error_message = "queue names within 80 characters"
  }
  assert {
    condition     = length(aws_iam_role.node_agent) == 0
    error_message = "no node role is created when node_role_arns is given"
  }
  assert {
    condition     = aws_lambda_function.api.environment[0].variables["DROVER_NODE_ROLE_ARNS"] == "arn:aws:iam::123456789012:role/fleet/drover-node,arn:aws:iam::123456789012:role/lab"
    error_message = "the api function accepts the given node roles"
  }
}

run "bad_inputs" {
  command = plan
  variables {
    name                 = "n23456789012345678901234567890123"
    bootstrap_token_hash = "the-token-itself"
    node_role_arns       = ["drover-node"]
    log_retention_days   = 31
  }
  expect_failures = [var.name, var.bootstrap_token_hash, var.node_role_arns, var.log_retention_days]
}

# A role name with a character IAM does not allow (the api function would
# refuse it at start) is refused at plan.
run "bad_node_role_name" {
  command = plan
  variables {
    bootstrap_token_hash = "0000000000000000000000000000000000000000000000000000000000000000"
    node_role_arns       = ["arn:aws:iam::123456789012:role/has space"]
  }
  expect_failures = [var.node_role_arns]
}
