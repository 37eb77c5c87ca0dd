package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/drover-sched/drover/agent"
)

func runAgent(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dev := fs.Bool("dev", false, "run the all-in-one dev agent: API, evaluator and a node with raw_exec, state in -data-dir")
	dataDir := fs.String("data-dir", "", "directory for state (default in -dev: a new temporary directory, removed at exit)")
	httpAddr := fs.String("http-addr", agent.DefaultHTTPAddr, "HOST:PORT the HTTP API listens on")
	nodeName := fs.String("node-name", "", "name of the dev node (default: the hostname)")
	workers := fs.Int("workers", 2, "number of evaluation workers")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	logJSON := fs.Bool("log-json", false, "write logs as JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: drover agent -dev [-data-dir DIR] [-http-addr HOST:PORT]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 1
	}
	if !*dev {
		fmt.Fprintln(stderr, "drover agent: only -dev (all in one) is available in this version; run `drover agent -dev`")
		return 1
	}
	if *workers < 1 {
		fmt.Fprintln(stderr, "drover agent: -workers must be at least 1")
		return 1
	}
	log, err := newLogger(*logLevel, *logJSON, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "drover agent: %v\n", err)
		return 1
	}
	defer log.Sync()

	dir := *dataDir
	if dir == "" {
		dir, err = os.MkdirTemp("", "drover-dev-")
		if err != nil {
			fmt.Fprintf(stderr, "drover agent: create temporary data dir: %v\n", err)
			return 1
		}
		defer os.RemoveAll(dir)
	}
	a, err := agent.New(agent.Config{DataDir: dir, HTTPAddr: *httpAddr, Dev: true, Workers: *workers,
		NodeName: *nodeName, Logger: log})
	if err != nil {
		fmt.Fprintf(stderr, "drover agent: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stdout, "==> drover agent configuration:\n\n")
	fmt.Fprintf(stdout, "       Mode: dev (server + client, raw_exec enabled)\n")
	fmt.Fprintf(stdout, "   HTTP API: http://%s\n", *httpAddr)
	fmt.Fprintf(stdout, "   Data dir: %s\n", dir)
	fmt.Fprintf(stdout, "    Node ID: %s\n", a.NodeID())
	fmt.Fprintf(stdout, "    Version: %s\n\n", agent.Version)
	fmt.Fprintf(stdout, "==> drover agent started! Log data will stream in below:\n\n")
	if err := a.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "drover agent: %v\n", err)
		return 1
	}
	return 0
}

// newLogger builds zap's console (or JSON) logger at level, on w.
func newLogger(level string, json bool, w io.Writer) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: %w", level, err)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = func(t time.Time, e zapcore.PrimitiveArrayEncoder) {
		e.AppendString(t.Format("2006-01-02T15:04:05.000Z07:00"))
	}
	var encoder zapcore.Encoder
	if json {
		encoder = zapcore.NewJSONEncoder(enc)
	} else {
		enc.EncodeLevel = zapcore.CapitalLevelEncoder
		encoder = zapcore.NewConsoleEncoder(enc)
	}
	return zap.New(zapcore.NewCore(encoder, zapcore.AddSync(w), lvl)), nil
}

func runVersion(_ []string, stdout, _ io.Writer) int {
	fmt.Fprintf(stdout, "drover v%s\n", agent.Version)
	return 0
}
