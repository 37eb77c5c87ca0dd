// Command authorizer is the HTTP API's Lambda authorizer for user routes:
// it allows a request whose X-Nomad-Token is a valid token (stored hashed,
// or the bootstrap token given at deploy as its hash).
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
	lambda.Start(h.Authorizer().Authorize)
}
