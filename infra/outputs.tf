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
  value = aws_dynamodb_table.state.name
}

output "schedule_group_name" {
  value = aws_scheduler_schedule_group.drover.name
}

output "node_agent_policy_arn" {
  description = "Attach to the node agents' instance role"
  value       = aws_iam_policy.node_agent.arn
}
