package controlplane

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// TimerConfig tunes the control plane's timed duties. Zero values take the
// defaults.
type TimerConfig struct {
	// Interval between checks of heartbeats, deployments and drains
	// (default 1 s).
	Interval time.Duration
	// HeartbeatGrace is added to the heartbeat TTL before a node counts
	// as missed (default: the TTL itself).
	HeartbeatGrace time.Duration
	// GCInterval between garbage collections (default 5 min).
	GCInterval time.Duration
	// GCThreshold: finished objects older than this are collected
	// (default 1 h).
	GCThreshold time.Duration
}

// Timers runs the control plane's timed duties in the embedded home: node
// liveness, the deployment watcher's deadlines and auto-promotion, the
// drainer, and garbage collection. On AWS scheduled functions call the
// same Service methods.
type Timers struct {
	svc *Service
	cfg TimerConfig
}

// NewTimers returns timers for svc.
func NewTimers(svc *Service, cfg TimerConfig) *Timers {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.HeartbeatGrace <= 0 {
		cfg.HeartbeatGrace = svc.heartbeatTTL
	}
	if cfg.GCInterval <= 0 {
		cfg.GCInterval = 5 * time.Minute
	}
	if cfg.GCThreshold <= 0 {
		cfg.GCThreshold = time.Hour
	}
	return &Timers{svc: svc, cfg: cfg}
}

// Run runs until ctx ends.
func (t *Timers) Run(ctx context.Context) {
	tick := time.NewTicker(t.cfg.Interval)
	defer tick.Stop()
	gc := time.NewTicker(t.cfg.GCInterval)
	defer gc.Stop()
	log := t.svc.log
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := t.svc.CheckHeartbeats(ctx, t.cfg.HeartbeatGrace); err != nil && ctx.Err() == nil {
				log.Warn("check heartbeats", zap.Error(err))
			}
			if err := t.svc.CheckDeployments(ctx); err != nil && ctx.Err() == nil {
				log.Warn("check deployments", zap.Error(err))
			}
			if err := t.svc.RunDrainer(ctx); err != nil && ctx.Err() == nil {
				log.Warn("drain nodes", zap.Error(err))
			}
		case <-gc.C:
			if _, err := t.svc.GarbageCollect(ctx, t.cfg.GCThreshold); err != nil && ctx.Err() == nil {
				log.Warn("garbage collect", zap.Error(err))
			}
		}
	}
}
