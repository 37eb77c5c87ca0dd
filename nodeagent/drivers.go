package nodeagent

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/drivers/catalog"
	dockerdriver "github.com/drover-sched/drover/drivers/docker"
	execdriver "github.com/drover-sched/drover/drivers/exec"
	"github.com/drover-sched/drover/structs"
)

// driverFingerprintTimeout bounds one driver's fingerprint (a daemon that
// does not answer is unhealthy, not a stuck agent).
const driverFingerprintTimeout = 5 * time.Second

// DefaultDrivers are the drivers a node enables when its config names
// none: as in Nomad, docker and exec everywhere (their fingerprints say
// whether they can run here), raw_exec only in dev mode (elsewhere it must
// be enabled explicitly).
func DefaultDrivers(devMode bool) []string {
	if devMode {
		return []string{DriverRawExec, execdriver.Name, dockerdriver.Name}
	}
	return []string{execdriver.Name, dockerdriver.Name}
}

// newDrivers creates the enabled drivers from the catalog of built-ins,
// plus the extra ones (tests).
func newDrivers(cfg *Config) (map[string]drivers.Driver, error) {
	out := map[string]drivers.Driver{}
	opts := driverOptions(cfg)
	for _, name := range cfg.EnabledDrivers {
		b, ok := catalog.Lookup(name)
		if !ok {
			if d := cfg.ExtraDrivers[name]; d != nil {
				out[name] = d
				continue
			}
			return nil, fmt.Errorf("nodeagent: unknown driver %q", name)
		}
		d, err := b.New(opts)
		if err != nil {
			return nil, fmt.Errorf("nodeagent: driver %s: %w", name, err)
		}
		out[name] = d
	}
	return out, nil
}

// driverOptions are the options every driver is created with.
func driverOptions(cfg *Config) drivers.Options {
	return drivers.Options{
		Logger:                cfg.Logger.Named("driver"),
		SupervisorCommand:     cfg.SupervisorCommand,
		SupervisorEnv:         cfg.SupervisorEnv,
		DockerHost:            cfg.DockerHost,
		DockerAllowPrivileged: cfg.DockerAllowPrivileged,
		DockerVolumesEnabled:  cfg.DockerVolumesEnabled,
		DockerInfraImage:      cfg.DockerInfraImage,
	}
}

// fingerprintDrivers asks every driver to describe itself now.
func fingerprintDrivers(ds map[string]drivers.Driver) map[string]*structs.DriverInfo {
	out := make(map[string]*structs.DriverInfo, len(ds))
	for name, d := range ds {
		ctx, cancel := context.WithTimeout(context.Background(), driverFingerprintTimeout)
		out[name] = d.Fingerprint(ctx)
		cancel()
	}
	return out
}

// cleanupAlloc has every driver remove what tasks of an alloc whose state
// is gone left behind. It returns how many processes or containers were
// removed.
func (a *Agent) cleanupAlloc(d AllocDir, allocID string) int {
	var stateDirs []string
	if entries, err := os.ReadDir(d.Dir); err == nil {
		for _, e := range entries {
			if e.IsDir() && e.Name() != SharedAllocDirName {
				stateDirs = append(stateDirs, d.TaskDir(e.Name()).StateDir)
			}
		}
	}
	n := 0
	for _, drv := range a.drivers {
		if c, ok := drv.(drivers.AllocCleaner); ok {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			n += c.CleanupAlloc(ctx, allocID, stateDirs)
			cancel()
		}
	}
	return n
}

// closeDrivers releases the drivers' own resources (watchers, clients);
// tasks keep running.
func (a *Agent) closeDrivers() {
	for name, d := range a.drivers {
		if c, ok := d.(io.Closer); ok {
			if err := c.Close(); err != nil {
				a.logger.Warn("close driver", zap.String("driver", name), zap.Error(err))
			}
		}
	}
}

// driverFingerprintLoop fingerprints the drivers every
// DriverFingerprintInterval and re-registers the node when one changed
// (became healthy or unhealthy, or changed its attributes), so that
// placement sees, for instance, a Docker Engine that stopped answering.
func (a *Agent) driverFingerprintLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.cfg.DriverFingerprintInterval):
		}
		now := fingerprintDrivers(a.drivers)
		if !driversChanged(a.Node().Drivers, now) {
			continue
		}
		a.logger.Info("driver health or attributes changed, registering the node again")
		if err := a.refreshNode(); err != nil {
			a.logger.Warn("fingerprint", zap.Error(err))
			continue
		}
		if _, err := a.cp.RegisterNode(ctx, a.Node()); err != nil && ctx.Err() == nil {
			// The heartbeat loop re-registers after failures too.
			a.logger.Warn("register the node after a driver change", zap.Error(err))
		}
	}
}

// driversChanged compares two driver fingerprints, ignoring when they were
// taken.
func driversChanged(old, now map[string]*structs.DriverInfo) bool {
	if len(old) != len(now) {
		return true
	}
	for name, n := range now {
		o := old[name]
		if o == nil || o.Detected != n.Detected || o.Healthy != n.Healthy || o.HealthDescription != n.HealthDescription ||
			!maps.Equal(o.Attributes, n.Attributes) {
			return true
		}
	}
	return false
}
