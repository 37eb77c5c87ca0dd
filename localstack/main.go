// Command localstack runs drover's local AWS for tests and development.
//
//	localstack serve            start kumo (an in-process AWS emulator) on a
//	                            random 127.0.0.1 port and print its URL on
//	                            the first line of stdout; stop on SIGINT/SIGTERM
//	localstack gateway [flags]  play API Gateway's HTTP API in front of the
//	                            api function (token authorizer, IAM node
//	                            routes); print its URL on the first line
//	localstack pump [flags]     play AWS's part where no emulator does:
//	                            deliver due EventBridge Scheduler schedules to
//	                            their SQS target, and SQS messages to the
//	                            evaluate function (Lambda Invoke with a real
//	                            SQS event payload)
//
// It is its own Go module so that drover's main module does not depend on
// kumo (design §6).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sivchari/kumo"
)

func main() {
	cmd := "serve"
	if len(os.Args) > 1 {
		cmd = os.Args[1]
	}
	switch cmd {
	case "serve":
		serve()
	case "pump":
		os.Exit(runPump(os.Args[2:]))
	case "gateway":
		os.Exit(runGateway(os.Args[2:]))
	default:
		fmt.Fprintf(os.Stderr, "usage: localstack [serve | pump ... | gateway ...]\n")
		os.Exit(2)
	}
}

func serve() {
	srv := kumo.NewServer()
	// The harness reads this line.
	fmt.Println(srv.URL)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	<-ch
	srv.Close()
}
