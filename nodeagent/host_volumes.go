package nodeagent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/drover-sched/drover/drivers"
	"github.com/drover-sched/drover/structs"
)

// ParseHostVolume reads one -host-volume flag, "name=path" or
// "name=path:ro" (Nomad's client host_volume block in flag form): the
// path must be absolute.
func ParseHostVolume(s string) (*structs.ClientHostVolumeConfig, error) {
	name, path, ok := strings.Cut(s, "=")
	if !ok || name == "" || path == "" {
		return nil, fmt.Errorf("host volume %q: want name=path or name=path:ro", s)
	}
	hv := &structs.ClientHostVolumeConfig{Name: name, Path: path}
	if p, ok := strings.CutSuffix(path, ":ro"); ok {
		hv.Path, hv.ReadOnly = p, true
	} else if p, ok := strings.CutSuffix(path, ":rw"); ok {
		hv.Path = p
	}
	if !filepath.IsAbs(hv.Path) {
		return nil, fmt.Errorf("host volume %q: path %q must be absolute", name, hv.Path)
	}
	hv.Path = filepath.Clean(hv.Path)
	return hv, nil
}

// checkHostVolumes checks the configured host volumes: each path exists
// (the node offers only what it has). Nomad's client does the same when it
// fingerprints its host volumes.
func checkHostVolumes(vols map[string]*structs.ClientHostVolumeConfig) error {
	names := make([]string, 0, len(vols))
	for n := range vols {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := vols[n]
		if v == nil || v.Name != n {
			return fmt.Errorf("host volume %q: its config must carry its name", n)
		}
		if _, err := os.Stat(v.Path); err != nil {
			return fmt.Errorf("host volume %q: %w", n, err)
		}
	}
	return nil
}

// volumeHook turns the task's volume_mount blocks into the driver's
// mounts (Nomad's volumes hook): each names a group volume of type host,
// whose source must be one of this node's host volumes (it may have gone
// since placement: the task then fails to set up). A mount is read-only
// when the node's volume, the group's volume or the mount says so.
type volumeHook struct{}

func (*volumeHook) Name() string { return "volumes" }

func (*volumeHook) Prestart(req *taskPrestartRequest, resp *taskPrestartResponse) error {
	mounts, err := hostVolumeMounts(req.Alloc, req.Task, req.Node)
	if err != nil {
		return err
	}
	resp.Mounts = mounts
	return nil
}

func hostVolumeMounts(alloc *structs.Allocation, task *structs.Task, node *structs.Node) ([]drivers.MountConfig, error) {
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil {
		return nil, errors.New("the alloc's group is missing")
	}
	var out []drivers.MountConfig
	for _, vm := range task.VolumeMounts {
		req := tg.Volumes[vm.Volume]
		if req == nil {
			return nil, fmt.Errorf("volume_mount names volume %q, which the group does not have", vm.Volume)
		}
		if req.Type != structs.VolumeTypeHost {
			return nil, fmt.Errorf("volume %q: type %q is not supported", vm.Volume, req.Type)
		}
		var hv *structs.ClientHostVolumeConfig
		if node != nil {
			hv = node.HostVolumes[req.Source]
		}
		if hv == nil {
			return nil, fmt.Errorf("host volume validation error: missing %s (volume %q)", req.Source, vm.Volume)
		}
		out = append(out, drivers.MountConfig{TaskPath: vm.Destination, HostPath: hv.Path,
			ReadOnly: hv.ReadOnly || req.ReadOnly || vm.ReadOnly})
	}
	return out, nil
}

func copyHostVolumes(vols map[string]*structs.ClientHostVolumeConfig) map[string]*structs.ClientHostVolumeConfig {
	if len(vols) == 0 {
		return nil
	}
	out := make(map[string]*structs.ClientHostVolumeConfig, len(vols))
	for k, v := range vols {
		c := *v
		out[k] = &c
	}
	return out
}
