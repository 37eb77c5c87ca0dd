output "api_url" {
  description = "NOMAD_ADDR / DROVER_ADDR for the CLI"
  value       = aws_apigatewayv2_api.http.api_endpoint
}

output "queue_url" {
  value = aws_sqs_queue.eval.url
}

output "dead_letter_queue_url" {
  value = aws_sqs_queue.eval_dlq.url
}

output "table_name" {
  description = "Kept by a destroy while deletion_protection is true (see the README)"
  value       = aws_dynamodb_table.state.name
}

output "schedule_group_name" {
  value = aws_scheduler_schedule_group.drover.name
}

output "node_agent_policy_arn" {
  description = "Attach to the node agents' roles (done for the role this module creates)"
  value       = aws_iam_policy.node_agent.arn
}

output "node_role_arns" {
  description = "The roles the node-agent routes accept"
  value       = local.node_role_arns
}

output "node_agent_instance_profile_name" {
  description = "Launch node agents' EC2 instances with this instance profile (null when node_role_arns is set)"
  value       = one(aws_iam_instance_profile.node_agent[*].name)
}
