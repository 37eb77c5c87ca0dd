package structs

// Volume types, as Nomad's. drover supports host volumes; CSI volumes are
// refused at submission.
const (
	VolumeTypeHost = "host"
	VolumeTypeCSI  = "csi"
)

// VolumeRequest is a group's volume block: a volume the group's tasks may
// mount (VolumeMount). Shape and JSON names are Nomad's
// structs.VolumeRequest for the fields drover supports.
type VolumeRequest struct {
	// Name is the block's label, what a task's volume_mount names.
	Name string
	// Type is VolumeTypeHost.
	Type string
	// Source is the name of the client's host volume.
	Source string
	// ReadOnly mounts the volume read-only in every task.
	ReadOnly bool
}

// VolumeMount is a task's volume_mount block: where one of the group's
// volumes appears in the task. Shape and JSON names are Nomad's.
type VolumeMount struct {
	// Volume names the group's volume block.
	Volume string
	// Destination is the path in the task (inside its task dir for
	// drivers without filesystem isolation).
	Destination string
	ReadOnly    bool
	// PropagationMode is "private" (the only mode drover supports).
	PropagationMode string `json:",omitempty"`
}

// ClientHostVolumeConfig is one host volume a client offers (the agent's
// -host-volume flag), as Nomad's: a name jobs ask for, the path on the
// host, and whether it may only be mounted read-only.
type ClientHostVolumeConfig struct {
	Name     string
	Path     string
	ReadOnly bool
}
