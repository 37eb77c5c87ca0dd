package scheduler

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/drover-sched/drover/structs"
)

// ErrPaused is returned by Process while the scheduler configuration has
// PauseEvalBroker set (Nomad's `operator scheduler set-config
// -pause-eval-broker`): the eval stays pending in the state store, and
// is sent again when processing resumes.
var ErrPaused = errors.New("evaluation processing is paused (scheduler configuration PauseEvalBroker)")

// ConfigSource reads the cluster's scheduler configuration (the state
// store).
type ConfigSource interface {
	SchedulerConfig(ctx context.Context) (*structs.SchedulerConfiguration, error)
}

// CachedConfig reads the scheduler configuration at most once per TTL
// (default 1 s), so that each evaluation does not pay a store read for it.
// A failed read keeps the last good configuration (or the default).
type CachedConfig struct {
	Source ConfigSource
	TTL    time.Duration
	Now    func() time.Time

	mu   sync.Mutex
	cfg  *structs.SchedulerConfiguration
	read time.Time
}

// Get returns the configuration, read from Source when the cached one is
// older than TTL.
func (c *CachedConfig) Get(ctx context.Context) *structs.SchedulerConfiguration {
	if c == nil || c.Source == nil {
		return structs.DefaultSchedulerConfiguration()
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	ttl := c.TTL
	if ttl <= 0 {
		ttl = time.Second
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg != nil && now().Sub(c.read) < ttl {
		return c.cfg
	}
	cfg, err := c.Source.SchedulerConfig(ctx)
	switch {
	case err == nil:
		c.cfg, c.read = cfg, now()
	case c.cfg == nil:
		return structs.DefaultSchedulerConfiguration()
	}
	return c.cfg
}

// Invalidate makes the next Get read the store (after a change made in
// this process).
func (c *CachedConfig) Invalidate() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.cfg = nil
	c.mu.Unlock()
}

// Paused reports whether evaluation processing is paused.
func (c *CachedConfig) Paused(ctx context.Context) bool {
	return c.Get(ctx).PauseEvalBroker
}

// Paused reports whether evaluation processing is paused by the
// scheduler configuration (the evaluate function asks before it counts a
// delivery as an attempt).
func (e *Evaluator) Paused(ctx context.Context) bool {
	return e.Config.Paused(ctx)
}
