package acl

// Policy levels: the values of `policy = "..."`, Nomad's. When policies
// are merged, the most privilege wins, except deny, which always wins.
const (
	PolicyDeny  = "deny"
	PolicyRead  = "read"
	PolicyList  = "list"
	PolicyWrite = "write"
	PolicyScale = "scale"
)

// Namespace capabilities, Nomad's names. drover checks the ones its routes
// need (see httpapi's capability table); the others (CSI, host volumes,
// scaling policies, recommendations, ...) are valid in a policy and guard
// nothing drover serves.
const (
	CapDeny                     = "deny"
	CapListJobs                 = "list-jobs"
	CapParseJob                 = "parse-job"
	CapReadJob                  = "read-job"
	CapSubmitJob                = "submit-job"
	CapDispatchJob              = "dispatch-job"
	CapReadLogs                 = "read-logs"
	CapReadFS                   = "read-fs"
	CapAllocExec                = "alloc-exec"
	CapAllocNodeExec            = "alloc-node-exec"
	CapAllocLifecycle           = "alloc-lifecycle"
	CapSentinelOverride         = "sentinel-override"
	CapCSIRegisterPlugin        = "csi-register-plugin"
	CapCSIWriteVolume           = "csi-write-volume"
	CapCSIReadVolume            = "csi-read-volume"
	CapCSIListVolume            = "csi-list-volume"
	CapCSIMountVolume           = "csi-mount-volume"
	CapHostVolumeCreate         = "host-volume-create"
	CapHostVolumeRegister       = "host-volume-register"
	CapHostVolumeRead           = "host-volume-read"
	CapHostVolumeWrite          = "host-volume-write"
	CapHostVolumeDelete         = "host-volume-delete"
	CapListScalingPolicies      = "list-scaling-policies"
	CapReadScalingPolicy        = "read-scaling-policy"
	CapReadJobScaling           = "read-job-scaling"
	CapScaleJob                 = "scale-job"
	CapSubmitRecommendation     = "submit-recommendation"
	CapRegisterJob              = "register-job"
	CapRevertJob                = "revert-job"
	CapDeregisterJob            = "deregister-job"
	CapPurgeJob                 = "purge-job"
	CapEvaluateJob              = "evaluate-job"
	CapPlanJob                  = "plan-job"
	CapTagJobVersion            = "tag-job-version"
	CapStableJob                = "stable-job"
	CapFailDeployment           = "fail-deployment"
	CapPauseDeployment          = "pause-deployment"
	CapPromoteDeployment        = "promote-deployment"
	CapUnblockDeployment        = "unblock-deployment"
	CapCancelDeployment         = "cancel-deployment"
	CapSetAllocHealthDeployment = "set-alloc-health-deployment"
	CapGCAllocation             = "gc-allocation"
	CapPauseAllocation          = "pause-allocation"
	CapForcePeriodicJob         = "force-periodic-job"
	CapDeleteServiceReg         = "delete-service-registration"
)

// namespaceCapabilities are the capabilities a namespace block may list.
var namespaceCapabilities = setOf(CapDeny, CapListJobs, CapParseJob, CapReadJob, CapSubmitJob, CapDispatchJob,
	CapReadLogs, CapReadFS, CapAllocExec, CapAllocNodeExec, CapAllocLifecycle, CapSentinelOverride,
	CapCSIRegisterPlugin, CapCSIWriteVolume, CapCSIReadVolume, CapCSIListVolume, CapCSIMountVolume,
	CapHostVolumeCreate, CapHostVolumeRegister, CapHostVolumeRead, CapHostVolumeWrite, CapHostVolumeDelete,
	CapListScalingPolicies, CapReadScalingPolicy, CapReadJobScaling, CapScaleJob, CapSubmitRecommendation,
	CapRegisterJob, CapRevertJob, CapDeregisterJob, CapPurgeJob, CapEvaluateJob, CapPlanJob, CapTagJobVersion,
	CapStableJob, CapFailDeployment, CapPauseDeployment, CapPromoteDeployment, CapUnblockDeployment,
	CapCancelDeployment, CapSetAllocHealthDeployment, CapGCAllocation, CapPauseAllocation, CapForcePeriodicJob,
	CapDeleteServiceReg)

// namespaceRead is what `policy = "read"` grants in a namespace, Nomad's
// set.
var namespaceRead = []string{CapListJobs, CapParseJob, CapReadJob, CapCSIListVolume, CapCSIReadVolume,
	CapReadJobScaling, CapListScalingPolicies, CapReadScalingPolicy, CapHostVolumeRead}

// namespaceWrite is what `policy = "write"` grants: read plus these.
var namespaceWrite = append(append([]string{}, namespaceRead...), CapScaleJob, CapSubmitJob, CapDispatchJob,
	CapReadLogs, CapReadFS, CapAllocExec, CapAllocLifecycle, CapCSIMountVolume, CapCSIWriteVolume,
	CapSubmitRecommendation, CapHostVolumeCreate)

// namespaceScale is what `policy = "scale"` grants.
var namespaceScale = []string{CapListScalingPolicies, CapReadScalingPolicy, CapReadJobScaling, CapScaleJob,
	CapReadJob, CapSubmitRecommendation}

// expandNamespacePolicy returns the capabilities a namespace policy level
// grants.
func expandNamespacePolicy(level string) []string {
	switch level {
	case PolicyDeny:
		return []string{CapDeny}
	case PolicyRead:
		return namespaceRead
	case PolicyWrite:
		return namespaceWrite
	case PolicyScale:
		return namespaceScale
	}
	return nil
}

// impliedNamespaceCapabilities are capabilities that grant others, as
// Nomad expands the host volume ones.
var impliedNamespaceCapabilities = map[string][]string{
	CapHostVolumeWrite:    {CapHostVolumeRegister, CapHostVolumeCreate, CapHostVolumeDelete, CapHostVolumeRead},
	CapHostVolumeRegister: {CapHostVolumeCreate, CapHostVolumeRead},
	CapHostVolumeCreate:   {CapHostVolumeRead},
}

// Operator capabilities, Nomad's.
const (
	OperatorCapDeny          = "deny"
	OperatorCapSnapshotSave  = "snapshot-save"
	OperatorCapLicenseRead   = "license-read"
	OperatorCapKeyringRotate = "keyring-rotate"
	OperatorCapKeyringRead   = "keyring-read"
	OperatorCapKeyringDelete = "keyring-delete"
)

var operatorCapabilities = setOf(OperatorCapDeny, OperatorCapSnapshotSave, OperatorCapLicenseRead,
	OperatorCapKeyringRotate, OperatorCapKeyringRead, OperatorCapKeyringDelete)

func expandOperatorPolicy(level string) []string {
	switch level {
	case PolicyDeny:
		return []string{OperatorCapDeny}
	case PolicyRead:
		return []string{OperatorCapLicenseRead, OperatorCapKeyringRead}
	case PolicyWrite:
		return []string{OperatorCapSnapshotSave, OperatorCapLicenseRead, OperatorCapKeyringRotate,
			OperatorCapKeyringRead, OperatorCapKeyringDelete}
	}
	return nil
}

// Node pool and host volume capabilities (accepted in policies; drover
// serves no route they guard).
var (
	nodePoolCapabilities   = setOf("delete", "deny", "read", "write")
	hostVolumeCapabilities = setOf("deny", "mount-readonly", "mount-readwrite")
)

// capSet is a set of capability names.
type capSet map[string]struct{}

func setOf(caps ...string) capSet {
	s := make(capSet, len(caps))
	for _, c := range caps {
		s[c] = struct{}{}
	}
	return s
}

func (s capSet) has(c string) bool { _, ok := s[c]; return ok }

// validLevel reports whether level is one of the levels agent, node,
// namespace and operator blocks take.
func validLevel(level string) bool {
	switch level {
	case PolicyDeny, PolicyRead, PolicyWrite, PolicyScale:
		return true
	}
	return false
}

// maxPrivilege merges two levels: deny wins, then write, read, list.
func maxPrivilege(a, b string) string {
	for _, l := range []string{PolicyDeny, PolicyWrite, PolicyRead, PolicyList} {
		if a == l || b == l {
			return l
		}
	}
	return ""
}
