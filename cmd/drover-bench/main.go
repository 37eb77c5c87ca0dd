// Command drover-bench runs drover's embedded home at scale and prints
// figures (package internal/scalebench):
//
//	drover-bench c1m   [-nodes 1000 -jobs 100 -count 1000]   # Nomad's C1M: -nodes 5000 -jobs 1000 -count 1000
//	drover-bench burst [-jobs 4000 -nodes 3]
//
// -cpuprofile FILE writes a CPU profile (go tool pprof -top FILE).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/drover-sched/drover/internal/scalebench"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "c1m" && os.Args[1] != "burst") {
		fmt.Fprintln(os.Stderr, "usage: drover-bench c1m|burst [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	nodes := fs.Int("nodes", 0, "nodes registered in the store (c1m default 1000, burst 3)")
	jobs := fs.Int("jobs", 0, "jobs submitted (c1m default 100, burst 4000)")
	count := fs.Int("count", 1000, "allocs per job (c1m)")
	every := fs.Int("every", 50, "jobs per progress line (c1m)")
	workers := fs.Int("workers", 0, "evaluation workers (default one per core)")
	dir := fs.String("data-dir", "", "state directory (default a new temporary one, removed at exit)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	_ = fs.Parse(os.Args[2:])
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "drover-bench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "drover-bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(os.Args[1], *nodes, *jobs, *count, *every, *workers, *dir); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "drover-bench:", err)
		os.Exit(1)
	}
}

func run(shape string, nodes, jobs, count, every, workers int, dir string) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "drover-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	// An interrupt ends the run cleanly (the temporary state is removed).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if shape == "burst" {
		_, err := scalebench.RunBurst(ctx, scalebench.BurstConfig{Jobs: or(jobs, 4000), Nodes: or(nodes, 3),
			Workers: workers, Dir: dir, Out: os.Stdout})
		return err
	}
	fmt.Println("c1m: full size (Nomad's C1M): go run ./cmd/drover-bench c1m -nodes 5000 -jobs 1000 -count 1000")
	_, err := scalebench.RunC1M(ctx, scalebench.C1MConfig{Nodes: or(nodes, 1000), Jobs: or(jobs, 100), Count: count,
		Every: every, Workers: workers, Dir: dir, Out: os.Stdout})
	return err
}

func or(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
