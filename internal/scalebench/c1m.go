package scalebench

import (
	"context"
	"fmt"
	"io"
	"time"
)

// C1MConfig sizes a C1M-shaped run. Nomad's C1M: 1,000 jobs × 1,000
// allocs on 5,000 nodes.
type C1MConfig struct {
	Nodes, Jobs, Count int
	// Every is how many jobs a progress line covers (default 50).
	Every int
	// Workers is the server's evaluation workers (0: one per core).
	Workers int
	// Submitters is how many registrations are in flight at once
	// (default 4).
	Submitters int
	// Dir holds the server's state (a fresh directory).
	Dir string
	// Timeout bounds the run (default 30 min).
	Timeout time.Duration
	Out     io.Writer
}

// C1MResult is what a C1M-shaped run measured.
type C1MResult struct {
	// Elapsed runs from the first registration to the last placement.
	Elapsed time.Duration
	Placed  int
	// FirstRate and LastRate are the placements/s of the first and the
	// last Every jobs; FirstPerCPU and LastPerCPU the placements per
	// CPU-second of this process over the same jobs (on a shared machine
	// the wall-clock rates also measure the neighbours).
	FirstRate, LastRate     float64
	FirstPerCPU, LastPerCPU float64
	StoreMiB, PeakRSSMiB    float64
}

// RunC1M registers cfg.Nodes nodes directly in a new server's store, then
// submits cfg.Jobs service jobs of cfg.Count allocs through the HTTP API
// (Nomad's Go client, the registration path users take); the server's
// own workers evaluate them. It prints a progress line every cfg.Every
// jobs' worth of placements.
func RunC1M(ctx context.Context, cfg C1MConfig) (*C1MResult, error) {
	if cfg.Every <= 0 {
		cfg.Every = 50
	}
	if cfg.Submitters <= 0 {
		cfg.Submitters = 4
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	srv, err := startServer(cfg.Dir, cfg.Workers)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	store := srv.agent.Store()
	// Room for a fifth of all allocs on any node (50 MHz, 64 MiB, 10 MiB
	// each), so placement is limited by scoring, not by capacity.
	perNode := int64(cfg.Jobs*cfg.Count/cfg.Nodes+1) * 5
	if err := addNodes(ctx, store, cfg.Nodes, perNode*50, perNode*64, perNode*allocDiskMB); err != nil {
		return nil, err
	}
	logf(cfg.Out, "c1m: %d nodes registered in the store; submitting %d jobs × %d allocs", cfg.Nodes, cfg.Jobs, cfg.Count)

	start := time.Now()
	submitted := make(chan error, 1)
	go func() {
		submitted <- inParallel(cfg.Jobs, cfg.Submitters, func(i int) error {
			_, _, err := srv.client.Jobs().Register(serviceJob(fmt.Sprintf("c1m-%04d", i), cfg.Count), nil)
			if err != nil {
				return fmt.Errorf("register job %d: %w", i, err)
			}
			return nil
		})
	}()

	res := &C1MResult{}
	total := cfg.Jobs * cfg.Count
	step := cfg.Every * cfg.Count
	next, last, lastN, lastCPU := step, start, 0, cpuSeconds()
	var firstErr error
	err = waitPlaced(ctx, store, func(n int) bool { return n >= total || firstErr != nil }, func(n int) {
		select {
		case err := <-submitted:
			firstErr = err
		default:
		}
		if rss := rssMiB(); rss > res.PeakRSSMiB {
			res.PeakRSSMiB = rss
		}
		if n < next {
			return
		}
		// One line per poll that crossed a multiple of Every jobs; its
		// rate covers the placements since the previous line.
		now, cpu := time.Now(), cpuSeconds()
		rate := float64(n-lastN) / now.Sub(last).Seconds()
		perCPU := float64(n-lastN) / (cpu - lastCPU)
		if lastN == 0 {
			res.FirstRate, res.FirstPerCPU = rate, perCPU
		}
		res.LastRate, res.LastPerCPU = rate, perCPU
		logf(cfg.Out, "c1m: jobs %4d/%d  allocs %8d  placements/s (last %d jobs) %7.0f  per CPU-second %7.0f  rss %6.0f MiB  store %6.0f MiB  %6.1fs",
			n/cfg.Count, cfg.Jobs, n, (n-lastN)/cfg.Count, rate, perCPU, rssMiB(), storeMiB(cfg.Dir), now.Sub(start).Seconds())
		last, lastN, lastCPU = now, n, cpu
		next = (n/step + 1) * step
	})
	if firstErr != nil {
		return nil, firstErr
	}
	if err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	res.Placed = total
	res.StoreMiB = storeMiB(cfg.Dir)
	logf(cfg.Out, "c1m: %d allocs placed in %.1fs (%.0f placements/s); first %d jobs %.0f/s, last %d jobs %.0f/s (%.0f%%); per CPU-second first %.0f, last %.0f (%.0f%%); store %.0f MiB; peak RSS %.0f MiB",
		total, res.Elapsed.Seconds(), float64(total)/res.Elapsed.Seconds(), cfg.Every, res.FirstRate, cfg.Every, res.LastRate,
		100*res.LastRate/res.FirstRate, res.FirstPerCPU, res.LastPerCPU, 100*res.LastPerCPU/res.FirstPerCPU, res.StoreMiB, res.PeakRSSMiB)
	return res, nil
}
