package placement

import (
	"sort"

	"github.com/drover-sched/drover/structs"
)

// reasonMissingHostVolumes is the filter reason of a node without the
// group's host volumes (Nomad's FilterConstraintHostVolumes).
const reasonMissingHostVolumes = "missing compatible host volumes"

// hostVolumeRequests returns the group's host volume blocks, by name.
func hostVolumeRequests(tg *structs.TaskGroup) []*structs.VolumeRequest {
	names := make([]string, 0, len(tg.Volumes))
	for n, v := range tg.Volumes {
		if v != nil && v.Type == structs.VolumeTypeHost {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := make([]*structs.VolumeRequest, len(names))
	for i, n := range names {
		out[i] = tg.Volumes[n]
	}
	return out
}

// hasHostVolumes reports whether node n offers every host volume of reqs,
// as Nomad's HostVolumeChecker does for static host volumes: the node has
// a volume of the source's name, and a volume the node offers read-only
// only goes to a request that is read-only. Host volumes are not part of
// a node's class (nor are they in Nomad's computed class): the check is per
// node.
func hasHostVolumes(n *structs.Node, reqs []*structs.VolumeRequest) bool {
	for _, r := range reqs {
		hv := n.HostVolumes[r.Source]
		if hv == nil || (hv.ReadOnly && !r.ReadOnly) {
			return false
		}
	}
	return true
}
