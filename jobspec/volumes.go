package jobspec

import (
	"sort"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-sched/drover/structs"
)

// checkVolumesInput applies Nomad's rules on a group's volume blocks
// (VolumeRequest.Validate) for host volumes, and refuses what drover does
// not support: CSI volumes, and the settings of dynamic host volumes.
func checkVolumesInput(vols map[string]*api.VolumeRequest, gp string, errs *errorList) {
	for _, name := range volumeNames(vols) {
		v := vols[name]
		p := join(join(gp, "Volumes"), name)
		if v == nil {
			errs.add(p, "must not be null")
			continue
		}
		switch v.Type {
		case structs.VolumeTypeHost:
		case structs.VolumeTypeCSI:
			errs.add(join(p, "Type"), "csi volume block is not supported by drover (only host volumes)")
			continue
		default:
			errs.add(join(p, "Type"), "volume has unrecognized type %q (drover supports %q)", v.Type, structs.VolumeTypeHost)
			continue
		}
		if v.Source == "" {
			errs.add(join(p, "Source"), "volume has an empty source (the name of a client's host volume)")
		}
		if v.MountOptions != nil {
			errs.add(join(p, "MountOptions"), "host volumes cannot have mount options")
		}
		for field, set := range map[string]bool{"PerAlloc": v.PerAlloc, "Sticky": v.Sticky, "AccessMode": v.AccessMode != "", "AttachmentMode": v.AttachmentMode != ""} {
			if set {
				errs.add(join(p, field), "is not supported by drover yet (static host volumes only)")
			}
		}
	}
}

func convertVolumes(vols map[string]*api.VolumeRequest) map[string]*structs.VolumeRequest {
	if len(vols) == 0 {
		return nil
	}
	out := make(map[string]*structs.VolumeRequest, len(vols))
	for name, v := range vols {
		out[name] = &structs.VolumeRequest{Name: name, Type: v.Type, Source: v.Source, ReadOnly: v.ReadOnly}
	}
	return out
}

func convertVolumeMounts(vms []*api.VolumeMount) []*structs.VolumeMount {
	if len(vms) == 0 {
		return nil
	}
	out := make([]*structs.VolumeMount, 0, len(vms))
	for _, vm := range vms {
		out = append(out, &structs.VolumeMount{Volume: deref(vm.Volume), Destination: deref(vm.Destination),
			ReadOnly: deref(vm.ReadOnly), PropagationMode: deref(vm.PropagationMode)})
	}
	return out
}

// checkVolumeMountsInput refuses volume_mount settings drover does not
// support, on the job as written.
func checkVolumeMountsInput(vms []*api.VolumeMount, tp string, errs *errorList) {
	for i, vm := range vms {
		p := indexed(join(tp, "VolumeMounts"), i)
		if vm == nil {
			errs.add(p, "must not be null")
			continue
		}
		if vm.PropagationMode != nil && *vm.PropagationMode != "" && *vm.PropagationMode != api.VolumeMountPropagationPrivate {
			errs.add(join(p, "PropagationMode"), "propagation_mode %q is not supported by drover yet (only %q)", *vm.PropagationMode, api.VolumeMountPropagationPrivate)
		}
		if vm.SELinuxLabel != nil && *vm.SELinuxLabel != "" {
			errs.add(join(p, "SELinuxLabel"), "selinux_label is not supported by drover")
		}
	}
}

// validateVolumeMounts checks a task's volume_mount blocks against its
// group's volumes: each names one, with a destination.
func validateVolumeMounts(tg *structs.TaskGroup, t *structs.Task, tp string, errs *errorList) {
	for i, vm := range t.VolumeMounts {
		p := indexed(join(tp, "VolumeMounts"), i)
		if vm.Volume == "" {
			errs.add(join(p, "Volume"), "must be set (the name of one of the group's volume blocks)")
		} else if tg.Volumes[vm.Volume] == nil {
			errs.add(join(p, "Volume"), "names volume %q, which the group does not define (volumes: %v)", vm.Volume, volumeNames(tg.Volumes))
		}
		if vm.Destination == "" {
			errs.add(join(p, "Destination"), "must be set (where the volume appears in the task)")
		}
	}
}

func volumeNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
