package scalebench

import (
	"context"
	"fmt"
	"io"
	"time"
)

// BurstConfig sizes a burst run: Jobs one-alloc service jobs on Nodes
// nodes.
type BurstConfig struct {
	Jobs, Nodes int
	// Submitters is how many API requests are in flight at once (default
	// 16).
	Submitters int
	Workers    int
	Dir        string
	Timeout    time.Duration
	Out        io.Writer
}

// BurstResult is what a burst run measured.
type BurstResult struct {
	// Registered is how long the registrations took, first request to
	// last answer.
	Registered time.Duration
	// PlacedAfter is from the last registration's answer to the last
	// alloc placed.
	PlacedAfter time.Duration
	// Purged is how long the purges took; StoppedAfter from the last
	// purge's answer to the last alloc stopped.
	Purged, StoppedAfter time.Duration
}

// RunBurst registers cfg.Jobs jobs of count 1 as fast as the API takes
// them on a server with cfg.Nodes nodes, waits until all are placed, then
// purges them all and waits until every alloc is stopped.
func RunBurst(ctx context.Context, cfg BurstConfig) (*BurstResult, error) {
	if cfg.Submitters <= 0 {
		cfg.Submitters = 16
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	srv, err := startServer(cfg.Dir, cfg.Workers)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	store := srv.agent.Store()
	per := int64(cfg.Jobs/cfg.Nodes + 1)
	if err := addNodes(ctx, store, cfg.Nodes, per*50, per*64, per*allocDiskMB); err != nil {
		return nil, err
	}
	name := func(i int) string { return fmt.Sprintf("burst-%05d", i) }
	res := &BurstResult{}

	start := time.Now()
	if err := inParallel(cfg.Jobs, cfg.Submitters, func(i int) error {
		_, _, err := srv.client.Jobs().Register(serviceJob(name(i), 1), nil)
		return err
	}); err != nil {
		return nil, fmt.Errorf("register: %w", err)
	}
	lastReq := time.Now()
	res.Registered = lastReq.Sub(start)
	logf(cfg.Out, "burst: %d jobs registered in %.1fs (%.0f/s)", cfg.Jobs, res.Registered.Seconds(), float64(cfg.Jobs)/res.Registered.Seconds())
	if err := waitPlaced(ctx, store, func(n int) bool { return n >= cfg.Jobs }, nil); err != nil {
		return nil, err
	}
	res.PlacedAfter = time.Since(lastReq)
	logf(cfg.Out, "burst: all %d placed %.1fs after the last registration (%.1fs after the first)", cfg.Jobs,
		res.PlacedAfter.Seconds(), time.Since(start).Seconds())

	start = time.Now()
	if err := inParallel(cfg.Jobs, cfg.Submitters, func(i int) error {
		_, _, err := srv.client.Jobs().Deregister(name(i), true, nil)
		return err
	}); err != nil {
		return nil, fmt.Errorf("purge: %w", err)
	}
	lastReq = time.Now()
	res.Purged = lastReq.Sub(start)
	logf(cfg.Out, "burst: %d jobs purged in %.1fs (%.0f/s)", cfg.Jobs, res.Purged.Seconds(), float64(cfg.Jobs)/res.Purged.Seconds())
	if err := waitPlaced(ctx, store, func(n int) bool { return n == 0 }, nil); err != nil {
		return nil, err
	}
	res.StoppedAfter = time.Since(lastReq)
	logf(cfg.Out, "burst: all %d allocs stopped %.1fs after the last purge (%.1fs after the first)", cfg.Jobs,
		res.StoppedAfter.Seconds(), time.Since(start).Seconds())
	return res, nil
}
