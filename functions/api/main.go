// Command api is the API Lambda function: API Gateway HTTP API (payload
// 2.0) requests in, the same HTTP handlers the dev agent serves, responses
// out (awslabs/aws-lambda-go-api-proxy's adapter; a response too large for
// Lambda is answered 400, see awshome.APIHandler).
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
	lambda.Start(awshome.APIHandler(h.API(), 0, h.Log.Named("api")))
}
