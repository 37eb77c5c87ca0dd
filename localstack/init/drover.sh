#!/bin/sh
# Creates drover's resources in LocalStack (run by LocalStack at ready).
# Names: table "drover", queues "drover-evals.fifo" and
# "drover-evals-dlq.fifo", schedule group "drover" — as infra/ names them
# with its default name.
set -eu
dir=$(dirname "$0")
awslocal dynamodb create-table --cli-input-json "file://$dir/table.json"
dlq_url=$(awslocal sqs create-queue --queue-name drover-evals-dlq.fifo \
  --attributes FifoQueue=true,MessageRetentionPeriod=1209600 --query QueueUrl --output text)
dlq_arn=$(awslocal sqs get-queue-attributes --queue-url "$dlq_url" --attribute-names QueueArn --query Attributes.QueueArn --output text)
awslocal sqs create-queue --queue-name drover-evals.fifo --attributes "{
  \"FifoQueue\": \"true\", \"ContentBasedDeduplication\": \"true\", \"VisibilityTimeout\": \"360\",
  \"MessageRetentionPeriod\": \"1209600\",
  \"RedrivePolicy\": \"{\\\"deadLetterTargetArn\\\":\\\"$dlq_arn\\\",\\\"maxReceiveCount\\\":50}\"}"
awslocal scheduler create-schedule-group --name drover
echo "drover resources created"
