// Command testapp is the program in the docker tests' image (built FROM
// scratch, see package dockertest): a static binary whose first argument
// picks what it does.
//
//	testapp sleep                  print "ready", run until SIGINT/SIGTERM (exit 0)
//	testapp ignore-signals         run, ignoring SIGINT and SIGTERM
//	testapp echo ARGS...           print ARGS on stdout, "to stderr" on stderr, exit $EXIT_CODE
//	testapp env                    print the environment, one variable a line
//	testapp write PATH TEXT        write TEXT to PATH, then sleep
//	testapp serve ADDR TEXT        answer HTTP on ADDR with TEXT and $VERSION
//	testapp proxy ADDR URL         answer HTTP on ADDR with "proxied: " and what URL answers
//	testapp alloc MB               allocate and touch MB MiB, then sleep
//	testapp lines N                print N numbered lines, then sleep
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testapp MODE [ARGS]")
		os.Exit(2)
	}
	args := os.Args[2:]
	// The stop signals are caught before a mode prints its first line: a
	// test that waits for that line may signal at once, and a Go program
	// signalled before it catches SIGINT exits 2 instead of 0.
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	switch os.Args[1] {
	case "sleep":
		fmt.Println("ready")
		waitSignal()
	case "ignore-signals":
		signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(24 * time.Hour)
	case "echo":
		fmt.Println(strings.Join(args, " "))
		fmt.Fprintln(os.Stderr, "to stderr")
		code, _ := strconv.Atoi(os.Getenv("EXIT_CODE"))
		os.Exit(code)
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
	case "write":
		if err := os.WriteFile(args[0], []byte(args[1]), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		waitSignal()
	case "serve":
		text := args[1]
		http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "%s %s\n", text, os.Getenv("VERSION"))
		})
		go func() {
			if err := http.ListenAndServe(args[0], nil); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}()
		fmt.Println("serving on", args[0])
		waitSignal()
	case "proxy":
		// proxy LISTEN URL: answers each request with what URL answers,
		// prefixed by "proxied: " (a second task reaching the first
		// one over the group's shared localhost).
		backend := args[1]
		http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
			resp, err := http.Get(backend)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			fmt.Fprintf(w, "proxied: %s", b)
		})
		go func() {
			if err := http.ListenAndServe(args[0], nil); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}()
		fmt.Println("proxying", args[0], "to", backend)
		waitSignal()
	case "alloc":
		mb, _ := strconv.Atoi(args[0])
		var keep [][]byte
		for i := 0; i < mb; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = byte(j)
			}
			keep = append(keep, b)
		}
		fmt.Println("allocated", len(keep), "MiB")
		waitSignal()
	case "lines":
		n, _ := strconv.Atoi(args[0])
		for i := 1; i <= n; i++ {
			fmt.Printf("line %d\n", i)
		}
		waitSignal()
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", os.Args[1])
		os.Exit(2)
	}
}

// stop receives SIGINT and SIGTERM from main's start on.
var stop = make(chan os.Signal, 1)

func waitSignal() {
	select {
	case <-stop:
	case <-time.After(24 * time.Hour):
	}
}
