// Command api is the API Lambda function: API Gateway HTTP API (payload
// 2.0) requests in, the same HTTP handlers the dev agent serves, responses
// out (awslabs/aws-lambda-go-api-proxy's adapter).
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/drover-sched/drover/internal/awshome"
)

func main() {
	h, err := awshome.FromEnv(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(httpadapter.NewV2(h.API()).ProxyWithContext)
}
