// Command evaluate is the evaluate Lambda function: SQS FIFO batches of
// evaluation messages in, one evaluation each (scheduler.Evaluator),
// partial batch response out.
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/drover-sched/drover/internal/awshome"
)

func main() {
	h, err := awshome.FromEnv(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(h.EvaluateHandler().Handle)
}
