package docker

import (
	"context"
	"strconv"
	"time"

	"github.com/moby/moby/client"

	"github.com/drover-sched/drover/structs"
)

// Fingerprint implements drivers.Driver: detected and healthy only when the
// engine answers; its version and what the agent allows as attributes
// (Nomad's driver.docker.* attributes).
func (d *Driver) Fingerprint(ctx context.Context) *structs.DriverInfo {
	now := time.Now()
	if _, err := d.client.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return &structs.DriverInfo{Detected: false, Healthy: false,
			HealthDescription: "Failed to connect to the Docker Engine: " + err.Error(), UpdateTime: now}
	}
	v, err := d.client.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return &structs.DriverInfo{Detected: true, Healthy: false,
			HealthDescription: "Docker Engine version unknown: " + err.Error(), UpdateTime: now}
	}
	return &structs.DriverInfo{
		Attributes: map[string]string{
			"driver.docker":                    "1",
			"driver.docker.version":            v.Version,
			"driver.docker.api_version":        v.APIVersion,
			"driver.docker.os_type":            v.Os,
			"driver.docker.privileged.enabled": strconv.FormatBool(d.opts.DockerAllowPrivileged),
			"driver.docker.volumes.enabled":    strconv.FormatBool(d.opts.DockerVolumesEnabled),
		},
		Detected:          true,
		Healthy:           true,
		HealthDescription: "Healthy",
		UpdateTime:        now,
	}
}
