// Command sweeper is the pending-evaluation sweeper, run every minute by
// an EventBridge schedule: evaluations pending longer than
// DROVER_PENDING_AFTER are sent to the queue again (no lost evaluation).
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
	lambda.Start(h.Sweep)
}
